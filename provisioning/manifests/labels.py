"""Labels, annotations and the label selector that tie every rendered object to its request.

Metering reads pods, so pod templates carry the same labels as their owners plus annotations with the
request's GPU share. Appliers find (and delete) everything of a request with `selector_for_request()`.
"""

from __future__ import annotations

from .names import label_value
from .spec import ClusterProfile, RequestSpec

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-portal"
NAME_KEY = "app.kubernetes.io/name"


def domain_key(label_domain: str, name: str) -> str:
    return f"{label_domain}/{name}"


def selector_for_request(request_id: int, label_domain: str) -> dict[str, str]:
    """matchLabels that select every object (and pod) rendered for one request.

    Turn it into a `?labelSelector=` string with `selector_string()`.
    """
    return {MANAGED_BY_KEY: MANAGED_BY, domain_key(label_domain, "request-id"): str(int(request_id))}


def selector_string(selector: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in selector.items())


def request_labels(request: RequestSpec, cluster: ClusterProfile) -> dict[str, str]:
    """Labels of every object of a request, pods included."""
    d = cluster.label_domain
    return {
        MANAGED_BY_KEY: MANAGED_BY,
        NAME_KEY: label_value(request.name),
        f"{d}/request-id": str(int(request.request_id)),
        f"{d}/team": label_value(request.team),
        f"{d}/strategy": label_value(request.strategy),
        f"{d}/workload-class": label_value(request.workload_class),
        f"{d}/cluster": label_value(cluster.name),
    }


def team_labels(team_slug: str, cluster: ClusterProfile, cost_center: str = "") -> dict[str, str]:
    """Labels of a team's objects (namespace, quota, queue); no request id: they outlive requests."""
    d = cluster.label_domain
    labels = {
        MANAGED_BY_KEY: MANAGED_BY,
        NAME_KEY: "gpu-team",
        f"{d}/team": label_value(team_slug),
        f"{d}/cluster": label_value(cluster.name),
    }
    if cost_center:
        labels[f"{d}/cost-center"] = label_value(cost_center)
    return labels


def pod_annotations(request: RequestSpec, cluster: ClusterProfile) -> dict[str, str]:
    """What metering needs to price one pod: its GPU share (exact decimal string, per replica) and devices."""
    d = cluster.label_domain
    annotations = {
        f"{d}/gpu-equivalents": request.gpu_equivalents_per_replica,
        f"{d}/gpu-model": request.gpu_model,
        f"{d}/devices": str(int(request.gpus_per_replica)),
    }
    if request.strategy == "mig" and request.mig_profile:
        annotations[f"{d}/mig-profile"] = request.mig_profile
    return annotations


def owner_annotation_key(label_domain: str) -> str:
    """Annotation naming the object that should own this one ("batch/v1 Job <name>", same namespace). The owner's
    uid exists only once the owner is applied, so the Kubernetes applier turns it into `ownerReferences`
    (provisioning/kube/apply.py); deleting the owner then lets the garbage collector remove this object."""
    return domain_key(label_domain, "owner")


def mark_owned(obj: dict, owner: dict, label_domain: str) -> dict:
    """`obj` with the owner annotation pointing at `owner` (a rendered object in the same namespace)."""
    meta = obj["metadata"]
    meta.setdefault("annotations", {})[owner_annotation_key(label_domain)] = (
        f"{owner['apiVersion']} {owner['kind']} {owner['metadata']['name']}"
    )
    return obj
