"""Labels, annotations and the label selector that tie every rendered object to its request.

Metering reads pods, so pod templates carry the same labels as their owners plus annotations with the
request's GPU share. Appliers find (and delete) everything of a request with `selector_for_request()`. The keys
and what a reader makes of them are the cluster-object contract (`provisioning/contract.py`).
"""

from __future__ import annotations

from gpu.vocabulary import MIG

from ..contract import (CLUSTER, COST_CENTER, DEVICES, GPU_EQUIVALENTS, GPU_MODEL, MANAGED_BY, MANAGED_BY_KEY,
                        MIG_PROFILE, NAME_KEY, OWNER, REQUEST_ID, STRATEGY, TEAM, WORKLOAD_CLASS, domain_key,
                        selector_for_request, selector_string)
from .names import label_value
from .spec import ClusterProfile, RequestSpec

__all__ = ["MANAGED_BY", "MANAGED_BY_KEY", "NAME_KEY", "domain_key", "mark_owned", "owner_annotation_key",
           "platform_labels", "pod_annotations", "request_labels", "selector_for_request", "selector_string", "team_labels"]


def request_labels(request: RequestSpec, cluster: ClusterProfile) -> dict[str, str]:
    """Labels of every object of a request, pods included."""
    d = cluster.label_domain
    return {
        MANAGED_BY_KEY: MANAGED_BY,
        NAME_KEY: label_value(request.name),
        domain_key(d, REQUEST_ID): str(int(request.request_id)),
        domain_key(d, TEAM): label_value(request.team),
        domain_key(d, STRATEGY): label_value(request.strategy),
        domain_key(d, WORKLOAD_CLASS): label_value(request.workload_class),
        domain_key(d, CLUSTER): label_value(cluster.name),
    }


def team_labels(team_slug: str, cluster: ClusterProfile, cost_center: str = "") -> dict[str, str]:
    """Labels of a team's objects (namespace, quota, queue); no request id: they outlive requests."""
    d = cluster.label_domain
    labels = {
        MANAGED_BY_KEY: MANAGED_BY,
        NAME_KEY: "gpu-team",
        domain_key(d, TEAM): label_value(team_slug),
        domain_key(d, CLUSTER): label_value(cluster.name),
    }
    if cost_center:
        labels[domain_key(d, COST_CENTER)] = label_value(cost_center)
    return labels


def platform_labels(cluster: ClusterProfile, name: str) -> dict[str, str]:
    """Labels of cluster-scoped objects the portal renders for every team (PriorityClasses): no team, no request."""
    return {MANAGED_BY_KEY: MANAGED_BY, NAME_KEY: name, domain_key(cluster.label_domain, CLUSTER): label_value(cluster.name)}


def pod_annotations(request: RequestSpec, cluster: ClusterProfile) -> dict[str, str]:
    """What metering needs to price one pod: its GPU share (exact decimal string, per replica) and devices."""
    d = cluster.label_domain
    annotations = {
        domain_key(d, GPU_EQUIVALENTS): request.gpu_equivalents_per_replica,
        domain_key(d, GPU_MODEL): request.gpu_model,
        domain_key(d, DEVICES): str(int(request.gpus_per_replica)),
    }
    if request.strategy == MIG and request.mig_profile:
        annotations[domain_key(d, MIG_PROFILE)] = request.mig_profile
    return annotations


def owner_annotation_key(label_domain: str) -> str:
    """Annotation naming the object that should own this one ("batch/v1 Job <name>", same namespace). The owner's
    uid exists only once the owner is applied, so the Kubernetes applier turns it into `ownerReferences`
    (provisioning/kube/apply.py); deleting the owner then lets the garbage collector remove this object."""
    return domain_key(label_domain, OWNER)


def mark_owned(obj: dict, owner: dict, label_domain: str) -> dict:
    """`obj` with the owner annotation pointing at `owner` (a rendered object in the same namespace)."""
    meta = obj["metadata"]
    meta.setdefault("annotations", {})[owner_annotation_key(label_domain)] = (
        f"{owner['apiVersion']} {owner['kind']} {owner['metadata']['name']}"
    )
    return obj
