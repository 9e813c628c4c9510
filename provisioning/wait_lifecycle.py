"""Why a request waits, read from what `provisioning.wait_reasons` does not cover: a Kueue Workload that was evicted
or deactivated, and a native gang on Kubernetes 1.35, whose `scheduling.k8s.io/v1alpha1` Workload has no PodGroup
and no status to read. Pure: the API server's dicts and the pods' facts in, `wait_reasons.Blocker`s out.

Read from:
- kubernetes-sigs/kueue v0.19.2 `apis/kueue/v1beta2/workload_types.go`: `spec.active` (false: deactivated, never
  admitted again until set back), the `Evicted` condition and its reasons (`Preempted`, `PodsReadyTimeout`,
  `AdmissionCheck`, `ClusterQueueStopped`, `LocalQueueStopped`, `NodeFailures`, `Deactivated`, ...), and
  `Requeued` with `RequeuingLimitExceeded` (waitForPodsReady's requeuing limit, after which Kueue deactivates).
- kubernetes/kubernetes 1.35 `pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`: pods of a gang
  wait at PreEnqueue ("waiting for minCount pods from a gang to appear in scheduling queue") and at Permit
  ("waiting for minCount pods from a gang to be waiting on permit") until `minCount` can be placed together; the
  `v1alpha1` Workload carries `spec.podGroups[].policy.gang.minCount` and nothing else to read.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .wait_reasons import ADMISSION, CAPACITY, GANG, QUOTA, Blocker

EVICTED_WORDS = {
    "Preempted": (QUOTA, "Kueue preempted it to make room for other work; it waits in its queue again"),
    "PodsReadyTimeout": (CAPACITY, "its pods did not all become ready within waitForPodsReady's timeout, so Kueue "
                                   "evicted it and queues it again after a backoff"),
    "AdmissionCheck": (ADMISSION, "one of its admission checks turned it down"),
    "ClusterQueueStopped": (ADMISSION, "its ClusterQueue is stopped"),
    "LocalQueueStopped": (ADMISSION, "its LocalQueue is stopped"),
    "NodeFailures": (CAPACITY, "a node it ran on failed for good"),
    "Deactivated": (ADMISSION, "it was deactivated"),
}


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == kind), {})


def kueue_lifecycle_blockers(workload: Mapping[str, Any]) -> list[Blocker]:
    """A Kueue Workload that was deactivated or evicted (empty for one that is neither)."""
    meta, spec, status = workload.get("metadata") or {}, workload.get("spec") or {}, workload.get("status") or {}
    where = f"Kueue Workload {meta.get('namespace', '')}/{meta.get('name', '')}"
    evicted, requeued = _condition(status, "Evicted"), _condition(status, "Requeued")
    if spec.get("active") is False:
        why = ""
        if requeued.get("reason") == "RequeuingLimitExceeded":
            why = " after it was evicted as often as waitForPodsReady's requeuing limit allows"
        elif evicted.get("status") == "True" and evicted.get("reason") not in (None, "", "Deactivated"):
            why = f" after it was evicted ({evicted['reason']})"
        return [Blocker(ADMISSION, f"{where}: spec.active=false", evicted.get("reason") or "Deactivated",
                        (evicted.get("message") or requeued.get("message") or "").strip(),
                        f"Kueue deactivated it{why}: it is not admitted again until its spec.active is set back to "
                        "true (or it is resubmitted).")]
    if evicted.get("status") != "True":
        return []
    reason = evicted.get("reason", "")
    kind, words = EVICTED_WORDS.get(reason, (ADMISSION, "Kueue evicted it"))
    return [Blocker(kind, f"{where}: condition Evicted=True", reason, (evicted.get("message") or "").strip(),
                    f"Evicted by Kueue: {words}.")]


def native_gang_blockers(workload: Mapping[str, Any], pods: Sequence[Any]) -> list[Blocker]:
    """A 1.35 native gang: its Workload's gang minimum against the pods the scheduler has placed (`pods`:
    provisioning.reconcile PodFacts). Empty once enough are placed."""
    meta = workload.get("metadata") or {}
    groups = [(g.get("name", ""), ((g.get("policy") or {}).get("gang") or {}).get("minCount"))
              for g in (workload.get("spec") or {}).get("podGroups") or ()]
    found = []
    for group, minimum in groups:
        if not minimum:
            continue
        placed = sum(1 for p in pods if p.node or p.phase in ("Running", "Succeeded"))
        if placed >= int(minimum):
            continue
        waiting = next((p.unschedulable_message for p in pods if p.unschedulable_message), "")
        found.append(Blocker(
            GANG, f"native Workload {meta.get('namespace', '')}/{meta.get('name', '')} "
                  f"(scheduling.k8s.io/v1alpha1): podGroups[{group}].policy.gang.minCount={minimum}",
            "GangScheduling", waiting or f"{placed} of {minimum} pods placed, {len(pods)} created",
            f"The scheduler holds every pod until {minimum} can be placed together (its GangScheduling plugin); "
            f"{placed} of {minimum} are placed and {len(pods)} exist. A 1.35 Workload has no status: this is counted "
            "from the pods."))
    return found
