"""The portal as a Kueue admission check: its AdmissionCheck object, the ClusterQueue field that makes the team
queue require it, and the Workload status entries it writes. Pure: dicts in, dicts out.

Read from kubernetes-sigs/kueue v0.19.2:
- `apis/kueue/v1beta2/admissioncheck_types.go`: AdmissionCheck (cluster-scoped) `spec.controllerName`
  (immutable, 1-253 characters); the controller sets condition `Active` (`AdmissionCheckActive`) True, as the
  provisioning controller does (`pkg/controller/admissionchecks/provisioning/admissioncheck_reconciler.go`);
  CheckState Pending / Ready / Retry / Rejected.
- `apis/kueue/v1beta2/clusterqueue_types.go`: `spec.admissionChecksStrategy.admissionChecks[]` (list-map keyed
  by `name`; `onFlavors` empty = every workload of the queue).
- `apis/kueue/v1beta2/workload_types.go`: `status.admissionChecks[]` AdmissionCheckState {name, state,
  lastTransitionTime, message}, list-map keyed by `name`; `pkg/workload/...` SetAdmissionCheckState moves
  lastTransitionTime only when the state changes, and so does `with_check_state` below.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from .team import DEFAULT_CLUSTER_QUEUE

KUEUE_API = "kueue.x-k8s.io/v1beta2"
CONTROLLER_NAME = "gpu-portal.io/approval"
ADMISSION_CHECK_NAME = "gpu-portal-approval"
PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"
# The annotation a Job can carry to hold its admission until every named controller removed itself from it
# (pkg/constants/constants.go AdmissionGatedByAnnotation; beta, AdmissionGatedBy gate on by default in 0.19).
ADMISSION_GATED_BY = "kueue.x-k8s.io/admission-gated-by"


def build_admission_check(labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": {"name": ADMISSION_CHECK_NAME, "labels": dict(labels)},
        "spec": {"controllerName": CONTROLLER_NAME},
    }


def build_cluster_queue_check(cluster_queue: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """Only the field the portal owns on the team ClusterQueue, for server-side apply under the portal's field
    manager: the platform's resourceGroups (its quota, owned by its own manager) are left alone."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": cluster_queue or DEFAULT_CLUSTER_QUEUE, "labels": dict(labels)},
        "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": ADMISSION_CHECK_NAME}]}},
    }


def active_condition(generation: int, now: str) -> dict[str, Any]:
    return {"type": "Active", "status": "True", "reason": "Active", "message": "The admission check is active",
            "observedGeneration": int(generation), "lastTransitionTime": now}


