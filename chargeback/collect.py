"""Reading a cluster's portal pods over the Kubernetes API, through the shared client (provisioning.kube), and
what billing needs to know about them: the ReplicaSets and Jobs their controllers made (a pod's owner chain up to
what the portal applied, provisioning.contract.applied_request_id), the DRA claims and slices of pods that use
claims, the device taint rules and nodes of pods that failed (chargeback.allocation, chargeback.credits.health)."""
from __future__ import annotations

from django.conf import settings

from provisioning.kube.client import KubeClient, raw
from provisioning.kube.connection import cluster_connection
from provisioning.kube.errors import PermanentKubeError, kube_errors
from provisioning.kube.inventory_reads import get_node, list_resource_slices
from provisioning.kube.reads import list_pods
from provisioning.contract import GPU_MODEL, MANAGED_BY, MANAGED_BY_KEY, controller_of, pod_annotation, pod_identity

from .allocation import ClusterFacts, uses_claims

# DeviceTaintRule by Kubernetes release (kubernetes/api: resource/v1alpha3 from 1.33, v1beta2 from 1.36, v1 in 1.37):
# the newest the server serves is read.
TAINT_RULE_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3")
# What stands between a pod and what the portal applied: a Deployment's ReplicaSet, a JobSet's Job. They carry
# their template's labels, so the portal's selector finds them.
BETWEEN_KINDS = {"ReplicaSet": "apps/v1", "Job": "batch/v1"}


def pods_and_facts(cluster) -> tuple[list[dict], ClusterFacts]:
    """The portal's pods, and the facts about their devices the pass needs: nothing more is read when no pod uses
    a DRA claim and none failed."""
    selector = f"{MANAGED_BY_KEY}={MANAGED_BY}"
    with KubeClient(cluster_connection(cluster)) as kube:
        pods = list_pods(kube, label_selector=selector)
        kinds = {ref.kind for p in pods if (ref := _controller(p))} & set(BETWEEN_KINDS)
        owners = [o for kind in sorted(kinds) for o in _list(kube, BETWEEN_KINDS[kind], kind, selector)]
        dra = any(uses_claims(p) for p in pods)
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        claims = _list(kube, "resource.k8s.io/v1", "ResourceClaim", selector) if dra else []
        slices = list_resource_slices(kube) if dra else []
        rules = _taint_rules(kube) if dra and failed else []
        # The nodes of failed pods (hardware credits) and of pods that do not say their GPU model (found in the
        # cluster: priced by the node's nvidia.com/gpu.product).
        unsaid = [p for p in pods if not pod_annotation(p, GPU_MODEL, settings.PORTAL_LABEL_DOMAIN)]
        node_names = sorted({(p.get("spec") or {}).get("nodeName") for p in failed + unsaid} - {None, ""})
        nodes = [node for node in (_node(kube, name) for name in node_names) if node]
    return pods, ClusterFacts(claims=tuple(claims), slices=tuple(slices), taint_rules=tuple(rules), nodes=tuple(nodes),
                              owners=tuple(owners))


def _controller(pod: dict):
    try:
        return controller_of(pod_identity(pod))
    except (AttributeError, TypeError):  # a malformed pod: ingestion skips and reports it
        return None


def _list(kube: KubeClient, api_version: str, kind: str, selector: str | None = None) -> list[dict]:
    resource = kube.resource(api_version, kind)
    with kube_errors(f"list {kind}s"):
        listed = kube.dynamic.get(resource, label_selector=selector, serializer=raw)
    return list(listed.get("items") or [])


def _taint_rules(kube: KubeClient) -> list[dict]:
    for api_version in TAINT_RULE_VERSIONS:
        try:
            return _list(kube, api_version, "DeviceTaintRule")
        except PermanentKubeError as exc:
            if "does not serve" not in str(exc):
                raise
    return []


def _node(kube: KubeClient, name: str) -> dict | None:
    try:
        return get_node(kube, name)
    except PermanentKubeError:  # gone since the pod ran on it: no node evidence
        return None
