"""Pod priority and preemption in the simulated scheduler, the simple version of kube-scheduler's (kubernetes
v1.35):

- Priority: `spec.priority` when the Priority admission plugin filled it, else the value of the PriorityClass that
  `spec.priorityClassName` names, else the class marked `globalDefault`, else 0
  (plugin/pkg/admission/priority/admission.go). `preemptionPolicy` likewise: the pod's, else its class's, else
  `PreemptLowerPriority`; a pod with `Never` never preempts (pkg/scheduler/framework/plugins/defaultpreemption
  default_preemption.go `PodEligibleToPreemptOthers`), though it can be preempted.
- A pod that fits nowhere looks for a node where removing lower-priority pods makes room (only nodes whose sole
  objection is resources: a selector, a taint or a cordon is not helped by preemption). On each, every
  lower-priority pod is removed, then as many as can be put back are, highest priority first (`SelectVictimsOnNode`);
  of the nodes that work, the one whose most important victim is least important, then the fewest victims, then
  the name (`pickOneNodeForPreemption`, shortened).
- Each victim gets the condition `DisruptionTarget` True, reason `PreemptionByScheduler`, message
  "<scheduler>: preempting to accommodate a higher priority pod" (pkg/scheduler/framework/preemption/preemption.go
  `prepareCandidate`; the type and reason are k8s.io/api core/v1 types.go `DisruptionTarget`,
  `PodReasonPreemptionByScheduler`), an Event `Preempted` "Preempted by pod <uid> on node <node>" on it, and is
  deleted with its grace period: `deletionTimestamp` = now + `terminationGracePeriodSeconds` (default 30). The
  preemptor gets `status.nominatedNodeName` and stays Pending; while its nominated node still has victims
  terminating it does not preempt again (`PodEligibleToPreemptOthers`).
- The kubelet (`terminate_due`): a pod whose `deletionTimestamp` has passed gets its containers terminated
  (SIGTERM, exit code 143) and phase `Failed`, then goes from the API, and its GPUs are free for the preemptor.

Not simulated: PodDisruptionBudgets, preemption of gang members as a group, nominated pods' reservations.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kubesim.scheduler import TERMINAL_PHASES, pod_requests, rejection
from kubesim.timestamps import moment_of, stamp

SCHEDULING = "scheduling.k8s.io/v1"
NEVER = "Never"
DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER = "DisruptionTarget", "PreemptionByScheduler"
DEFAULT_GRACE_SECONDS = 30  # core/v1 PodSpec terminationGracePeriodSeconds default
SIGTERM_EXIT_CODE = 143


def priority_classes(fake) -> dict[str, dict[str, Any]]:
    try:
        return {c["metadata"]["name"]: c for c in fake.find(SCHEDULING, "PriorityClass")}
    except LookupError:  # not served on this fake
        return {}


def _class_of(pod: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    name = (pod.get("spec") or {}).get("priorityClassName")
    if name:
        return classes.get(name) or {}
    return next((c for c in classes.values() if c.get("globalDefault")), {})


def priority_of(pod: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> int:
    spec = pod.get("spec") or {}
    if isinstance(spec.get("priority"), int):
        return spec["priority"]
    return int(_class_of(pod, classes).get("value") or 0)


def admit(fake, spec: dict[str, Any]) -> None:
    """What the Priority admission plugin does to a new pod's spec: `priority` (and `preemptionPolicy`) from its
    class, or from the default class."""
    if isinstance(spec.get("priority"), int):
        return
    classes = priority_classes(fake)
    chosen = _class_of({"spec": spec}, classes)
    spec["priority"] = int(chosen.get("value") or 0)
    if chosen:
        spec.setdefault("preemptionPolicy", chosen.get("preemptionPolicy") or "PreemptLowerPriority")


def may_preempt(pod: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> bool:
    policy = (pod.get("spec") or {}).get("preemptionPolicy") or _class_of(pod, classes).get("preemptionPolicy")
    return policy != NEVER


def terminating(pod: Mapping[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _shifted(used: Mapping[str, int], pods: Sequence[Mapping[str, Any]], sign: int) -> dict[str, int]:
    """`used` with what `pods` hold taken away (sign -1) or added back (+1)."""
    held = dict(used)
    for pod in pods:
        for resource, count in {**pod_requests(pod), "pods": 1}.items():
            held[resource] = held.get(resource, 0) + sign * count
    return held


def victims_on(pod: Mapping[str, Any], node: Mapping[str, Any], running: Sequence[Mapping[str, Any]],
               used: Mapping[str, int], classes: Mapping[str, Mapping[str, Any]]) -> list[dict] | None:
    """The fewest lower-priority pods of `running` (those bound to `node`) to remove so that `pod` fits there;
    None when even removing all of them would not do."""
    mine = priority_of(pod, classes)
    lower = [p for p in running if priority_of(p, classes) < mine and not terminating(p)]
    if not lower:
        return None
    room = _shifted(used, lower, -1)
    if rejection(pod, node, room):
        return None
    victims = []
    # Put back the most important first (the oldest first among equals): whoever then does not fit is a victim.
    for candidate in sorted(lower, key=lambda p: (-priority_of(p, classes), p["metadata"].get("creationTimestamp", ""))):
        back = _shifted(room, [candidate], +1)
        if rejection(pod, node, back):
            victims.append(candidate)
        else:
            room = back
    return victims


def _waiting_for_victims(pod: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> bool:
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    return bool(nominated) and any(
        p["spec"].get("nodeName") == nominated and terminating(p) and _preempted(p) for p in pods)


def _preempted(pod: Mapping[str, Any]) -> bool:
    return any(c.get("type") == DISRUPTION_TARGET and c.get("reason") == PREEMPTION_BY_SCHEDULER
               for c in (pod.get("status") or {}).get("conditions") or [])


def preempt(fake, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
            used: Mapping[str, Mapping[str, int]], now: float) -> str | None:
    """Preempt for `pod`, which fits on no node now: the node nominated (victims marked and deleted with their
    grace period), or None when preemption does not help (or the pod must not preempt, or waits for its victims)."""
    classes = priority_classes(fake)
    if not may_preempt(pod, classes) or _waiting_for_victims(pod, pods):
        return None
    bound = [p for p in pods if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") not in
             TERMINAL_PHASES and not terminating(p)]
    if not any(priority_of(p, classes) < priority_of(pod, classes) for p in bound):
        return None  # nobody to preempt: the common case, decided without looking at the nodes
    best = None
    for node in nodes:
        name = node["metadata"]["name"]
        if any(not r.startswith("Insufficient ") for r in rejection(pod, node, {})):
            continue  # a cordon, a selector or a taint: no preemption helps
        running = [p for p in bound if p["spec"]["nodeName"] == name]
        victims = victims_on(pod, node, running, used.get(name, {}), classes)
        if not victims:
            continue
        rank = (max(priority_of(v, classes) for v in victims), len(victims), name)
        if best is None or rank < best[0]:
            best = (rank, name, victims)
    if best is None:
        return None
    _, name, victims = best
    for victim in victims:
        _evict(fake, victim, pod, name, now)
    fake.patch_status("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"],
                      {"nominatedNodeName": name})
    return name


def _evict(fake, victim: Mapping[str, Any], preemptor: Mapping[str, Any], node: str, now: float) -> None:
    meta = victim["metadata"]
    scheduler = preemptor["spec"].get("schedulerName") or "default-scheduler"
    conditions = [c for c in victim["status"].get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
    conditions.append({"type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
                       "message": f"{scheduler}: preempting to accommodate a higher priority pod",
                       "lastProbeTime": None, "lastTransitionTime": stamp(now)})
    fake.patch_status("v1", "Pod", meta["name"], meta["namespace"], {"conditions": conditions})
    grace = victim["spec"].get("terminationGracePeriodSeconds")
    grace = DEFAULT_GRACE_SECONDS if grace is None else int(grace)
    fake.patch("v1", "Pod", meta["name"], meta["namespace"], {"metadata": {
        "deletionTimestamp": stamp(now + grace), "deletionGracePeriodSeconds": max(grace, 1)}})
    at = stamp(now)
    fake.put({"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
              "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                 "namespace": meta["namespace"], "uid": meta.get("uid", "")},
              "related": {"apiVersion": "v1", "kind": "Pod", "name": preemptor["metadata"]["name"],
                          "namespace": preemptor["metadata"]["namespace"],
                          "uid": preemptor["metadata"].get("uid", "")},
              "reason": "Preempted", "type": "Normal", "action": "Preempting",
              "message": f"Preempted by pod {preemptor['metadata'].get('uid', '')} on node {node}",
              "source": {"component": scheduler}, "reportingComponent": scheduler,
              "firstTimestamp": at, "lastTimestamp": at, "count": 1})


def terminate_due(fake, pods: Sequence[Mapping[str, Any]], now: float) -> None:
    """The kubelet's side of a graceful deletion: once the grace period is over, the containers are stopped, the
    pod turns Failed and is removed from the API."""
    for pod in pods:
        deadline = pod["metadata"].get("deletionTimestamp")
        if not deadline or now < moment_of(deadline):
            continue
        meta, at = pod["metadata"], stamp(now)
        if (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            statuses = []
            for status in pod["status"].get("containerStatuses") or []:
                started = (status.get("state") or {}).get("running", {}).get("startedAt")
                statuses.append({**status, "ready": False, "started": False, "state": {"terminated": {
                    "exitCode": SIGTERM_EXIT_CODE, "reason": "Error", "startedAt": started, "finishedAt": at}}})
            fake.patch_status("v1", "Pod", meta["name"], meta["namespace"],
                              {"phase": "Failed", "containerStatuses": statuses})
        fake.remove("v1", "Pod", meta["name"], meta["namespace"])
