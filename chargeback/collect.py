"""Reading a cluster's portal pods over the Kubernetes API. Deliberately small: the shared Kubernetes client
module (provisioning/kube/client.py) replaces `api_client_for` when it lands."""
from __future__ import annotations

import json

from kubernetes import client as k8s

MANAGED_SELECTOR = "app.kubernetes.io/managed-by=gpu-portal"
TIMEOUT_SECONDS = 60


def api_client_for(cluster) -> k8s.ApiClient:
    """An ApiClient for `cluster.api_server` with its ClusterCredential (bearer token, CA, TLS choice)."""
    configuration = k8s.Configuration()
    configuration.host = cluster.api_server
    credential = getattr(cluster, "credential", None)
    if credential is not None:
        if credential.token:
            configuration.api_key = {"authorization": credential.token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        if credential.ca_cert:
            configuration.ca_cert_data = credential.ca_cert  # PEM in memory: no temporary file
        configuration.verify_ssl = not credential.insecure_skip_tls_verify
    return k8s.ApiClient(configuration)


def pods_for_cluster(cluster) -> list[dict]:
    """Every pod the portal manages on the cluster, as the API's JSON (dicts), in one list call."""
    with api_client_for(cluster) as api_client:
        response = k8s.CoreV1Api(api_client).list_pod_for_all_namespaces(
            label_selector=MANAGED_SELECTOR, _preload_content=False, _request_timeout=TIMEOUT_SECONDS
        )
        return json.loads(response.data)["items"]
