"""A stand-in for the parts of Kueue (v0.19.2) that an admission check controller and a waiting request meet: the
Job integration that suspends a queued Job and makes its Workload, the scheduler that reserves the ClusterQueue's
quota (or says how much more it needs), and the workload controller that admits a Workload once it has quota and
every admission check is Ready, deactivates it when one is Rejected, and marks it Finished when its Job ends (which
gives its quota back). `step` runs one pass: tests call it when "Kueue" acts, and the simulated cluster's loop
(kubesim.kubelet) calls it every tick when the fake serves Kueue.

Shapes follow kubernetes-sigs/kueue v0.19.2:
- Workload name: `pkg/controller/jobframework/workload_names.go` GetWorkloadNameForOwnerWithGVK
  ("job-<name>-<5 hex of a hash>"); labels `kueue.x-k8s.io/job-uid` (`pkg/controller/constants/constants.go`).
- The checks a Workload carries: the ClusterQueue's `spec.admissionChecksStrategy.admissionChecks[].name`
  (`apis/kueue/v1beta2/clusterqueue_types.go`), each starting `Pending` in `status.admissionChecks`
  (`apis/kueue/v1beta2/workload_types.go` AdmissionCheckState).
- Quota: the ClusterQueue's `spec.resourceGroups[].flavors[].resources[].nominalQuota`; a Workload whose pod sets
  fit the unused quota gets `QuotaReserved` True and `status.admission` (clusterQueue, podSetAssignments); one that
  does not gets `QuotaReserved` False, reason `WaitingForQuota` (workload_types.go), with the flavor assigner's
  message "couldn't assign flavors to pod set <name>: insufficient unused quota for <resource> in flavor <flavor>,
  <n> more needed" (`pkg/scheduler/flavorassigner/flavorassigner.go`). Workloads are tried oldest first and a
  later one that fits is admitted past an earlier one that does not (the default BestEffortFIFO), higher priority
  first. Preemption within a ClusterQueue by priority: kubesim.kueue_preemption. Not simulated: cohorts and
  borrowing, several flavors per resource, ExceedsMaxQuota. A ClusterQueue
  without resourceGroups reserves whatever is asked (the admission check tests need no quota).
- A Rejected check deactivates the Workload (`spec.active: false`, `pkg/controller/core/workload_controller.go`
  reconcileCheckBasedEviction, reason AdmissionCheckRejected); the Job stays suspended, so no pod ever starts.
- A `Retry` check evicts a Workload holding quota (`pkg/controller/core/workload_controller.go`
  reconcileCheckBasedEviction, `pkg/workload/evict/evict.go`): condition `Evicted` True, reason `AdmissionCheck`,
  its quota released, its Job suspended again, and every check reset to `Pending` ("Reset to Pending after
  eviction. Previously: Retry", `retryCount` + 1); the scheduler skips a Workload while a check is `Retry` or
  `Rejected` (`pkg/scheduler/scheduler.go` nominate). Quota is reserved before the checks run, so a check that
  waits (`Pending`) holds quota meanwhile. A Retry carrying `requeueAfterSeconds` (KEP-3258,
  `apis/kueue/v1beta2/workload_types.go`) keeps the evicted Workload out of its queue until lastTransitionTime +
  requeueAfterSeconds (`status.requeueState.requeueAt`, `pkg/workload/admissionchecks.go` NeedsRequeueAtUpdate;
  the reset check keeps it, `pkg/workload/evict/evict.go` resetChecksOnEviction).
- The admission gate (KEP-6915, `kueue.x-k8s.io/admission-gated-by`, `pkg/constants/constants.go`; beta and on by
  default in 0.19, `pkg/features/kube_features.go` AdmissionGatedBy): the Job's annotation is copied to its
  Workload (`pkg/controller/jobframework/reconciler.go` UpdateAdmissionGatedBy); a gated Workload is not
  admissible (`pkg/workload/workload.go` IsAdmissible) and reserves no quota, with `QuotaReserved` False, reason
  `AdmissionGated`, "Admission is gated by: <value>"; once the annotation is removed the condition turns to reason
  `Pending`, "AdmissionGated cleared, waiting for quota reservation" (workload_controller.go
  mayUpdateConditionForAdmissionGatedBy; `Pending` is the reason while UnadmittedWorkloadsObservability is off, its
  0.19 default) and the Workload queues for quota like any other.
- Kueue's Job webhook suspends a Job created into a queue (`pkg/controller/jobs/job/job_webhook.go`): the fake
  API server does it on create (`suspend_queued_job`), so pods never start before admission.
- Quota reserved and all checks Ready: condition `Admitted` True and the Job unsuspended.
- The Job Complete (or Failed): condition `Finished` True, reason `Succeeded` (or `Failed`); a finished Workload
  holds no quota.
"""
from __future__ import annotations

