"""What the cluster says about a request's pods, in plain words, each with a de-duplication key.

A key names one fact about one pod (its uid, and for repeatable facts the time they happened), so the same
observation never makes the same event twice however many cycles see it, while a new crash, a new stint of
waiting for a node or a replacement pod does make a new one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .facts import (
    CONTAINER_START_ERRORS,
    CRASH_LOOP,
    FAILED,
    IMAGE_PULL_REASONS,
    RUNNING,
    SUCCEEDED,
    ContainerFact,
    PodFact,
    Termination,
)

MAX_TEXT = 1000  # scheduler messages on big clusters can run long; the page needs the gist


@dataclass(frozen=True, slots=True)
class PlainEvent:
    request_id: int
    key: str  # unique per request; at most 200 characters
    reason: str  # machine-readable cause, at most 63 characters (Scheduled, OOMKilled, Unschedulable, ...)
    text: str


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _sentence(text: str) -> str:
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _restarts(container: ContainerFact) -> str:
    return f"; restarts: {container.restarts}" if container.restarts else ""


def termination_words(container: ContainerFact, termination: Termination) -> str:
    """How a container run ended, e.g. "container main was killed because it ran out of memory (OOMKilled)"."""
    name = f"container {container.name}"
    reason, code = termination.reason, termination.exit_code
    if reason == "OOMKilled":
        return f"{name} was killed because it ran out of memory (OOMKilled){_restarts(container)}"
    detail = f": {termination.message}" if termination.message else ""
    if reason in ("", "Error") and code is not None:
        if code >= 128 and termination.signal is None:
            signal = code - 128
            return f"{name} exited with code {code} (killed by signal {signal}){detail}{_restarts(container)}"
        return f"{name} exited with code {code} (Error){detail}{_restarts(container)}"
    if reason == "Completed":
        return f"{name} finished (exit code {code if code is not None else 0})"
    code_words = f", exit code {code}" if code is not None else ""
    return f"{name} stopped ({reason or 'unknown reason'}{code_words}){detail}{_restarts(container)}"


def waiting_for_node_words(pod: PodFact) -> str:
    """Why a Pending pod has no node yet, in the scheduler's own words when it gave some."""
    if pod.unschedulable_reason == "SchedulingGated" or pod.scheduling_gates:
        gates = ", ".join(pod.scheduling_gates) or "a scheduling gate"
        return f"is held back from scheduling until {gates} releases it (e.g. admission by its queue)"
    if pod.unschedulable_message:
        return f"is waiting for a node: {pod.unschedulable_message}"
    return f"is waiting for a node ({pod.unschedulable_reason or 'not scheduled yet'})"


def _container_events(pod: PodFact, container: ContainerFact) -> Iterable[PlainEvent]:
    who = f"Pod {pod.name}: container {container.name}"
    reason = container.waiting_reason
    if reason in IMAGE_PULL_REASONS:
        detail = f": {container.waiting_message}" if container.waiting_message else ""
        yield PlainEvent(pod.request_id, f"{pod.uid}:{container.name}:image", reason,
                         _clip(_sentence(f"{who} cannot pull its image {container.image} ({reason}){detail}")))
    elif reason == CRASH_LOOP:
        yield PlainEvent(pod.request_id, f"{pod.uid}:{container.name}:crashloop", reason, _clip(_sentence(
            f"{who} keeps crashing and is restarted with a growing delay (CrashLoopBackOff){_restarts(container)}")))
    elif reason in CONTAINER_START_ERRORS:
        detail = f": {container.waiting_message}" if container.waiting_message else ""
        yield PlainEvent(pod.request_id, f"{pod.uid}:{container.name}:{reason}", reason,
                         _clip(_sentence(f"{who} cannot start ({reason}){detail}")))
    # Every run that ended badly, once: the current state and the last one before a restart share the key.
    for termination in (container.last_terminated, container.terminated):
        if termination is None or termination.succeeded:
            continue
        stamp = termination.raw_finished_at or str(container.restarts)
        yield PlainEvent(pod.request_id, f"{pod.uid}:{container.name}:exit:{stamp}", termination.reason or "Error",
                         _clip(_sentence(f"Pod {pod.name}: {termination_words(container, termination)}")))


@dataclass(frozen=True, slots=True)
class Preemptor:
    """A pod of the portal's that the scheduler preempted others for (its nominated node, or where it now runs)."""

    request_id: int
    name: str
    priority: int | None
    priority_class: str


