"""The contract between the portal and the objects it puts on clusters, in one place.

- The keys: the labels every object of a request carries and the annotations its pods carry, under the label
  domain (`settings.PORTAL_LABEL_DOMAIN`). The renderer writes them (`manifests/labels.py`), and so do kubesim's
  pods and chargeback's synthetic pods; reconciliation, metering, discovery, the admission check, the waits and
  the appliers read them.
- What an object says it belongs to: `pod_identity(obj)` reads the claim (request, team, cluster, strategy), with
  what a later check needs to test it (uid, namespace, owner references).
- What an object is bound to: `bound_request_id(identity)` is the one place that decides which request a cluster
  object's pods are counted for (status, the admission check); `attributed_request_id` is discovery's looser
  attribution of GPU holders. A claim is copyable (anyone who can write a pod can write its labels); a stricter
  binding belongs in these functions, and every reader follows.
- What a pod is billed as: `applied_request_id(identity, owners)` follows the pod's controller ownerReferences,
  by UID, up to an object the portal itself applied (its UID as the API server answered the apply), in the pod's
  own namespace. Labels play no part: a pod that copies a request's labels is not that request's pod
  (docs/chargeback.md, "Which request a pod is billed to").
- The API server's timestamps (`parse_time`).

Django-free: kubesim imports it too.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-portal"
NAME_KEY = "app.kubernetes.io/name"
DEFAULT_LABEL_DOMAIN = "gpu-portal.io"

# Labels under the label domain: every object of a request (pods included) carries the first five; a team's objects
# carry team, cluster and cost-center; declared GPU nodes carry pool.
REQUEST_ID, TEAM, STRATEGY, WORKLOAD_CLASS, CLUSTER = "request-id", "team", "strategy", "workload-class", "cluster"
COST_CENTER, POOL = "cost-center", "pool"
# Annotations under the label domain: what metering prices a pod by, and the object that should own this one.
GPU_EQUIVALENTS, GPU_MODEL, DEVICES, MIG_PROFILE = "gpu-equivalents", "gpu-model", "devices", "mig-profile"
OWNER = "owner"
# Annotation under the label domain on a PriorityClass the portal renders: the seconds between SIGTERM and SIGKILL
# its pods are promised to checkpoint (the semantic checker holds each pod of the class to it).
CHECKPOINT_GRACE = "checkpoint-grace-seconds"


def domain_key(label_domain: str, name: str) -> str:
    """`gpu-portal.io/request-id` from the domain and one of the names above."""
    return f"{label_domain}/{name}"


DEFAULT_POOL_LABEL = domain_key(DEFAULT_LABEL_DOMAIN, POOL)


def selector_for_request(request_id: int, label_domain: str) -> dict[str, str]:
    """matchLabels that select every object (and pod) rendered for one request.

    Turn it into a `?labelSelector=` string with `selector_string()`.
    """
    return {MANAGED_BY_KEY: MANAGED_BY, domain_key(label_domain, REQUEST_ID): str(int(request_id))}


def selector_string(selector: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in selector.items())


@dataclass(frozen=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool = False  # ownerReferences[].controller: the object that manages this one (at most one)


@dataclass(frozen=True)
class Identity:
    """What a cluster object says it belongs to, read from its metadata: a claim, not a proof."""

    uid: str
    namespace: str
    name: str
    managed: bool  # it carries app.kubernetes.io/managed-by=gpu-portal
    request_id: int | None  # its request-id label, when that is a whole number above 0
    team: str
    cluster: str
    strategy: str
    owners: tuple[OwnerRef, ...] = ()  # metadata.ownerReferences


def _request_number(value: Any) -> int | None:
    text = value if isinstance(value, str) else ""
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None


def pod_identity(obj: Mapping[str, Any], label_domain: str = DEFAULT_LABEL_DOMAIN) -> Identity:
    """What a pod (or any object the portal labels: a Job, a Kueue Workload) claims to belong to."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    return Identity(
        uid=meta.get("uid") or "",
        namespace=meta.get("namespace") or "",
        name=meta.get("name") or "",
        managed=labels.get(MANAGED_BY_KEY) == MANAGED_BY,
        request_id=_request_number(labels.get(domain_key(label_domain, REQUEST_ID))),
        team=labels.get(domain_key(label_domain, TEAM), ""),
        cluster=labels.get(domain_key(label_domain, CLUSTER), ""),
        strategy=labels.get(domain_key(label_domain, STRATEGY), ""),
        owners=tuple(OwnerRef(kind=o.get("kind", ""), name=o.get("name", ""), uid=o.get("uid", ""),
                              controller=o.get("controller") is True)
                     for o in meta.get("ownerReferences") or () if isinstance(o, Mapping)),
    )


def bound_request_id(identity: Identity) -> int | None:
    """The request whose pods this object counts as, or None: for status reconciliation and the admission check.
    An object that says the portal manages it is taken at its request-id label. Metering binds more strictly, by
    owner UID (`applied_request_id`)."""
    return identity.request_id if identity.managed else None


@dataclass(frozen=True)
class ApprovedWork:
    """What one approval admits on a Kueue cluster, read from the portal's records (provisioning/admission.py)."""

    request_id: int
    admits: bool  # approved and not finished: it may still be admitted (completed work admits nothing more)
    status: str  # the request's status, in words
    namespace: str  # the team namespace it was approved for
    owner_uids: frozenset[str]  # uids of the objects the portal applied for it on this cluster
    shape: tuple[Mapping[str, Any], ...]  # the pod sets approved (provisioning.manifests.admission.workload_shape)
    bound_workload_uid: str = ""  # the Workload it was first admitted as ("" until then)
    pod_shapes: tuple[Mapping[str, Any], ...] = ()  # one pod of each queued Deployment/StatefulSet (plain-pod Workloads)


