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


def with_check_state(checks: Sequence[Mapping[str, Any]], *, state: str, message: str, now: str) -> list[dict]:
    """The whole admissionChecks list with the portal's entry set (others unchanged): a merge patch replaces the
    list, so it carries every entry, sent with the resourceVersion it was read at."""
    result = []
    for entry in checks:
        entry = copy.deepcopy(dict(entry))
        if entry.get("name") == ADMISSION_CHECK_NAME:
            if entry.get("state") != state:
                entry["lastTransitionTime"] = now
            entry["state"], entry["message"] = state, message[:32768]
        result.append(entry)
    return result


def workload_owner(workload: Mapping[str, Any]) -> dict[str, str]:
    """The Job (or other object) the Workload stands for: its controller owner reference."""
    refs = (workload.get("metadata") or {}).get("ownerReferences") or []
    owner = next((r for r in refs if r.get("controller")), refs[0] if refs else {})
    return {"api_version": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": owner.get("name", "")}


def workload_pod_labels(workload: Mapping[str, Any]) -> dict[str, str]:
    pod_sets = (workload.get("spec") or {}).get("podSets") or [{}]
    return dict(((pod_sets[0].get("template") or {}).get("metadata") or {}).get("labels") or {})