def check_state(workload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The portal's entry in the Workload's status.admissionChecks, if Kueue put one there."""
    for entry in (workload.get("status") or {}).get("admissionChecks") or []:
        if entry.get("name") == ADMISSION_CHECK_NAME:
            return entry
    return None


def with_check_state(checks: Sequence[Mapping[str, Any]], *, state: str, message: str, now: str,
                     requeue_after: int | None = None) -> list[dict]:
    """The whole admissionChecks list with the portal's entry set (others unchanged): a merge patch replaces the
    list, so it carries every entry, sent with the resourceVersion it was read at."""
    result = []
    for entry in checks:
        entry = copy.deepcopy(dict(entry))
        if entry.get("name") == ADMISSION_CHECK_NAME:
            if entry.get("state") != state:
                entry["lastTransitionTime"] = now
            entry["state"], entry["message"] = state, message[:32768]
            entry.pop("requeueAfterSeconds", None)
            if requeue_after is not None:
                entry["requeueAfterSeconds"] = int(requeue_after)
        result.append(entry)
    return result


def workload_owner(workload: Mapping[str, Any]) -> dict[str, str]:
    """The Job (or other object) the Workload stands for: its controller owner reference."""
    refs = (workload.get("metadata") or {}).get("ownerReferences") or []
    owner = next((r for r in refs if r.get("controller")), refs[0] if refs else {})
    return {"api_version": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": owner.get("name", ""),
            "uid": owner.get("uid", "")}


def workload_pod_labels(workload: Mapping[str, Any]) -> dict[str, str]:
    pod_sets = (workload.get("spec") or {}).get("podSets") or [{}]
    return dict(((pod_sets[0].get("template") or {}).get("metadata") or {}).get("labels") or {})


# While a Workload waits for the platform team and holds quota the check answers Retry (Kueue releases the quota
# and requeues it, `site/content/en/docs/concepts/admission_check/_index.md`), with `requeueAfterSeconds`
# (settings.PORTAL_ADMISSION_RETRY_SECONDS; KEP-3258, `apis/kueue/v1beta2/workload_types.go` AdmissionCheckState;
# Kueue sets `status.requeueState.requeueAt` from it, `pkg/workload/admissionchecks.go` NeedsRequeueAtUpdate).
DEVICE_PREFIXES = ("nvidia.com/", "amd.com/", "gpu.intel.com/")


def _quantity(value: Any) -> int | str:
    text = str(value).strip()
    return int(text) if text.isascii() and text.isdigit() else text


def _pod_devices(pod_spec: Mapping[str, Any]) -> dict[str, int | str]:
    """Device resources one pod asks (limits, else requests): the sum over its containers, or the largest init
    container's when that is more (the pod's effective request, as the scheduler counts it)."""
    def asks(container: Mapping[str, Any]) -> dict[str, int | str]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return {k: _quantity(v) for k, v in merged.items() if str(k).startswith(DEVICE_PREFIXES)}

    total: dict[str, int | str] = {}
    for container in pod_spec.get("containers") or []:
        for name, value in asks(container).items():
            both = (total.get(name, 0), value)
            total[name] = sum(both) if all(isinstance(v, int) for v in both) else f"{both[0]}+{value}"
    for container in pod_spec.get("initContainers") or []:
        for name, value in asks(container).items():
            if isinstance(value, int) and isinstance(total.get(name, 0), int) and value > total.get(name, 0):
                total[name] = value
    return dict(sorted(total.items()))


def pod_set_shape(*, count: Any, template: Mapping[str, Any]) -> dict[str, Any]:
    """One pod set as an approval binds it: the pod count, the devices each pod asks (extended resources summed
    over its containers, and its DRA claims by the template or claim they name), and its images."""
    spec = template.get("spec") or {}
    claims = sorted(f"template:{c.get('resourceClaimTemplateName')}" if c.get("resourceClaimTemplateName")
                    else f"claim:{c.get('resourceClaimName', '')}" for c in spec.get("resourceClaims") or [])
    images = sorted({str(c.get("image") or "") for c in [*(spec.get("initContainers") or []),
                                                         *(spec.get("containers") or [])]})
    return {"count": int(_quantity(count or 1)) if str(count or 1).isdigit() else str(count),
            "devices_per_pod": _pod_devices(spec), "claims_per_pod": claims, "images": images}


def workload_shape(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every pod set of a Kueue Workload (`spec.podSets[]`: count and pod template), in order."""
    return [pod_set_shape(count=ps.get("count", 1), template=ps.get("template") or {})
            for ps in (workload.get("spec") or {}).get("podSets") or []]


def rendered_shape(objects: Sequence[Mapping[str, Any]], queue_label: str) -> list[dict[str, Any]]:
    """The pod sets Kueue makes of the queued Jobs the portal renders for a request (a Job's one pod set "main":
    parallelism pods of its template, `pkg/controller/jobs/job/job_controller.go` PodSets)."""
    return [pod_set_shape(count=(obj.get("spec") or {}).get("parallelism", 1),
                          template=(obj.get("spec") or {}).get("template") or {})
            for obj in objects if obj.get("kind") == "Job"
            and queue_label in ((obj.get("metadata") or {}).get("labels") or {})]


POD_OWNERS = {"Deployment", "StatefulSet"}


def rendered_pod_shapes(objects: Sequence[Mapping[str, Any]], queue_label: str) -> list[dict[str, Any]]:
    """The one-pod pod set of each pod of the queued Deployments and StatefulSets the portal renders: Kueue's
    deployment and statefulset integrations admit every pod as a plain-pod Workload of its own (kueue v0.19.2
    `pkg/controller/jobs/deployment`, `pkg/controller/jobs/pod`)."""
    return [pod_set_shape(count=1, template=(obj.get("spec") or {}).get("template") or {})
            for obj in objects if obj.get("kind") in POD_OWNERS
            and queue_label in ((obj.get("metadata") or {}).get("labels") or {})]


def asks_devices(shape: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any pod set asks an accelerator (a device resource or a DRA claim): else nothing to approve."""
    return any(ps["devices_per_pod"] or ps["claims_per_pod"] for ps in shape)