def shape_words(shape: Any) -> str:
    """"2 pod(s) x {nvidia.com/gpu: 8} (image)": a Workload's pod sets as the platform team reviews them."""
    parts = []
    for ps in shape:
        asks = [f"{k}: {v}" for k, v in ps["devices_per_pod"].items()] + [f"DRA {c}" for c in ps["claims_per_pod"]]
        parts.append(f"{ps['count']} pod(s) x {{{', '.join(asks) or 'no device'}}} ({', '.join(ps['images'])})")
    return "; ".join(parts) or "no pod set"


def admission_refusal(identity: Identity, *, workload_uid: str, owner_uid: str, shape: Any,
                      approved: ApprovedWork | None, per_pod: bool = False) -> str:
    """Why a Kueue Workload that claims a request (by its labels) is not admitted as that request; "" when it is
    exactly the approved work. Labels alone never admit: the Workload must stand for an object the portal applied
    for the request (by uid), in the namespace it was approved for, with the pod sets approved (count, devices and
    DRA claims per pod, images), and be the first Workload admitted as it (or that one again). `per_pod`: a
    plain-pod Workload (one per pod of a Deployment or StatefulSet); `owner_uid` is then the uid up its owner chain,
    and every pod of the object the portal applied is admitted, each exactly one pod as rendered."""
    claim = f"request #{identity.request_id}" if identity.request_id else "an unnamed request"
    if not identity.managed or identity.request_id is None or approved is None:
        return f"it carries the GPU portal's labels of {claim}, which the portal rendered no such work for"
    if not approved.admits:
        return f"it carries the labels of {claim}, which is {approved.status}: its approval admits nothing more"
    if identity.namespace != approved.namespace:
        return (f"it carries the labels of {claim}, approved for namespace {approved.namespace}, but it is in "
                f"{identity.namespace}")
    if approved.bound_workload_uid and approved.bound_workload_uid != workload_uid and not per_pod:
        return f"{claim} was already admitted once, as Workload {approved.bound_workload_uid}"
    if not owner_uid or owner_uid not in approved.owner_uids:
        return f"it carries the labels of {claim}, but its owner (uid {owner_uid or 'none'}) is no object the portal applied"
    if per_pod:
        if not any([dict(ps) for ps in shape] == [dict(pod)] for pod in approved.pod_shapes):
            return f"it asks {shape_words(shape)}; {claim} was approved for {shape_words(approved.pod_shapes)}"
        return ""
    if [dict(ps) for ps in shape] != [dict(ps) for ps in approved.shape]:
        return f"it asks {shape_words(shape)}; {claim} was approved for {shape_words(approved.shape)}"
    return ""


def attributed_request_id(identity: Identity) -> int | None:
    """The request discovery attributes a GPU holder to in the inventory: its request-id label alone."""
    return identity.request_id


@dataclass(frozen=True)
class AppliedOwner:
    """An object the portal applied for a request, as it recorded the API server's answer (AppliedObject)."""

    request_id: int
    kind: str
    namespace: str


@dataclass(frozen=True)
class Owners:
    """What a pod's owner chain is checked against: the objects the portal applied, by UID, and the objects between
    them and the pods that their controllers made (a Deployment's ReplicaSets, a JobSet's Jobs), by UID, as read
    from the cluster."""

    applied: Mapping[str, AppliedOwner]
    between: Mapping[str, Identity]


# Pod -> ReplicaSet -> Deployment, Pod -> Job -> JobSet: two steps; a longer chain is nothing the portal renders.
MAX_OWNER_STEPS = 4


def controller_of(identity: Identity) -> OwnerRef | None:
    """The owner reference marked `controller: true`, as the garbage collector and controllers read it (apimachinery
    `metav1.GetControllerOf`); None when there is none, or (invalid) more than one."""
    controllers = [o for o in identity.owners if o.controller and o.uid]
    return controllers[0] if len(controllers) == 1 else None


def applied_request_id(identity: Identity, owners: Owners) -> int | None:
    """The request a pod is billed as, or None ("found in the cluster"): its controller chain reaches, by UID and
    within the pod's namespace, an object the portal applied for that request. Owner references cannot cross
    namespaces, and a UID is the API server's, never the writer's, so copying labels, names or another namespace's
    references binds nothing."""
    node = identity
    for _ in range(MAX_OWNER_STEPS):
        ref = controller_of(node)
        if ref is None:
            return None
        applied = owners.applied.get(ref.uid)
        if applied is not None:
            same_place = applied.kind == ref.kind and applied.namespace == identity.namespace
            return applied.request_id if same_place else None
        parent = owners.between.get(ref.uid)
        if parent is None or parent.namespace != identity.namespace or parent.name != ref.name:
            return None
        node = parent
    return None


def pod_annotation(obj: Mapping[str, Any], name: str, label_domain: str = DEFAULT_LABEL_DOMAIN) -> str:
    """One of the portal's annotations on an object (GPU_EQUIVALENTS, GPU_MODEL, DEVICES, MIG_PROFILE); "" if none."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(domain_key(label_domain, name)) or ""


def parse_time(value: Any, *, strict: bool = False) -> datetime | None:
    """An RFC 3339 timestamp as the API server writes it ("2026-11-03T10:00:00Z") as an aware datetime; None when
    absent. A malformed one is None too, or raises ValueError with `strict` (metering: never count a guess)."""
    if not value:
        return None
    if strict:
        return datetime.fromisoformat(value)
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
