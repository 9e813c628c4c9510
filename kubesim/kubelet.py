"""The simulated cluster's controllers, kubelet, scheduler and mig-manager: one `Simulation.tick()` plays them once.

- JobSet controller: one child Job per replicated Job replica, named `<jobset>-<replicatedJob>-<index>`
  (the naming provisioning/manifests/restart.py cites from kubernetes-sigs/jobset v0.12.0).
- Job controller: `parallelism` pods of an unsuspended Job; Indexed Jobs get one pod per completion index named
  `<job>-<index>-<suffix>` with the `batch.kubernetes.io/job-completion-index` label and annotation and the hostname
  `<job>-<index>` (kubernetes v1.35 pkg/controller/job/indexed_job_utils.go); the Job's status counts its pods and
  gains `SuccessCriteriaMet` then `Complete` when every index succeeded.
- Deployment controller: `replicas` pods named `<deployment>-<template hash>-<suffix>` with `pod-template-hash`,
  owned by the Deployment itself (the fake serves no ReplicaSets).
- Kueue, where the fake serves it (kubesim.kueue): Workloads for queued Jobs, quota reservation, admission once
  the checks are Ready, Finished when the Job ends.
- Scheduler: binds each pod to a node with room (kubesim.scheduler); a pod no node takes, or a stalled gang's last
  rank (its room taken by a burn-in pod the inventory sees), gets `PodScheduled=False` and kube-scheduler's message.
- Preemption (kubesim.preemption): a pod that fits nowhere may have lower-priority pods preempted for it (marked
  `DisruptionTarget`/`PreemptionByScheduler`, deleted with their grace period); it is nominated and binds once
  they are gone.
- Kubelet: a bound pod turns Running after `start_seconds`, a Job's pod Succeeded after its run time; a pod deleted
  with a grace period is stopped and removed once the grace period is over.
- mig-manager: a node whose `nvidia.com/mig.config` names another layout than the one applied goes
  `nvidia.com/mig.config.state=pending`, and after the scaled reconfiguration delay `success` with the new MIG
  devices advertised and labelled (GPU Operator mig-manager; reference §3).

Every write goes through the fake API server's helpers, so the portal sees them by LIST and WATCH like a real
cluster's. State lives in the objects (timestamps of conditions, two annotations on MIG nodes), so a tick is
idempotent and a restarted loop carries on where the last one stopped.
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kubesim import dra, kueue, mig_manager, preemption
from kubesim.scenario import Scenario
from kubesim.scheduler import (
    TERMINAL_PHASES, allocatable, burn_in_pod, pick_node, pod_requests, rejection, unschedulable_message,
    used_on_nodes,
)
from kubesim.timestamps import moment_of, stamp

JOBSET = "jobset.x-k8s.io/v1alpha2"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"


def _condition(obj: Mapping[str, Any], kind: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _owner_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    return any(ref.get("uid") == owner["metadata"]["uid"] for ref in obj["metadata"].get("ownerReferences") or [])


def _suffix() -> str:
    return uuid.uuid4().hex[:5]


class Simulation:
    """The loop body. `fake` is a running kubesim.server.FakeKubeAPI; `clock` returns seconds since the epoch."""

    def __init__(self, fake, scenario: Scenario | None = None, clock: Callable[[], float] = time.time) -> None:
        self.fake, self.scenario, self.clock = fake, scenario or Scenario(), clock

    def tick(self) -> None:
        now = self.clock()
        self._jobsets()
        self._kueue(now)
        self._jobs(now)
        self._deployments()
        preemption.terminate_due(self.fake, self.fake.find("v1", "Pod"), now)
        self._schedule(now)
        self._kubelet(now)
        self._job_status(now)
        mig_manager.step(self.fake, self.scenario, now)

    # -- controllers -------------------------------------------------------------------------------------------

    def _jobsets(self) -> None:
        try:
            jobsets = self.fake.find(JOBSET, "JobSet")
        except LookupError:  # JobSet's CRD is not served on this fake
            return
        for jobset in jobsets:
            namespace, name = jobset["metadata"]["namespace"], jobset["metadata"]["name"]
            suspended = bool(jobset["spec"].get("suspend"))
            for replicated in jobset["spec"].get("replicatedJobs") or []:
                for index in range(int(replicated.get("replicas", 1))):
                    child = f"{name}-{replicated['name']}-{index}"
                    if self.fake.get("batch/v1", "Job", child, namespace) is not None:
                        continue
                    template = json.loads(json.dumps(replicated["template"]))
                    meta = template.setdefault("metadata", {})
                    labels = {**(jobset["metadata"].get("labels") or {}), **(meta.get("labels") or {}),
                              "jobset.sigs.k8s.io/jobset-name": name,
                              "jobset.sigs.k8s.io/replicatedjob-name": replicated["name"],
                              "jobset.sigs.k8s.io/job-index": str(index)}
                    spec = template["spec"]
                    spec["suspend"] = suspended
                    self.fake.put({"apiVersion": "batch/v1", "kind": "Job",
                                   "metadata": {"name": child, "namespace": namespace, "labels": labels,
                                                "annotations": meta.get("annotations") or {},
                                                "ownerReferences": [_owner_ref(jobset)]},
                                   "spec": spec})

    def _kueue(self, now: float) -> None:
        try:
            self.fake.find(kueue.KUEUE, "Workload")
        except LookupError:  # Kueue's CRDs are not served on this fake
            return
        kueue.step(self.fake, now)

    def _jobs(self, now: float) -> None:
        pods = self.fake.find("v1", "Pod")
        for job in self.fake.find("batch/v1", "Job"):
            spec = job["spec"]
            if spec.get("suspend") or _condition(job, "Complete") or _condition(job, "Failed"):
                continue
            mine = [p for p in pods if _owned_by(p, job)]
            live = [p for p in mine if p["status"].get("phase") not in TERMINAL_PHASES]
            parallelism = int(spec.get("parallelism", 1))
            completions = int(spec.get("completions", parallelism))
            if spec.get("completionMode") == "Indexed":
                done = {p["metadata"]["labels"].get(INDEX_KEY) for p in mine if p["status"].get("phase") == "Succeeded"}
                busy = {p["metadata"]["labels"].get(INDEX_KEY) for p in live}
                for index in range(completions):
                    if len(busy) >= parallelism:
                        break
                    if str(index) not in done | busy:
                        self._create_pod(job, spec["template"], f"{job['metadata']['name']}-{index}-{_suffix()}",
                                         index=index)
                        busy.add(str(index))
            else:
                succeeded = sum(1 for p in mine if p["status"].get("phase") == "Succeeded")
                for _ in range(min(parallelism, completions - succeeded) - len(live)):
                    self._create_pod(job, spec["template"], f"{job['metadata']['name']}-{_suffix()}")

    def _deployments(self) -> None:
        pods = self.fake.find("v1", "Pod")
        for deployment in self.fake.find("apps/v1", "Deployment"):
            template = deployment["spec"]["template"]
            template_hash = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
            mine = [p for p in pods if _owned_by(p, deployment) and p["status"].get("phase") not in TERMINAL_PHASES]
            current = [p for p in mine if p["metadata"]["labels"].get("pod-template-hash") == template_hash]
            for stale in [p for p in mine if p not in current]:  # a changed template replaces the pods
                self.fake.remove("v1", "Pod", stale["metadata"]["name"], stale["metadata"]["namespace"])
            wanted = int(deployment["spec"].get("replicas", 1))
            for extra in current[wanted:]:
                self.fake.remove("v1", "Pod", extra["metadata"]["name"], extra["metadata"]["namespace"])
            for _ in range(wanted - len(current)):
                name = f"{deployment['metadata']['name']}-{template_hash}-{_suffix()}"
                self._create_pod(deployment, template, name, extra_labels={"pod-template-hash": template_hash})
            ready = sum(1 for p in current[:wanted] if p["status"].get("phase") == "Running")
            self.fake.patch_status("apps/v1", "Deployment", deployment["metadata"]["name"],
                                   deployment["metadata"]["namespace"], {
                                       "observedGeneration": deployment["metadata"].get("generation", 1),
                                       "replicas": min(len(current), wanted), "updatedReplicas": min(len(current), wanted),
                                       "readyReplicas": ready, "availableReplicas": ready,
                                       "unavailableReplicas": max(wanted - ready, 0)})

    def _create_pod(self, owner: Mapping[str, Any], template: Mapping[str, Any], name: str, *,
                    index: int | None = None, extra_labels: Mapping[str, str] | None = None) -> None:
        template = json.loads(json.dumps(template))
        meta = template.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), **(extra_labels or {})}
        annotations = dict(meta.get("annotations") or {})
        spec = template["spec"]
        if owner["kind"] == "Job":
            labels |= {"batch.kubernetes.io/job-name": owner["metadata"]["name"],
                       "batch.kubernetes.io/controller-uid": owner["metadata"]["uid"],
                       "job-name": owner["metadata"]["name"], "controller-uid": owner["metadata"]["uid"]}
        if index is not None:
            labels[INDEX_KEY] = annotations[INDEX_KEY] = str(index)
            spec.setdefault("hostname", f"{owner['metadata']['name']}-{index}")
        spec.setdefault("schedulerName", "default-scheduler")
        preemption.admit(self.fake, spec)
        self.fake.put({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": owner["metadata"]["namespace"], "labels": labels,
                                    "annotations": annotations, "ownerReferences": [_owner_ref(owner)]},
                       "spec": spec, "status": {"phase": "Pending", "qosClass": "Burstable"}})

    # -- scheduler ---------------------------------------------------------------------------------------------

    def _gang_owner(self, pod: Mapping[str, Any], jobs: Mapping[str, Mapping]) -> tuple[str, bool] | None:
        """(name the scenario matches on, whether this pod is the gang's last rank), for pods of gang Jobs."""
        job_name = pod["metadata"]["labels"].get("batch.kubernetes.io/job-name")
        job = jobs.get(f"{pod['metadata']['namespace']}/{job_name}")
        if not job or int(job["spec"].get("parallelism", 1)) < 2:
            return None
        last = str(int(job["spec"].get("completions", job["spec"].get("parallelism"))) - 1)
        jobset = pod["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name")
        return jobset or job_name, pod["metadata"]["labels"].get(INDEX_KEY) == last

    def _schedule(self, now: float) -> None:
        nodes = self.fake.find("v1", "Node")
        pods = self.fake.find("v1", "Pod")
        jobs = {f"{j['metadata']['namespace']}/{j['metadata']['name']}": j for j in self.fake.find("batch/v1", "Job")}
        used = used_on_nodes(pods)
        pending = [p for p in pods if not p["spec"].get("nodeName") and p["status"].get("phase") == "Pending"]
        stalls = {id(p) for p in pending if (g := self._gang_owner(p, jobs)) and g[1] and self.scenario.stalls(g[0])}
        # A stalled last rank goes last; someone else's pod takes just enough of each node that would take it.
        for pod in sorted(pending, key=lambda p: (id(p) in stalls, p["metadata"].get("creationTimestamp", ""))):
            if id(pod) in stalls:
                for node in nodes:
                    if not rejection(pod, node, used.get(node["metadata"]["name"], {})):
                        self._hold_for_stall(pod, node, used, now)
                self._unschedulable(pod, unschedulable_message(pod, nodes, used), now)
                continue
            node = pick_node(pod, candidates := dra.feasible(self.fake, pod, nodes), used)
            if node is None and candidates:
                preemption.preempt(self.fake, pod, candidates, pods, used, now)
            if node is None:
                message = unschedulable_message(pod, nodes, used) if candidates else dra.no_devices_message(len(nodes))
                self._unschedulable(pod, message, now)
                continue
            held = used.setdefault(node, {})
            for resource, count in {**pod_requests(pod), "pods": 1}.items():
                held[resource] = held.get(resource, 0) + count
            claims = {"resourceClaimStatuses": dra.bind_claims(self.fake, pod, node)} if dra.uses_claims(pod) else {}
            self.fake.patch("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], {
                "spec": {"nodeName": node},
                "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                           "lastTransitionTime": stamp(now)}], **claims},
            })

    def _hold_for_stall(self, pod: Mapping[str, Any], node: Mapping[str, Any], used: dict, now: float) -> None:
        name = node["metadata"]["name"]
        held = used.setdefault(name, {})
        free = {r: allocatable(node).get(r, 0) - held.get(r, 0) - (n - 1) for r, n in pod_requests(pod).items()}
        self.fake.put(burn_in_pod(name, free, suffix=uuid.uuid4().hex[:5], at=stamp(now)))
        held.update({r: held.get(r, 0) + n for r, n in {**free, "pods": 1}.items()})

    def _unschedulable(self, pod: Mapping[str, Any], message: str, now: float) -> None:
        current = _condition(pod, "PodScheduled")
        if current and current.get("reason") == "Unschedulable" and current.get("message") == message:
            return
        self.fake.patch_status("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": message, "lastProbeTime": None,
                            "lastTransitionTime": (current or {}).get("lastTransitionTime") or stamp(now)}]})

    # -- kubelet -----------------------------------------------------------------------------------------------

    def _kubelet(self, now: float) -> None:
        addresses = {n["metadata"]["name"]: next((a["address"] for a in n["status"].get("addresses") or []
                                                  if a["type"] == "InternalIP"), "10.0.0.1")
                     for n in self.fake.find("v1", "Node")}
        pods = self.fake.find("v1", "Pod")
        gang_started = _gang_start_times(pods)
        for pod in pods:
            node, phase = pod["spec"].get("nodeName"), pod["status"].get("phase")
            if not node or phase in TERMINAL_PHASES:
                continue
            scheduled = _condition(pod, "PodScheduled")
            if phase == "Pending" and scheduled and scheduled.get("status") == "True":
                if now - (moment_of(scheduled.get("lastTransitionTime")) or now) >= self.scenario.start_seconds:
                    self._start(pod, addresses.get(node, "10.0.0.1"), now)
            elif phase == "Running" and _owner_kind(pod) == "Job":
                # A rank of a gang works only once every rank runs (they meet at the rendezvous first).
                job_uid = pod["metadata"]["labels"].get("batch.kubernetes.io/controller-uid", "")
                if job_uid in gang_started and gang_started[job_uid] is None:
                    continue
                started = gang_started.get(job_uid) or moment_of(pod["status"].get("startTime")) or now
                owner = pod["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") or \
                    pod["metadata"]["labels"].get("batch.kubernetes.io/job-name", "")
                if now - started >= self.scenario.run_seconds_for(owner):
                    self._finish(pod, now)

    def _start(self, pod: Mapping[str, Any], host_ip: str, now: float) -> None:
        at = stamp(now)
        scheduled = _condition(pod, "PodScheduled")
        conditions = [{"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
                      for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")]
        self.fake.patch_status("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], {
            "phase": "Running", "startTime": at, "hostIP": host_ip, "podIP": _pod_ip(pod),
            "conditions": [*conditions, scheduled],
            "containerStatuses": [{"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True,
                                   "restartCount": 0, "started": True, "state": {"running": {"startedAt": at}}}
                                  for c in pod["spec"].get("containers") or []],
        })

    def _finish(self, pod: Mapping[str, Any], now: float) -> None:
        at, started = stamp(now), pod["status"].get("startTime")
        conditions = [{**c, "status": "False", "reason": "PodCompleted", "lastTransitionTime": at}
                      if c["type"] in ("Ready", "ContainersReady") else c for c in pod["status"].get("conditions") or []]
        self.fake.patch_status("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], {
            "phase": "Succeeded", "conditions": conditions,
            "containerStatuses": [{**s, "ready": False, "started": False, "state": {"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": at}}}
                for s in pod["status"].get("containerStatuses") or []],
        })

    def _job_status(self, now: float) -> None:
        pods = self.fake.find("v1", "Pod")
        for job in self.fake.find("batch/v1", "Job"):
            if _condition(job, "Complete"):
                continue
            mine = [p for p in pods if _owned_by(p, job)]
            phases = [p["status"].get("phase") for p in mine]
            completions = int(job["spec"].get("completions", job["spec"].get("parallelism", 1)))
            succeeded = phases.count("Succeeded")
            status: dict[str, Any] = {"active": phases.count("Pending") + phases.count("Running"),
                                      "ready": phases.count("Running"), "succeeded": succeeded,
                                      "failed": phases.count("Failed"), "terminating": 0}
            if mine and not job.get("status", {}).get("startTime"):
                status["startTime"] = stamp(now)
            if job["spec"].get("completionMode") == "Indexed":
                done = sorted(int(p["metadata"]["labels"][INDEX_KEY]) for p in mine
                              if p["status"].get("phase") == "Succeeded" and INDEX_KEY in p["metadata"]["labels"])
                status["completedIndexes"] = ",".join(str(i) for i in done)
            if mine and succeeded >= completions:
                at = stamp(now)
                status |= {"completionTime": at, "active": 0, "ready": 0, "conditions": [
                    {"type": kind, "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods", "lastProbeTime": at,
                     "lastTransitionTime": at} for kind in ("SuccessCriteriaMet", "Complete")]}
            if any(job.get("status", {}).get(k) != v for k, v in status.items()):
                self.fake.patch_status("batch/v1", "Job", job["metadata"]["name"], job["metadata"]["namespace"], status)


def _gang_start_times(pods: list[dict[str, Any]]) -> dict[str, float | None]:
    """Per Job of several pods (by uid): when its last rank started running, or None while a rank is not running."""
    by_job: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        uid = pod["metadata"]["labels"].get("batch.kubernetes.io/controller-uid")
        if uid and pod["status"].get("phase") != "Failed":
            by_job.setdefault(uid, []).append(pod)
    starts: dict[str, float | None] = {}
    for uid, ranks in by_job.items():
        if len(ranks) < 2:
            continue
        times = [moment_of(p["status"].get("startTime")) if p["status"].get("phase") in ("Running", "Succeeded")
                 else None for p in ranks]
        starts[uid] = None if None in times else max(times)
    return starts


def _owner_kind(pod: Mapping[str, Any]) -> str:
    refs = pod["metadata"].get("ownerReferences") or [{}]
    return refs[0].get("kind", "")


def _pod_ip(pod: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(pod["metadata"]["name"].encode()).digest()
    return f"10.244.{digest[0]}.{digest[1] % 250 + 2}"
