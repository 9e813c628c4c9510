"""Kueue's preemption within a ClusterQueue, the simple version of kubernetes-sigs/kueue v0.19.2's (run by
`kubesim.kueue.step` when a Workload does not fit its ClusterQueue's unused quota):

- A Workload's priority (`pkg/util/priority/priority.go`, set on the Workload by the job reconciler): the value of
  the WorkloadPriorityClass its Job's `kueue.x-k8s.io/priority-class` label names (where the fake serves that CRD),
  else of the PriorityClass its pod template's `priorityClassName` names, else 0.
- Only a ClusterQueue whose `spec.preemption.withinClusterQueue` is `LowerPriority` (or `LowerOrNewerEqualPriority`)
  preempts; Kueue's default is `Never` (`apis/kueue/v1beta2/clusterqueue_types.go`). Admitted Workloads of the same
  ClusterQueue with a lower priority are evicted, lowest priority first and the most recently admitted first among
  equals, until the preemptor fits (`pkg/scheduler/preemption/preemption.go`, candidate ordering shortened; no
  cohorts, no fair sharing).
- Each victim: `Evicted=True, reason=Preempted` and `Preempted=True, reason=InClusterQueue`, both with the message of
  `preemptionMessage` ("Preempted to accommodate a workload (UID: <uid>, JobUID: <job uid>) due to prioritization
  in the ClusterQueue; preemptor path: /<cq>; preemptee path: /<cq>"); its quota released (`QuotaReserved=False`,
  `Admitted=False` NoReservation, no `status.admission`), its Job suspended, and the Job controller deletes the
  Job's pods (kubernetes `pkg/controller/job`: a suspended Job has no active pods).
- The preemptor's `QuotaReserved=False, reason=Pending` says "... Pending the preemption of <n> workload(s)"
  (`pkg/scheduler/scheduler.go`); it reserves the quota on a later pass, once the victims gave it back.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

SCHEDULING = "scheduling.k8s.io/v1"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PREEMPTING_POLICIES = ("LowerPriority", "LowerOrNewerEqualPriority")


def _classes(fake, api_version: str, kind: str) -> dict[str, int]:
    try:
        return {c["metadata"]["name"]: int(c.get("value") or 0) for c in fake.find(api_version, kind)}
    except LookupError:  # not served on this fake
        return {}


def priorities(fake, kueue_api: str) -> Callable[[Mapping[str, Any]], int]:
    """workload -> its priority (WorkloadPriorityClass, else the pods' PriorityClass, else 0)."""
    workload_classes = _classes(fake, kueue_api, "WorkloadPriorityClass")
    pod_classes = _classes(fake, SCHEDULING, "PriorityClass")

    def priority(workload: Mapping[str, Any]) -> int:
        spec = workload.get("spec") or {}
        if isinstance(spec.get("priority"), int):
            return spec["priority"]
        named = ((workload.get("metadata") or {}).get("labels") or {}).get(PRIORITY_LABEL)
        if named in workload_classes:
            return workload_classes[named]
        for pod_set in spec.get("podSets") or []:
            name = ((pod_set.get("template") or {}).get("spec") or {}).get("priorityClassName")
            if name in pod_classes:
                return pod_classes[name]
        return 0

    return priority


def workload_priority(fake, kueue_api: str, job: Mapping[str, Any]) -> dict[str, Any]:
    """The priority fields Kueue's job reconciler puts on a new Workload (`pkg/controller/jobframework/reconciler.go`
    via `pkg/util/priority`): from the Job's WorkloadPriorityClass label, else the pods' PriorityClass; none else."""
    named = ((job.get("metadata") or {}).get("labels") or {}).get(PRIORITY_LABEL)
    workload_classes = _classes(fake, kueue_api, "WorkloadPriorityClass")
    if named in workload_classes:
        return {"priorityClassName": named, "priority": workload_classes[named],
                "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"}
    pod_class = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("priorityClassName")
    pod_classes = _classes(fake, SCHEDULING, "PriorityClass")
    if pod_class in pod_classes:
        return {"priorityClassName": pod_class, "priority": pod_classes[pod_class],
                "priorityClassSource": "scheduling.k8s.io/priorityclass"}
    return {}


def victims(workload: Mapping[str, Any], admitted: Sequence[Mapping[str, Any]], short: Counter,
            priority: Callable[[Mapping[str, Any]], int], demand: Callable[[Mapping[str, Any]], Counter],
            cluster_queue: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The admitted Workloads of its ClusterQueue to evict so that `workload` fits (`short`: how much more each
    resource needs); empty when the queue does not preempt or evicting every lower-priority one would not do."""
    policy = (((cluster_queue.get("spec") or {}).get("preemption") or {}).get("withinClusterQueue") or "Never")
    if policy not in PREEMPTING_POLICIES:
        return []
    mine = priority(workload)
    lower = sorted((w for w in admitted if priority(w) < mine), key=_admitted_at, reverse=True)
    lower.sort(key=priority)  # lowest priority first; among equals the most recently admitted first (stable)
    chosen, freed = [], Counter()
    for candidate in lower:
        if all(freed[r] >= n for r, n in short.items()):
            break
        chosen.append(candidate)
        freed += demand(candidate)
    return chosen if all(freed[r] >= n for r, n in short.items()) else []


def _admitted_at(workload: Mapping[str, Any]) -> str:
    return next((c.get("lastTransitionTime") or "" for c in (workload.get("status") or {}).get("conditions") or []
                 if c.get("type") == "QuotaReserved"), "")


def message(preemptor: Mapping[str, Any], cluster_queue: str, job_uid_label: str) -> str:
    meta = preemptor["metadata"]
    job_uid = (meta.get("labels") or {}).get(job_uid_label) or "UNKNOWN"
    return (f"Preempted to accommodate a workload (UID: {meta.get('uid') or 'UNKNOWN'}, JobUID: {job_uid}) due to "
            f"prioritization in the ClusterQueue; preemptor path: /{cluster_queue}; preemptee path: /{cluster_queue}")


def evict(fake, kueue_api: str, victim: Mapping[str, Any], why: str, at: str) -> None:
    """Mark one victim preempted, give its quota back, suspend its Job and delete the Job's pods."""
    meta = victim["metadata"]
    conditions = {c["type"]: c for c in (victim.get("status") or {}).get("conditions") or []}
    conditions |= {
        "Evicted": {"type": "Evicted", "status": "True", "reason": "Preempted", "message": why,
                    "lastTransitionTime": at},
        "Preempted": {"type": "Preempted", "status": "True", "reason": "InClusterQueue", "message": why,
                      "lastTransitionTime": at},
        "QuotaReserved": {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": why,
                          "lastTransitionTime": at},
        "Admitted": {"type": "Admitted", "status": "False", "reason": "NoReservation",
                     "message": "The workload has no reservation", "lastTransitionTime": at},
    }
    fake.patch(kueue_api, "Workload", meta["name"], meta["namespace"],
               {"status": {"conditions": list(conditions.values()), "admission": None}})
    owner = next(iter(meta.get("ownerReferences") or []), None)
    if not owner or owner.get("kind") != "Job":
        return
    fake.patch("batch/v1", "Job", owner["name"], meta["namespace"], {"spec": {"suspend": True}})
    for pod in fake.find("v1", "Pod", meta["namespace"]):
        if any(ref.get("uid") == owner.get("uid") for ref in pod["metadata"].get("ownerReferences") or []):
            fake.remove("v1", "Pod", pod["metadata"]["name"], meta["namespace"])
