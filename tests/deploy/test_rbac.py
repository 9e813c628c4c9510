"""The portal's RBAC: URL -> authorization attributes (as the API server computes them), rule matching, the
least-privilege check against recorded calls, and the generated manifests being up to date and valid."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kubernetes
import kubernetes_validate
import pytest
import yaml

from deploy import rbac
from deploy.rbac import Call, Rule, assert_least_privilege, check, request_attributes


@pytest.mark.parametrize("method, url, expected", [
    # core, cluster-scoped
    ("GET", "/api/v1/nodes", ("list", "", "nodes", "", "", "")),
    ("GET", "/api/v1/nodes?watch=true&resourceVersion=10", ("watch", "", "nodes", "", "", "")),
    ("GET", "/api/v1/nodes?watch=1", ("watch", "", "nodes", "", "", "")),
    ("GET", "/api/v1/nodes?watch=false", ("list", "", "nodes", "", "", "")),
    ("GET", "/api/v1/watch/nodes", ("watch", "", "nodes", "", "", "")),
    ("GET", "/api/v1/nodes/gpu-1", ("get", "", "nodes", "", "gpu-1", "")),
    ("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dgpu-1", ("list", "", "nodes", "", "gpu-1", "")),
    ("PATCH", "/api/v1/nodes/gpu-1", ("patch", "", "nodes", "", "gpu-1", "")),
    ("PATCH", "/api/v1/nodes/gpu-1/status", ("patch", "", "nodes", "status", "gpu-1", "")),
    # namespaces are resources whose name sits where a namespace would
    ("GET", "/api/v1/namespaces", ("list", "", "namespaces", "", "", "")),
    ("PATCH", "/api/v1/namespaces/team-a", ("patch", "", "namespaces", "", "team-a", "team-a")),
    ("PUT", "/api/v1/namespaces/team-a/finalize", ("update", "", "namespaces", "finalize", "team-a", "team-a")),
    ("DELETE", "/api/v1/namespaces/team-a", ("delete", "", "namespaces", "", "team-a", "team-a")),
    # namespaced
    ("GET", "/api/v1/pods?labelSelector=gpu-portal.io%2Frequest&watch=True", ("watch", "", "pods", "", "", "")),
    ("GET", "/api/v1/namespaces/team-a/pods", ("list", "", "pods", "", "", "team-a")),
    ("GET", "/api/v1/namespaces/team-a/pods/p-0/log", ("get", "", "pods", "log", "p-0", "team-a")),
    ("POST", "/api/v1/namespaces/team-a/services", ("create", "", "services", "", "", "team-a")),
    ("DELETE", "/apis/apps/v1/namespaces/team-a/deployments?labelSelector=a%3Db",
     ("deletecollection", "apps", "deployments", "", "", "team-a")),
    ("DELETE", "/apis/apps/v1/namespaces/team-a/deployments/web", ("delete", "apps", "deployments", "", "web", "team-a")),
    ("PATCH", "/apis/scheduling.k8s.io/v1alpha2/namespaces/t/podgroups/g",
     ("patch", "scheduling.k8s.io", "podgroups", "", "g", "t")),
    ("GET", "/apis/resource.k8s.io/v1/resourceslices", ("list", "resource.k8s.io", "resourceslices", "", "", "")),
    ("GET", "/apis/apps/v1/watch/namespaces/t/deployments/web",
     ("watch", "apps", "deployments", "", "web", "t")),
])
def test_request_attributes_of_resource_urls(method, url, expected):
    attrs = request_attributes(method, url)
    assert attrs.is_resource
    assert (attrs.verb, attrs.api_group, attrs.resource, attrs.subresource, attrs.name, attrs.namespace) == expected


@pytest.mark.parametrize("method, url", [
    ("GET", "/version"), ("GET", "/api"), ("GET", "/api/v1"), ("GET", "/apis"),
    ("GET", "/apis/scheduling.volcano.sh"), ("GET", "/apis/scheduling.volcano.sh/v1beta1"),
    ("GET", "/healthz"), ("GET", "/openapi/v3"), ("POST", "/version"),
])
def test_discovery_and_other_paths_are_non_resource_requests(method, url):
    attrs = request_attributes(method, url)
    assert not attrs.is_resource and attrs.verb == method.lower() and attrs.path == url


def test_server_side_apply_also_needs_create_but_a_merge_patch_does_not():
    apply = Call("PATCH", "/api/v1/namespaces/team-a?fieldManager=gpu-portal&force=true",
                 "application/apply-patch+yaml")
    merge = Call("PATCH", "/api/v1/nodes/gpu-1", "application/merge-patch+json")
    assert [a.verb for a in apply.required()] == ["patch", "create"]
    assert [a.verb for a in merge.required()] == ["patch"]


def test_rule_matching_follows_rbac_semantics():
    rules = [Rule("x", ("get",), ("",), ("pods/log", "nodes")),
             Rule("y", ("*",), ("apps",), ("*",)),
             Rule("z", ("get",), non_resource_urls=("/apis/*",))]
    allowed = check([("GET", "/api/v1/namespaces/a/pods/p/log"), ("GET", "/api/v1/nodes/n"),
                     ("DELETE", "/apis/apps/v1/namespaces/a/deployments"), ("GET", "/apis/apps/v1")], rules)
    assert not allowed.denied
    denied = check([("GET", "/api/v1/namespaces/a/pods/p"), ("LIST", "/api/v1/nodes"), ("GET", "/apis"),
                    ("GET", "/apis/batch/v1/jobs")], rules)
    assert len(denied.denied) == 4


# --- the portal's calls -----------------------------------------------------------------------------------------


class RecordingApiServer:
    """Answers every request with an empty JSON object and records (method, path?query, content type)."""

    def __init__(self):
        self.calls: list[Call] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                recorder.calls.append(Call(self.command, self.path, self.headers.get("Content-Type")))
                body = json.dumps({}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        configuration = kubernetes.client.Configuration()
        configuration.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.client = kubernetes.client.ApiClient(configuration)
        return self

    def __exit__(self, *exc):
        self.client.close()
        self.server.shutdown()
        self.server.server_close()


NAMESPACED = [  # (group, version, plural) rendered per request and torn down on cancel
    ("", "v1", "services"), ("apps", "v1", "deployments"), ("batch", "v1", "jobs"),
    ("policy", "v1", "poddisruptionbudgets"), ("resource.k8s.io", "v1", "resourceclaimtemplates"),
    ("scheduling.k8s.io", "v1alpha1", "workloads"),
    ("scheduling.k8s.io", "v1alpha2", "podgroups"), ("scheduling.volcano.sh", "v1beta1", "podgroups"),
    ("scheduling.run.ai", "v2alpha2", "podgroups"), ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
]


def base(group, version):
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


def portal_calls(api: kubernetes.client.ApiClient) -> None:
    """A representative set of the calls the portal makes, sent with the official client to a recording server:
    it tests the recording and the check itself. The real code's calls, recorded by the fake API server while
    every workflow runs, are checked in tests/deploy/test_rbac_real_calls.py."""
    raw = {"_preload_content": False}
    core = kubernetes.client.CoreV1Api(api)
    # inventory and live operations
    core.list_node(**raw)
    core.read_node("gpu-1", **raw)
    core.patch_node("gpu-1", {"metadata": {"labels": {"nvidia.com/mig.config": "all-1g.18gb"}}}, **raw)
    core.patch_node("gpu-1", {"spec": {"unschedulable": True}}, **raw)
    core.list_pod_for_all_namespaces(label_selector="gpu-portal.io/request", watch=True, **raw)
    core.list_pod_for_all_namespaces(label_selector="gpu-portal.io/request", **raw)
    kubernetes.client.ResourceV1Api(api).list_resource_slice(**raw)
    kubernetes.client.ResourceV1Api(api).list_resource_claim_for_all_namespaces(**raw)
    kubernetes.client.ResourceV1Api(api).list_device_class(**raw)
    def request(method, path, query=None, body=None, content_type=None):
        # What the dynamic client does underneath: serialize, then send through the same REST client.
        headers = {"Content-Type": content_type} if content_type else {}
        serialized = api.param_serialize(method, path, query_params=query or [], header_params=headers, body=body)
        api.call_api(*serialized).read()

    # Metering's read of the taint rules marking devices unhealthy (resource.k8s.io/v1 from Kubernetes 1.37).
    request("GET", "/apis/resource.k8s.io/v1/devicetaintrules")
    # Metering's read of the ReplicaSets between the portal's Deployments and their pods (owner chains).
    request("GET", "/apis/apps/v1/replicasets", [("labelSelector", "app.kubernetes.io/managed-by=gpu-portal")])
    # The dynamic client's discovery, as the fake records it: the version, then the groups and their versions.
    for path in ("/version", "/apis", "/api/v1", "/apis/scheduling.volcano.sh/v1beta1"):
        request("GET", path)

    # rendering: server-side apply of the team's objects, then the request's
    def apply(path, body):
        request("PATCH", path, [("fieldManager", "gpu-portal"), ("force", "true")], body,
                "application/apply-patch+yaml")

    apply("/api/v1/namespaces/team-a", {"kind": "Namespace"})
    apply("/api/v1/namespaces/team-a/resourcequotas/gpu", {"kind": "ResourceQuota"})
    apply("/apis/networking.k8s.io/v1/namespaces/team-a/networkpolicies/default-deny-ingress",
          {"kind": "NetworkPolicy"})
    apply("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/team-a", {"kind": "LocalQueue"})
    apply("/apis/scheduling.run.ai/v2/queues/team-a", {"kind": "Queue"})
    apply("/apis/scheduling.volcano.sh/v1beta1/queues/team-a", {"kind": "Queue"})
    admission = "/apis/admissionregistration.k8s.io/v1"  # clusters without Kueue: the team's admission policy
    apply(f"{admission}/validatingadmissionpolicies/gpu-portal-pods-team-a", {"kind": "ValidatingAdmissionPolicy"})
    apply(f"{admission}/validatingadmissionpolicybindings/gpu-portal-pods-team-a",
          {"kind": "ValidatingAdmissionPolicyBinding"})
    apply("/apis/scheduling.k8s.io/v1/priorityclasses/gpu-portal-training", {"kind": "PriorityClass"})
    apply("/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/gpu-portal-training", {"kind": "WorkloadPriorityClass"})
    for group, version, plural in NAMESPACED:
        apply(f"{base(group, version)}/namespaces/team-a/{plural}/train", {"kind": plural})
    request("GET", "/apis/batch/v1/namespaces/team-a/jobs/train")  # the Job's uid, for its gang objects' owner
    request("GET", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/train")
    # the Kueue admission check: its AdmissionCheck and the ClusterQueue's strategy, then Workloads' status
    kueue_api = "/apis/kueue.x-k8s.io/v1beta2"
    apply(f"{kueue_api}/admissionchecks/gpu-portal-approval", {"kind": "AdmissionCheck"})
    request("GET", f"{kueue_api}/clusterqueues/gpu-portal")  # read first: a missing one is never created
    apply(f"{kueue_api}/clusterqueues/gpu-portal", {"kind": "ClusterQueue"})
    request("GET", f"{kueue_api}/admissionchecks/gpu-portal-approval")
    request("PATCH", f"{kueue_api}/admissionchecks/gpu-portal-approval/status", body={"status": {}},
            content_type="application/merge-patch+json")
    request("GET", f"{kueue_api}/workloads")
    # why queued requests wait: the ClusterQueues' quota and each one's pending workloads
    request("GET", f"{kueue_api}/clusterqueues")
    request("GET", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/gpu-portal/pendingworkloads")
    request("GET", f"{kueue_api}/workloads", [("watch", "true")])
    request("PATCH", f"{kueue_api}/namespaces/team-a/workloads/job-train-1a2b3/status", body={"status": {}},
            content_type="application/merge-patch+json")
    # cancel: list each kind by the request's labels, then delete each object
    for group, version, plural in NAMESPACED:
        request("GET", f"{base(group, version)}/namespaces/team-a/{plural}",
                [("labelSelector", "gpu-portal.io/request=42")])
        request("DELETE", f"{base(group, version)}/namespaces/team-a/{plural}/train")


@pytest.fixture(scope="module")
def recorded_calls():
    with RecordingApiServer() as server:
        portal_calls(server.client)
        return server.calls


def test_the_calls_are_recorded_as_the_api_server_sees_them(recorded_calls):
    by_verb = {}
    for call in recorded_calls:
        for attrs in call.required():
            by_verb.setdefault(attrs.verb, set()).add(attrs.resource or attrs.path)
    assert by_verb["watch"] == {"pods", "workloads"}
    assert by_verb["delete"] >= {"deployments", "jobs", "podgroups"}
    assert "namespaces" in by_verb["create"]  # implied by server-side apply
    assert {"/version", "/apis", "/apis/scheduling.volcano.sh/v1beta1"} <= by_verb["get"]


def test_rbac_allows_every_call_the_portal_makes_and_nothing_more(recorded_calls):
    assert_least_privilege(recorded_calls)


def test_a_call_outside_the_rules_is_reported(recorded_calls):
    result = check([*recorded_calls, ("GET", "/api/v1/namespaces/team-a/secrets"), ("GET", "/version/x")])
    assert [(a.verb, a.resource or a.path) for _, a in result.denied] == [("list", "secrets"), ("get", "/version/x")]
    assert "denied: GET /api/v1/namespaces/team-a/secrets -> list core/secrets" in result.explain()


def test_a_permission_no_code_uses_is_reported(recorded_calls):
    without_cordon = [c for c in recorded_calls if not (c.method == "PATCH" and "/nodes/" in c.url)]
    result = check(without_cordon)
    assert result.unused == [("", "nodes", "patch")] and not result.denied
    with pytest.raises(AssertionError, match="granted but unused: core nodes patch"):
        assert_least_privilege(without_cordon)


def test_no_rule_grants_secrets_wildcards_or_escalation():
    for rule in rbac.RULES:
        assert "*" not in rule.verbs + rule.api_groups + rule.resources
        assert not {"secrets", "roles", "rolebindings", "clusterroles", "clusterrolebindings",
                    "serviceaccounts"} & set(rule.resources)
        assert not {"escalate", "bind", "impersonate", "deletecollection"} & set(rule.verbs)
        # Deleting is for the objects of one request only: never namespaces, quotas, queues or nodes.
        if "delete" in rule.verbs:
            assert not {"namespaces", "resourcequotas", "networkpolicies", "queues", "localqueues", "nodes",
                        "pods"} & set(rule.resources)


# --- generated manifests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", sorted(rbac.GENERATED, key=str))
def test_generated_rbac_manifests_are_up_to_date(target):
    assert target.read_text() == rbac.GENERATED[target](), "run: python -m deploy.rbac --write"


def test_target_cluster_rbac_is_valid_kubernetes():
    documents = [d for d in yaml.safe_load_all(rbac.TARGET_CLUSTER_RBAC.read_text()) if d]
    assert [d["kind"] for d in documents] == ["Namespace", "ServiceAccount", "Secret", "ClusterRoleBinding",
                                              "ClusterRole"]
    for document in documents:
        kubernetes_validate.validate(document, "1.35.0", strict=True)
    assert documents[-1]["rules"] == [rule.as_k8s() for rule in rbac.RULES]


def test_docs_rbac_table_is_the_generated_one():
    page = (rbac.ROOT / "docs" / "rbac.md").read_text()
    start = page.index("<!-- rbac:start -->") + len("<!-- rbac:start -->")
    end = page.index("<!-- rbac:end -->")
    assert page[start:end].strip() == rbac.rules_table().strip(), "run: python -m deploy.rbac --table"
