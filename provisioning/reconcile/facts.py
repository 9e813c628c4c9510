"""Pod dicts (as the API server sends them) -> facts: what a pod says about itself, in the terms the status rules
and the plain-words events need. Pure: no Django, no I/O; a pod that lacks a field simply lacks that fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from .. import contract
from ..contract import parse_time

# Waiting reasons of a container whose image cannot be fetched. The first two are retried by the kubelet with
# back-off (they may still succeed: a registry outage, a late push); the last two never will.
IMAGE_PULL_RETRYING = frozenset({"ImagePullBackOff", "ErrImagePull"})
IMAGE_PULL_HOPELESS = frozenset({"InvalidImageName", "ErrImageNeverPull"})
IMAGE_PULL_REASONS = IMAGE_PULL_RETRYING | IMAGE_PULL_HOPELESS
# Waiting reasons that mean the container cannot be created or started (a missing Secret, a bad command).
CONTAINER_START_ERRORS = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})
CRASH_LOOP = "CrashLoopBackOff"
# Set by the Job controller on each pod of an Indexed Job (annotation; also a label since Kubernetes 1.28).
JOB_INDEX_KEY = "batch.kubernetes.io/job-completion-index"

# The DisruptionTarget reason kube-scheduler gives a pod it preempts (k8s.io/api v0.35 core/v1 types.go
# PodReasonPreemptionByScheduler; set in pkg/scheduler/framework/preemption/preemption.go prepareCandidate).
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

PENDING, RUNNING, SUCCEEDED, FAILED, UNKNOWN = "Pending", "Running", "Succeeded", "Failed", "Unknown"
TERMINAL_PHASES = frozenset({SUCCEEDED, FAILED})


def _decimal(value: Any) -> Decimal:
    try:
        return Decimal(str(value)) if value not in (None, "") else Decimal(0)
    except InvalidOperation:
        return Decimal(0)


@dataclass(frozen=True, slots=True)
class Termination:
    """How a container run ended (its current state, or the last one before a restart)."""

    reason: str  # OOMKilled, Error, Completed, ContainerCannotRun, ...
    exit_code: int | None
    message: str
    signal: int | None
    started_at: datetime | None
    finished_at: datetime | None
    raw_finished_at: str  # as the API wrote it: part of the event's de-duplication key

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and self.reason in ("", "Completed")


@dataclass(frozen=True, slots=True)
class ContainerFact:
    name: str
    image: str
    init: bool
    ready: bool
    restarts: int
    state: str  # waiting | running | terminated | "" (not reported yet)
    waiting_reason: str
    waiting_message: str
    running_since: datetime | None
    terminated: Termination | None
    last_terminated: Termination | None


@dataclass(frozen=True, slots=True)
class PodFact:
    uid: str
    name: str
    namespace: str
    request_id: int
    phase: str
    reason: str  # status.reason, e.g. Evicted, DeadlineExceeded
    message: str
    node: str
    created_at: datetime | None
    started_at: datetime | None  # status.startTime: the kubelet accepted the pod
    scheduled: bool | None  # the PodScheduled condition; None when the scheduler has not reported yet
    unschedulable_reason: str  # PodScheduled=False: Unschedulable, SchedulingGated, ...
    unschedulable_message: str  # the scheduler's own words: "0/12 nodes are available: ..."
    unschedulable_since: str  # the condition's lastTransitionTime, raw
    scheduling_gates: tuple[str, ...]
    ready: bool
    disrupted: bool  # DisruptionTarget=True: preempted, evicted, drained (not the workload's fault)
    disruption_reason: str
    deleting: bool
    gpu_equivalents: Decimal  # per pod, from the renderer's annotation
    completion_index: int | None
    containers: tuple[ContainerFact, ...]
    priority: int | None = None  # spec.priority, as the Priority admission plugin resolved it from the class
    priority_class: str = ""
    nominated_node: str = ""  # status.nominatedNodeName: the node the scheduler preempted pods on for this one
    grace_seconds: int | None = None  # spec.terminationGracePeriodSeconds (the API's default is 30)
    deleting_at: datetime | None = None  # metadata.deletionTimestamp: when its grace period is over

    @property
    def preempted(self) -> bool:
        return self.disrupted and self.disruption_reason == PREEMPTION_BY_SCHEDULER

    @property
    def evicted(self) -> bool:
        return self.reason == "Evicted"

    @property
    def counts_as_failure(self) -> bool:
        """A failed pod the Job's backoff limit counts: not one the cluster took away (podFailurePolicy Ignore)."""
        return self.phase == FAILED and not self.disrupted and not self.evicted

    @property
    def running_since(self) -> datetime | None:
        """When the workload started running: the earliest running container, else the kubelet's start time."""
        times = [c.running_since for c in self.containers if c.running_since and not c.init]
        return min(times) if times else (self.started_at or self.created_at)

    @property
    def ran(self) -> bool:
        """Whether a (non-init) container of the pod ever started."""
        return any(
            c.running_since or (c.terminated and c.terminated.started_at) or c.last_terminated
            for c in self.containers
            if not c.init
        )

    @property
    def pending_since(self) -> datetime | None:
        # A pod never goes back to Pending: it has been pending since it was created.
        return self.created_at

    @property
    def rank(self) -> str:
        """How the pod is named in plain words: its name, with the Job index when it has one."""
        return self.name if self.completion_index is None else f"{self.name} (rank {self.completion_index})"


