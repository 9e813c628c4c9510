"""A stand-in for the parts of Kueue (v0.19.2) that an admission check controller meets: the Job integration that
suspends a queued Job and makes its Workload, and the workload controller that admits it once every admission
check is Ready or deactivates it when one is Rejected. It runs on demand (`step`), not as a loop, so tests say
when "Kueue" acts.

Shapes follow kubernetes-sigs/kueue v0.19.2:
- Workload name: `pkg/controller/jobframework/workload_names.go` GetWorkloadNameForOwnerWithGVK
  ("job-<name>-<5 hex of a hash>"); labels `kueue.x-k8s.io/job-uid` (`pkg/controller/constants/constants.go`).
- The checks a Workload carries: the ClusterQueue's `spec.admissionChecksStrategy.admissionChecks[].name`
  (`apis/kueue/v1beta2/clusterqueue_types.go`), each starting `Pending` in `status.admissionChecks`
  (`apis/kueue/v1beta2/workload_types.go` AdmissionCheckState).
- A Rejected check deactivates the Workload (`spec.active: false`, `pkg/controller/core/workload_controller.go`
  reconcileCheckBasedEviction, reason AdmissionCheckRejected); the Job stays suspended, so no pod ever starts.
- All checks Ready (with quota, which this stand-in always grants): condition `Admitted` True and the Job
  unsuspended.
"""
from __future__ import annotations

import copy
import hashlib
from datetime import UTC, datetime
from typing import Any

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def workload_name(job_name: str, job_uid: str) -> str:
    digest = hashlib.sha1(f"batch/v1/Job/{job_uid}".encode()).hexdigest()[:5]
    return f"job-{job_name}-{digest}"[:253]


def _checks_of_queue(fake, namespace: str, queue: str) -> list[str]:
    local = fake.get(KUEUE, "LocalQueue", queue, namespace) or {}
    cluster_queue = fake.get(KUEUE, "ClusterQueue", (local.get("spec") or {}).get("clusterQueue", "")) or {}
    strategy = (cluster_queue.get("spec") or {}).get("admissionChecksStrategy") or {}
    return [rule["name"] for rule in strategy.get("admissionChecks") or []]


def submit_job(fake, job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create a Job as `kubectl apply` into a Kueue queue would end up: suspended by Kueue's webhook, with the
    Workload Kueue's job reconciler makes for it (quota reserved, every check of its ClusterQueue Pending)."""
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = True
    live_job = fake.put(job)
    return live_job, workload_for(fake, live_job)


def workload_for(fake, live_job: dict[str, Any]) -> dict[str, Any]:
    """The Workload Kueue's job reconciler makes for a Job already in the fake (one the portal applied, say)."""
    job = live_job
    meta = live_job["metadata"]
    queue = meta["labels"][QUEUE_LABEL]
    now = _now()
    workload = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(meta["name"], meta["uid"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"],
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "queueName": queue,
            "active": True,
            "podSets": [{"name": "main", "count": int(job["spec"].get("parallelism", 1)),
                         "template": job["spec"]["template"]}],
        },
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                            "lastTransitionTime": now}],
            "admissionChecks": [{"name": name, "state": "Pending", "message": "", "lastTransitionTime": now}
                                for name in _checks_of_queue(fake, meta["namespace"], queue)],
        },
    }
    return fake.put(workload)


def step(fake) -> None:
    """One pass of Kueue's workload controller over every Workload: admit the ones whose checks are all Ready,
    deactivate the ones with a Rejected check."""
    for workload in fake.find(KUEUE, "Workload"):
        meta, status = workload["metadata"], workload.get("status") or {}
        states = {check["state"] for check in status.get("admissionChecks") or []}
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        owner = next(iter(meta.get("ownerReferences") or []), None)
        if "Rejected" in states and workload["spec"].get("active", True):
            rejected = [c for c in status["admissionChecks"] if c["state"] == "Rejected"]
            message = "AdmissionCheck in Rejected state: " + "; ".join(f"{c['name']}: {c['message']}" for c in rejected)
            fake.patch(KUEUE, "Workload", meta["name"], meta["namespace"], {"spec": {"active": False}, "status": {
                "conditions": [*conditions.values(), {"type": "Evicted", "status": "True",
                                                      "reason": "DeactivatedDueToAdmissionCheck", "message": message,
                                                      "lastTransitionTime": _now()}]}})
        elif states <= {"Ready"} and "Admitted" not in conditions:
            fake.patch(KUEUE, "Workload", meta["name"], meta["namespace"], {"status": {"conditions": [
                *conditions.values(), {"type": "Admitted", "status": "True", "reason": "Admitted",
                                       "message": "The workload is admitted", "lastTransitionTime": _now()}]}})
            if owner and owner["kind"] == "Job":
                fake.patch("batch/v1", "Job", owner["name"], meta["namespace"], {"spec": {"suspend": False}})
