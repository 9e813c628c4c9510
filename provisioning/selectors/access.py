"""How an engineer reaches a running request's workload: the namespace, the Services with their ports, and kubectl
lines, read from the objects rendered for it (the ones applied)."""
from __future__ import annotations

from django.conf import settings

from .rendering import request_manifests

WORKLOAD_KINDS = ("Deployment", "Job", "JobSet", "StatefulSet")


def request_access(*, gpu_request) -> dict | None:
    """{"cluster", "namespace", "services": [{"name", "ports", "headless"}], "workload", "kubectl": [...]}."""
    objects = request_manifests(gpu_request=gpu_request)
    workload = next((o for o in objects if o["kind"] in WORKLOAD_KINDS), None)
    if workload is None:
        return None
    namespace = workload["metadata"]["namespace"]
    selector = f"{settings.PORTAL_LABEL_DOMAIN}/request-id={gpu_request.pk}"
    services = [{"name": o["metadata"]["name"], "headless": o["spec"].get("clusterIP") == "None",
                 "ports": [p["port"] for p in o["spec"].get("ports") or ()]}
                for o in objects if o["kind"] == "Service"]
    kind = workload["kind"].lower()
    lines = [f"kubectl -n {namespace} get pods -l {selector} -o wide",
             f"kubectl -n {namespace} logs -l {selector} --tail=100 --prefix"]
    for service in services:
        if not service["headless"] and service["ports"]:
            port = service["ports"][0]
            lines.append(f"kubectl -n {namespace} port-forward service/{service['name']} 8080:{port}")
    if kind in ("deployment", "job", "statefulset"):
        lines.append(f"kubectl -n {namespace} exec -it {kind}/{workload['metadata']['name']} -- /bin/sh")
    return {"cluster": gpu_request.decision.cluster, "namespace": namespace, "services": services,
            "workload": f"{workload['kind']} {workload['metadata']['name']}", "kubectl": lines}