import copy
import hashlib
import time
from collections import Counter
from datetime import datetime
from typing import Any

from kubesim import kueue_preemption
from kubesim.scheduler import pod_requests
from kubesim.timestamps import stamp

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GATE_ANNOTATION = "kueue.x-k8s.io/admission-gated-by"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def workload_name(job_name: str, job_uid: str) -> str:
    digest = hashlib.sha1(f"batch/v1/Job/{job_uid}".encode()).hexdigest()[:5]
    return f"job-{job_name}-{digest}"[:253]


def _cluster_queue_of(fake, namespace: str, queue: str) -> dict[str, Any]:
    local = fake.get(KUEUE, "LocalQueue", queue, namespace) or {}
    return fake.get(KUEUE, "ClusterQueue", (local.get("spec") or {}).get("clusterQueue", "")) or {}


def _checks_of_queue(fake, namespace: str, queue: str) -> list[str]:
    strategy = (_cluster_queue_of(fake, namespace, queue).get("spec") or {}).get("admissionChecksStrategy") or {}
    return [rule["name"] for rule in strategy.get("admissionChecks") or []]


def submit_job(fake, job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create a Job as `kubectl apply` into a Kueue queue would end up: suspended by Kueue's webhook, with the
    Workload Kueue's job reconciler makes for it (every check of its ClusterQueue Pending, no quota yet)."""
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = True
    live_job = fake.put(job)
    return live_job, workload_for(fake, live_job)


def workload_for(fake, live_job: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The Workload Kueue's job reconciler makes for a Job already in the fake (one the portal applied, say)."""
    meta = live_job["metadata"]
    queue = meta["labels"][QUEUE_LABEL]
    at = stamp(now)
    workload = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(meta["name"], meta["uid"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            **({"annotations": {GATE_ANNOTATION: gate}} if (gate := (meta.get("annotations") or {}).get(
                GATE_ANNOTATION)) else {}),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"],
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "queueName": queue,
            "active": True,
            "podSets": [{"name": "main", "count": int(live_job["spec"].get("parallelism", 1)),
                         "template": live_job["spec"]["template"]}],
            **kueue_preemption.workload_priority(fake, KUEUE, live_job),
        },
        "status": {
            "conditions": [],
            "admissionChecks": [{"name": name, "state": "Pending", "message": "", "lastTransitionTime": at}
                                for name in _checks_of_queue(fake, meta["namespace"], queue)],
        },
    }
    return fake.put(workload)


def _conditions(obj: dict[str, Any]) -> dict[str, dict]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def _true(obj: dict[str, Any], kind: str) -> bool:
    return (_conditions(obj).get(kind) or {}).get("status") == "True"


def _set_condition(fake, workload: dict[str, Any], condition: dict[str, Any], extra: dict | None = None) -> None:
    """Add or replace one condition; lastTransitionTime moves only when the status does (apimeta.SetStatusCondition)."""
    conditions = _conditions(workload)
    current = conditions.get(condition["type"])
    if current and all(current.get(k) == condition[k] for k in ("status", "reason", "message")) and not extra:
        return
    if current and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    conditions[condition["type"]] = condition
    meta = workload["metadata"]
    fake.patch(KUEUE, "Workload", meta["name"], meta["namespace"],
               {"status": {"conditions": list(conditions.values()), **(extra or {})}})
    workload.setdefault("status", {})["conditions"] = list(conditions.values())


def _demand(workload: dict[str, Any]) -> Counter:
    """What the Workload's pod sets ask for in all: count x each pod's extended resources."""
    total: Counter = Counter()
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        per_pod = pod_requests({"spec": (pod_set.get("template") or {}).get("spec") or {}})
        for name, value in per_pod.items():
            total[name] += value * int(pod_set.get("count", 1))
    return total


def _nominal(cluster_queue: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """resource -> (flavor, nominalQuota): the first flavor that covers it."""
    quota: dict[str, tuple[str, int]] = {}
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                quota.setdefault(resource["name"], (flavor["name"], int(str(resource.get("nominalQuota", 0)))))
    return quota


def suspend_queued_job(job: dict[str, Any]) -> None:
    """Kueue's Job webhook on create: a Job of a queue starts suspended (the API server calls this)."""
    if QUEUE_LABEL in ((job.get("metadata") or {}).get("labels") or {}) and isinstance(job.get("spec"), dict):
        job["spec"]["suspend"] = True


def _integrate_jobs(fake, now: float | None) -> None:
    """Kueue's Job reconciler: a Workload for every queued Job that has none (the portal's applied Jobs), and the
    Job's admission gate copied to its Workload."""
    workloads = {ref.get("uid"): w for w in fake.find(KUEUE, "Workload")
                 for ref in w["metadata"].get("ownerReferences") or []}
    for job in fake.find("batch/v1", "Job"):
        meta = job["metadata"]
        if QUEUE_LABEL not in (meta.get("labels") or {}):
            continue
        workload = workloads.get(meta["uid"])
        if workload is None:
            workload_for(fake, job, now)
            continue
        gate = (meta.get("annotations") or {}).get(GATE_ANNOTATION) or None
        if (workload["metadata"].get("annotations") or {}).get(GATE_ANNOTATION) != gate:
            fake.patch(KUEUE, "Workload", workload["metadata"]["name"], meta["namespace"],
                       {"metadata": {"annotations": {GATE_ANNOTATION: gate}}})


def _gated(workload: dict[str, Any]) -> bool:
    return bool((workload["metadata"].get("annotations") or {}).get(GATE_ANNOTATION))


def _states(workload: dict[str, Any]) -> set[str]:
    return {check.get("state") for check in (workload.get("status") or {}).get("admissionChecks") or []}


def _gate(fake, workloads: list[dict[str, Any]], at: str) -> None:
    """mayUpdateConditionForAdmissionGatedBy: say when a Workload becomes gated, and when its gate is cleared."""
    for workload in workloads:
        reason = (_conditions(workload).get("QuotaReserved") or {}).get("reason")
        if _gated(workload) and reason != "AdmissionGated" and not _true(workload, "QuotaReserved"):
            gate = workload["metadata"]["annotations"][GATE_ANNOTATION]
            _set_condition(fake, workload, {"type": "QuotaReserved", "status": "False", "reason": "AdmissionGated",
                                            "message": f"Admission is gated by: {gate}", "lastTransitionTime": at})
        elif not _gated(workload) and reason == "AdmissionGated":
            _set_condition(fake, workload, {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                            "message": "AdmissionGated cleared, waiting for quota reservation",
                                            "lastTransitionTime": at})


def _evict_for_retry(fake, workloads: list[dict[str, Any]], at: str) -> None:
    """A Retry check evicts a Workload holding quota: quota released, Job suspended, checks reset to Pending."""
    for workload in workloads:
        if "Retry" not in _states(workload) or not _true(workload, "QuotaReserved"):
            continue
        meta, status = workload["metadata"], workload.get("status") or {}
        retry = [c for c in status.get("admissionChecks") or [] if c.get("state") == "Retry"]
        message = "Evicted due to AdmissionCheck in Retry state: " + "; ".join(
            f"{c['name']}: {c.get('message', '')}" for c in retry)
        checks = [c if c.get("state") == "Pending" else {
            "name": c["name"], "state": "Pending", "lastTransitionTime": at,
            "message": f"Reset to Pending after eviction. Previously: {c.get('state')}",
            **({"requeueAfterSeconds": c["requeueAfterSeconds"]} if "requeueAfterSeconds" in c else {}),
            **({"retryCount": int(c.get("retryCount") or 0) + 1} if c.get("state") == "Retry" else {})}
            for c in status.get("admissionChecks") or []]
        # NeedsRequeueAtUpdate: not requeued before the latest lastTransitionTime + requeueAfterSeconds of a Retry.
        requeue_at = max((_epoch(c.get("lastTransitionTime")) + int(c["requeueAfterSeconds"]) for c in retry
                          if c.get("requeueAfterSeconds") is not None), default=None)
        conditions = {**_conditions(workload),
                      "Evicted": {"type": "Evicted", "status": "True", "reason": "AdmissionCheck", "message": message,
                                  "lastTransitionTime": at},
                      "QuotaReserved": {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                        "message": message, "lastTransitionTime": at}}
        if "Admitted" in conditions:
            conditions["Admitted"] = {"type": "Admitted", "status": "False", "reason": "NoReservation",
                                      "message": "The workload has no reservation", "lastTransitionTime": at}
        fake.patch(KUEUE, "Workload", meta["name"], meta["namespace"], {"status": {
            "conditions": list(conditions.values()), "admissionChecks": checks, "admission": None,
            **({"requeueState": {"requeueAt": stamp(requeue_at)}} if requeue_at is not None else {})}})
        owner = next(iter(meta.get("ownerReferences") or []), None)
        if owner and owner["kind"] == "Job":
            fake.patch("batch/v1", "Job", owner["name"], meta["namespace"], {"spec": {"suspend": True}})


def _finish(fake, workloads: list[dict[str, Any]], at: str) -> None:
    for workload in workloads:
        owner = next(iter(workload["metadata"].get("ownerReferences") or []), None)
        if _true(workload, "Finished") or not owner or owner["kind"] != "Job":
            continue
        job = fake.get("batch/v1", "Job", owner["name"], workload["metadata"]["namespace"]) or {}
        for condition, reason in (("Complete", "Succeeded"), ("Failed", "Failed")):
            if _true(job, condition):
                _set_condition(fake, workload, {"type": "Finished", "status": "True", "reason": reason,
                                                "message": f"Job finished: {condition}", "lastTransitionTime": at})
                break


def _holds_quota(workload: dict[str, Any]) -> bool:
    return (_true(workload, "QuotaReserved") and not _true(workload, "Finished")
            and workload["spec"].get("active", True))


def _epoch(value: Any) -> float:
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return 0.0


def _requeued(workload: dict[str, Any], now: float) -> bool:
    """Whether the Workload is back in its queue: no `status.requeueState.requeueAt` in the future."""
    requeue_at = ((workload.get("status") or {}).get("requeueState") or {}).get("requeueAt")
    return not requeue_at or _epoch(requeue_at) <= now


def _reserve_quota(fake, workloads: list[dict[str, Any]], at: str, now: float) -> None:
    """The scheduler's pass: oldest first, reserve what fits the ClusterQueue's unused quota."""
    queues: dict[tuple[str, str], str] = {}
    cluster_queues: dict[str, dict] = {}
    for workload in workloads:
        key = (workload["metadata"]["namespace"], workload["spec"].get("queueName", ""))
        if key not in queues:
            cluster_queue = _cluster_queue_of(fake, *key)
            queues[key] = cluster_queue.get("metadata", {}).get("name", "")
            cluster_queues[queues[key]] = cluster_queue
    used: dict[str, Counter] = {name: Counter() for name in cluster_queues}
    for workload in workloads:
        if _holds_quota(workload):
            used[queues[(workload["metadata"]["namespace"], workload["spec"].get("queueName", ""))]] += \
                _demand(workload)
    waiting = [w for w in workloads if not _true(w, "QuotaReserved") and not _true(w, "Finished")
               and w["spec"].get("active", True) and not _gated(w) and not _states(w) & {"Retry", "Rejected"}
               and _requeued(w, now)]
    priority = kueue_preemption.priorities(fake, KUEUE)
    preempted: set[str] = set()
    # Higher priority first, then oldest first (Kueue's BestEffortFIFO orders its heads by priority, then time).
    waiting.sort(key=lambda w: (-priority(w), w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))
    for workload in waiting:
        name = queues[(workload["metadata"]["namespace"], workload["spec"].get("queueName", ""))]
        if not name:
            continue  # no ClusterQueue behind its LocalQueue: Kueue leaves it inadmissible
        nominal, demand = _nominal(cluster_queues[name]), _demand(workload)
        short = [(resource, nominal[resource][0], count - (nominal[resource][1] - used[name][resource]))
                 for resource, count in sorted(demand.items())
                 if resource in nominal and used[name][resource] + count > nominal[resource][1]]
        pod_set = ((workload["spec"].get("podSets") or [{}])[0]).get("name", "main")
        if short:
            resource, flavor, more = short[0]
            text = (f"couldn't assign flavors to pod set {pod_set}: insufficient unused quota for {resource} "
                    f"in flavor {flavor}, {more} more needed")
            admitted = [w for w in workloads if _holds_quota(w) and w["metadata"]["uid"] not in preempted and queues[
                (w["metadata"]["namespace"], w["spec"].get("queueName", ""))] == name]
            evicted = kueue_preemption.victims(workload, admitted, Counter({r: n for r, _, n in short}), priority,
                                               _demand, cluster_queues[name])
            why = kueue_preemption.message(workload, name, JOB_UID_LABEL)
            for victim in evicted:  # their quota stays counted this pass: it is the preemptor's on the next
                kueue_preemption.evict(fake, KUEUE, victim, why, at)
                preempted.add(victim["metadata"]["uid"])
            _set_condition(fake, workload, {
                "type": "QuotaReserved", "status": "False", "reason": "Pending" if evicted else "WaitingForQuota",
                "lastTransitionTime": at,
                "message": f"{text}. Pending the preemption of {len(evicted)} workload(s)" if evicted else text})
            continue
        used[name] += demand
        evicted = _conditions(workload).get("Evicted")
        if evicted and evicted.get("status") == "True":  # SetQuotaReservation: the eviction is over
            _set_condition(fake, workload, {"type": "Evicted", "status": "False", "reason": "QuotaReserved",
                                            "message": f"Previously: {evicted.get('message', '')}",
                                            "lastTransitionTime": at})
        admission = {"clusterQueue": name, "podSetAssignments": [
            {"name": ps.get("name", "main"), "count": int(ps.get("count", 1)),
             "flavors": {r: nominal[r][0] for r in demand if r in nominal},
             "resourceUsage": {r: str(n) for r, n in demand.items() if r in nominal}}
            for ps in workload["spec"].get("podSets") or []]}
        _set_condition(fake, workload, {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                        "message": f"Quota reserved in ClusterQueue {name}",
                                        "lastTransitionTime": at}, extra={"admission": admission})


def step(fake, now: float | None = None) -> None:
    """One pass of Kueue over every Workload: make the queued Jobs' Workloads, finish the ended ones, reserve quota,
    then admit the ones with quota whose checks are all Ready and deactivate the ones with a Rejected check.
    `now`: seconds since the epoch for the timestamps (the simulation's clock), else the wall clock."""
    at = stamp(now)
    _integrate_jobs(fake, now)
    workloads = fake.find(KUEUE, "Workload")
    _finish(fake, workloads, at)
    _evict_for_retry(fake, workloads, at)
    workloads = fake.find(KUEUE, "Workload")
    _gate(fake, workloads, at)
    workloads = fake.find(KUEUE, "Workload")
    _reserve_quota(fake, workloads, at, time.time() if now is None else now)
    workloads = fake.find(KUEUE, "Workload")
    for workload in workloads:
        meta, status = workload["metadata"], workload.get("status") or {}
        states = {check["state"] for check in status.get("admissionChecks") or []}
        conditions = _conditions(workload)
        owner = next(iter(meta.get("ownerReferences") or []), None)
        if "Rejected" in states and workload["spec"].get("active", True):
            rejected = [c for c in status["admissionChecks"] if c["state"] == "Rejected"]
            message = "AdmissionCheck in Rejected state: " + "; ".join(f"{c['name']}: {c['message']}" for c in rejected)
            fake.patch(KUEUE, "Workload", meta["name"], meta["namespace"], {"spec": {"active": False}, "status": {
                "conditions": [*conditions.values(), {"type": "Evicted", "status": "True",
                                                      "reason": "DeactivatedDueToAdmissionCheck", "message": message,
                                                      "lastTransitionTime": at}]}})
        elif states <= {"Ready"} and _true(workload, "QuotaReserved") and not _true(workload, "Admitted"):
            _set_condition(fake, workload, {"type": "Admitted", "status": "True", "reason": "Admitted",
                                            "message": "The workload is admitted", "lastTransitionTime": at})
            if owner and owner["kind"] == "Job":
                fake.patch("batch/v1", "Job", owner["name"], meta["namespace"], {"spec": {"suspend": False}})