def _termination(raw: Mapping[str, Any] | None) -> Termination | None:
    if not raw:
        return None
    exit_code = raw.get("exitCode")
    return Termination(
        reason=raw.get("reason") or "",
        exit_code=int(exit_code) if isinstance(exit_code, int) else None,
        message=(raw.get("message") or "").strip(),
        signal=raw.get("signal"),
        started_at=parse_time(raw.get("startedAt")),
        finished_at=parse_time(raw.get("finishedAt")),
        raw_finished_at=raw.get("finishedAt") or "",
    )


def _container(status: Mapping[str, Any], images: Mapping[str, str], *, init: bool) -> ContainerFact:
    state = status.get("state") or {}
    waiting, running, terminated = state.get("waiting"), state.get("running"), state.get("terminated")
    return ContainerFact(
        name=status.get("name", ""),
        image=status.get("image") or images.get(status.get("name", ""), ""),
        init=init,
        ready=bool(status.get("ready")),
        restarts=int(status.get("restartCount") or 0),
        state="waiting" if waiting is not None else "running" if running is not None else
              "terminated" if terminated is not None else "",  # fmt: skip
        waiting_reason=(waiting or {}).get("reason") or "",
        waiting_message=((waiting or {}).get("message") or "").strip(),
        running_since=parse_time((running or {}).get("startedAt")),
        terminated=_termination(terminated),
        last_terminated=_termination((status.get("lastState") or {}).get("terminated")),
    )


def request_id_of(pod: Mapping[str, Any], label_domain: str) -> int | None:
    """The request a pod counts for (the cluster-object contract decides); None for pods the portal did not create."""
    return contract.bound_request_id(contract.pod_identity(pod, label_domain))


def pod_fact(pod: Mapping[str, Any], *, request_id: int, label_domain: str) -> PodFact:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, Mapping)}
    scheduled_condition = conditions.get("PodScheduled")
    scheduled = None if scheduled_condition is None else scheduled_condition.get("status") == "True"
    disruption = conditions.get("DisruptionTarget") or {}
    declared = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    images = {c.get("name", ""): c.get("image", "") for c in declared}
    containers = tuple(
        [_container(c, images, init=True) for c in status.get("initContainerStatuses") or ()]
        + [_container(c, images, init=False) for c in status.get("containerStatuses") or ()]
    )
    index = annotations.get(JOB_INDEX_KEY) or labels.get(JOB_INDEX_KEY)
    unschedulable = scheduled_condition if scheduled is False else {}
    return PodFact(
        uid=meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or "",
        request_id=request_id,
        phase=status.get("phase") or PENDING,
        reason=status.get("reason") or "",
        message=(status.get("message") or "").strip(),
        node=spec.get("nodeName") or "",
        created_at=parse_time(meta.get("creationTimestamp")),
        started_at=parse_time(status.get("startTime")),
        scheduled=scheduled,
        unschedulable_reason=unschedulable.get("reason") or "",
        unschedulable_message=(unschedulable.get("message") or "").strip(),
        unschedulable_since=unschedulable.get("lastTransitionTime") or "",
        scheduling_gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
        ready=(conditions.get("Ready") or {}).get("status") == "True",
        disrupted=disruption.get("status") == "True",
        disruption_reason=(disruption.get("reason") or "") if disruption.get("status") == "True" else "",
        deleting=bool(meta.get("deletionTimestamp")),
        gpu_equivalents=_decimal(contract.pod_annotation(pod, contract.GPU_EQUIVALENTS, label_domain)),
        completion_index=int(index) if isinstance(index, str) and index.isdigit() else None,
        containers=containers,
        priority=spec.get("priority") if isinstance(spec.get("priority"), int) else None,
        priority_class=spec.get("priorityClassName") or "",
        nominated_node=status.get("nominatedNodeName") or "",
        grace_seconds=spec.get("terminationGracePeriodSeconds")
        if isinstance(spec.get("terminationGracePeriodSeconds"), int) else None,
        deleting_at=parse_time(meta.get("deletionTimestamp")),
    )


def facts_by_request(pods: Iterable[Mapping[str, Any]], *, label_domain: str) -> dict[int, list[PodFact]]:
    """The portal's pods grouped by request id, each turned into facts; other pods are left out."""
    grouped: dict[int, list[PodFact]] = {}
    for pod in pods:
        request_id = request_id_of(pod, label_domain)
        if request_id is not None:
            grouped.setdefault(request_id, []).append(pod_fact(pod, request_id=request_id, label_domain=label_domain))
    for facts in grouped.values():
        facts.sort(key=lambda f: (f.completion_index if f.completion_index is not None else -1, f.name))
    return grouped
