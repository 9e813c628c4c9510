"""A fake Kubernetes API server: kmock's KubernetesEmulator with the gaps of kmock 0.8 filled, served over real
HTTPS on 127.0.0.1 (a certificate of the run's test CA, kubesim/tls.py; plain HTTP on request) from an event loop
in a background thread, so the synchronous `kubernetes` client, the portal, and the real `kubectl` talk to it
exactly as to a cluster, certificate verification included.

`FakeKubeAPI` (fake.py) is what tests hold: it starts and stops the server and offers synchronous helpers to seed
and mutate objects, inject faults and read the request log. `KubeEmulator` (emulator.py) does the HTTP side, one
concern a module:

- http.py: request paths and bodies (JSON, YAML, and the protobuf kubectl's typed clients send), Status errors;
- discovery.py: /version, legacy and aggregated discovery;
- openapi.py: OpenAPI v3 (upstream's documents for the built-in kinds, built from the CRDs for the custom ones)
  and v2;
- reads.py: GET, LIST and WATCH with label and field selectors, Table answers for kubectl;
- writes.py: create, update, merge / strategic merge / JSON patch, server-side apply with field managers, the
  status subresource, delete with preconditions and propagationPolicy, dryRun and fieldValidation;
- validation.py: what the API server refuses (400 for unknown fields under Strict, 422 with field causes);
- store.py: objects, resourceVersions, the event log, finalizers and the garbage collector;
- visibility.py: Kueue's visibility API.

What it does not do (docs/simulated-cluster.md lists it for people): authentication and RBAC (any bearer token
is accepted), admission webhooks, CEL validation rules, version conversion, pagination, defaulting beyond a few
fields, and the subresources other than `status`.
"""
from kubesim.server.emulator import DEFAULT_GIT_VERSION, KubeEmulator
from kubesim.server.fake import FakeKubeAPI, RecordedRequest
from kubesim.server.http import ApiPath, parse_api_path, status_body

__all__ = ["DEFAULT_GIT_VERSION", "ApiPath", "FakeKubeAPI", "KubeEmulator", "RecordedRequest", "parse_api_path",
           "status_body"]