def preemptors_by_node(pods: Iterable[PodFact]) -> dict[str, Preemptor]:
    """Per node, the portal's pod the scheduler preempted others there for: the highest-priority pod nominated to
    the node (status.nominatedNodeName), else the highest-priority one running there that is not itself being
    preempted."""
    nominated: dict[str, PodFact] = {}
    placed: dict[str, PodFact] = {}
    for pod in pods:
        for node, chosen in ((pod.nominated_node, nominated), (pod.node if not pod.preempted else "", placed)):
            if node and (node not in chosen or (pod.priority or 0) > (chosen[node].priority or 0)):
                chosen[node] = pod
    return {node: Preemptor(pod.request_id, pod.name, pod.priority, pod.priority_class)
            for node, pod in {**placed, **nominated}.items()}


def _priority_words(priority: int | None, priority_class: str) -> str:
    if priority is None and not priority_class:
        return "no priority class"
    named = f"priority class {priority_class}" if priority_class else "priority"
    return f"{named}, {priority}" if priority is not None else named


def preemption_words(pod: PodFact, preemptor: Preemptor | None) -> str:
    """Who preempted the pod and why, and how long it has to save its work."""
    who = ("a higher-priority pod" if preemptor is None else
           f"pod {preemptor.name} of request #{preemptor.request_id} "
           f"({_priority_words(preemptor.priority, preemptor.priority_class)})")
    grace = pod.grace_seconds if pod.grace_seconds is not None else 30
    return (f"Pod {pod.name} was preempted by the scheduler (PreemptionByScheduler) on node {pod.node or '(unknown)'}: "
            f"{who} needed its GPUs and outranks it ({_priority_words(pod.priority, pod.priority_class)}). It gets "
            f"its termination grace period of {grace} s to checkpoint (SIGTERM now, SIGKILL after), then it is "
            "stopped; this does not count against the job's retries.")


def pod_events(pod: PodFact, preemptor: Preemptor | None = None) -> list[PlainEvent]:
    """The plain-words events one pod's current state supports, in the order they happened (`preemptor`: who the
    scheduler preempted the pod for, when it did and the portal knows)."""
    events: list[PlainEvent] = []
    rid, uid = pod.request_id, pod.uid
    if pod.scheduled is False and pod.phase not in (SUCCEEDED, FAILED):
        reason = pod.unschedulable_reason or "Unschedulable"
        events.append(PlainEvent(rid, f"{uid}:unschedulable:{pod.unschedulable_since}"[:200], reason,
                                 _clip(_sentence(f"Pod {pod.name} {waiting_for_node_words(pod)}"))))
    if pod.node and pod.scheduled is not False:
        events.append(PlainEvent(rid, f"{uid}:scheduled", "Scheduled", f"Pod {pod.rank} scheduled on {pod.node}."))
    if pod.phase == RUNNING or pod.ran:
        where = pod.node or "its node"
        events.append(PlainEvent(rid, f"{uid}:started", "Started", f"Pod {pod.name} started on {where}."))
    for container in pod.containers:
        events.extend(_container_events(pod, container))
    if pod.preempted:
        events.append(PlainEvent(rid, f"{uid}:preempted", "Preempted", _clip(preemption_words(pod, preemptor))))
    if pod.phase == SUCCEEDED:
        events.append(PlainEvent(rid, f"{uid}:succeeded", "Completed", f"Pod {pod.name} completed successfully."))
    elif pod.phase == FAILED:
        detail = f": {pod.message}" if pod.message else ""
        if pod.evicted:
            text = f"Pod {pod.name} was evicted from node {pod.node or '(unknown)'}{detail}"
            events.append(PlainEvent(rid, f"{uid}:evicted", "Evicted", _clip(_sentence(text))))
        elif pod.disrupted and not pod.preempted:
            text = (f"Pod {pod.name} was stopped by the cluster ({pod.disruption_reason or 'DisruptionTarget'})"
                    f"{detail}; this does not count against the job's retries")
            events.append(PlainEvent(rid, f"{uid}:disrupted", (pod.disruption_reason or "Disrupted")[:63],
                                     _clip(_sentence(text))))
        else:
            events.append(PlainEvent(rid, f"{uid}:failed", (pod.reason or "Failed")[:63],
                                     _clip(_sentence(f"Pod {pod.name} failed{detail}"))))
    return events
