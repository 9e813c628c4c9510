"""Pure functions from Kubernetes pod objects (the API's JSON, as dicts) to GPU usage records.

No Django, no database: the service (`chargeback.services.usage_ingest`) adds the request row, the team and the
node pool, and writes. What this module decides:

**A pod's GPU interval.** The portal's pods hold their GPUs from the moment their first container starts until
the pod is finished, restarts and back-off included (the device stays allocated to the pod meanwhile). So:

* start: the earliest `startedAt` among `status.containerStatuses[]` — `state.running`, `state.terminated` and
  `lastState.terminated` (a restarted container's previous run). Kubernetes keeps only the last run of each
  container, so a later read may see a later start; the service keeps the earliest start it has ever seen.
* end: only once the pod is finished — phase `Succeeded` or `Failed`, or being deleted (`deletionTimestamp`) with
  every container terminated — the latest `finishedAt` among those containers. A finished pod with no finish
  time recorded (an eviction) ends at its latest condition transition. Otherwise the interval stays open.
* a pod none of whose containers has started yet (Pending, pulling) has no interval.
* a pod the scheduler preempted (condition `DisruptionTarget`, reason `PreemptionByScheduler`) is marked: its
  GPU time is the report's `preempted` category, what preemption cost its team.

Init containers are not counted: GPU work runs in the main containers.

**GPU equivalents** (per pod): whole GPU = devices; MIG = devices x profile slices / the GPU's slices (or the
memory fraction under the "memory" policy); time-slicing and MPS = devices / the pool's replicas.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Iterable

from gpu.equivalents import gpu_equivalents
from gpu.vocabulary import MIG
from gpu.vocabulary import STRATEGIES as STRATEGY_NAMES
from provisioning import contract
from provisioning.contract import parse_time as _parse_time
from provisioning.reconcile.facts import PREEMPTION_BY_SCHEDULER

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
STRATEGIES = frozenset(STRATEGY_NAMES)
ANNOTATION_TOLERANCE = Fraction(1, 10**6)


@dataclass(frozen=True)
class PodUsage:
    """What one pod says about its GPU time and share, read from its status, labels and annotations."""

    pod_uid: str
    namespace: str
    pod_name: str
    request_id: int | None
    team: str
    cluster: str
    strategy: str
    gpu_model: str
    mig_profile: str
    devices: int | None
    annotated_equivalents: str
    started_at: datetime
    ended_at: datetime | None
    end_source: str  # "" open, "container", "pod_condition"
    preempted: bool = False  # the scheduler preempted it (DisruptionTarget, reason PreemptionByScheduler)


def parse_time(value: str | None) -> datetime | None:
    """RFC 3339 as the API server writes it, always timezone-aware; a malformed stamp fails the ingest rather than
    being counted as a guess."""
    return _parse_time(value, strict=True)


def _int_or_none(value) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def pod_interval(status: dict, *, deleting: bool = False) -> tuple[datetime, datetime | None, str] | None:
    """(start, end or None, end_source) of a pod's GPU time from its status; None before any container ran."""
    starts: list[datetime] = []
    finishes: list[datetime] = []
    statuses = status.get("containerStatuses") or []
    all_terminated = bool(statuses)
    for container in statuses:
        state = container.get("state") or {}
        last = (container.get("lastState") or {}).get("terminated") or {}
        if "running" in state:
            all_terminated = False
            started = parse_time((state["running"] or {}).get("startedAt"))
            if started:
                starts.append(started)
        elif "terminated" in state:
            terminated = state["terminated"] or {}
            started, finished = parse_time(terminated.get("startedAt")), parse_time(terminated.get("finishedAt"))
            if started:
                starts.append(started)
            if finished:
                finishes.append(finished)
        else:  # waiting: restarting after a crash, or not started yet
            all_terminated = False
        if last:
            started, finished = parse_time(last.get("startedAt")), parse_time(last.get("finishedAt"))
            if started:
                starts.append(started)
            if finished:
                finishes.append(finished)
    if not starts:
        return None
    start = min(starts)
    finished_pod = status.get("phase") in FINISHED_PHASES or (deleting and all_terminated)
    if not finished_pod:
        return start, None, ""
    if finishes:
        return start, max(max(finishes), start), "container"
    conditions = [parse_time(c.get("lastTransitionTime")) for c in status.get("conditions") or []]
    conditions = [c for c in conditions if c]
    if conditions:
        return start, max(max(conditions), start), "pod_condition"
    return start, None, ""  # finished, but nothing says when: stays open until the pod disappears


def pod_usage(pod: dict, *, label_domain: str) -> PodUsage | None:
    """One pod -> its usage record; None for a pod of someone else or one that has not started a container."""
    metadata = pod.get("metadata") or {}
    identity = contract.pod_identity(pod, label_domain)
    if not identity.managed:
        return None
    interval = pod_interval(pod.get("status") or {}, deleting=bool(metadata.get("deletionTimestamp")))
    if interval is None:
        return None
    started_at, ended_at, end_source = interval
    return PodUsage(
        pod_uid=metadata["uid"],
        namespace=metadata.get("namespace", ""),
        pod_name=metadata.get("name", ""),
        request_id=contract.bound_request_id(identity),
        team=identity.team,
        cluster=identity.cluster,
        strategy=identity.strategy,
        gpu_model=contract.pod_annotation(pod, contract.GPU_MODEL, label_domain),
        mig_profile=contract.pod_annotation(pod, contract.MIG_PROFILE, label_domain),
        devices=_int_or_none(contract.pod_annotation(pod, contract.DEVICES, label_domain)),
        annotated_equivalents=contract.pod_annotation(pod, contract.GPU_EQUIVALENTS, label_domain).strip(),
        started_at=started_at,
        ended_at=ended_at,
        end_source=end_source,
        preempted=any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                      and c.get("reason") == PREEMPTION_BY_SCHEDULER
                      for c in (pod.get("status") or {}).get("conditions") or []),
    )


def pods_usage(pods: Iterable[dict], *, label_domain: str) -> list[PodUsage]:
    """Usage records of the pods that have one, one per pod UID (the last one listed wins)."""
    records: dict[str, PodUsage] = {}
    for pod in pods:
        record = pod_usage(pod, label_domain=label_domain)
        if record is not None:
            records[record.pod_uid] = record
    return list(records.values())


def expected_equivalents(
    *,
    strategy: str,
    devices: int,
    gpu_model: str,
    mig_profile: str,
    catalogue,
    time_slicing_replicas: int | None,
    policy: str = "compute",
) -> Fraction | None:
    """The exact GPU equivalents of a pod from the catalogue and its pool; None when they cannot be known."""
    model = catalogue.models.get(gpu_model) if strategy == MIG else None
    mig = model.mig if model else None
    profile = mig.profiles.get(mig_profile) if mig else None
    return gpu_equivalents(strategy, devices, mig=mig, profile=profile, replicas=time_slicing_replicas, policy=policy)


def annotation_fraction(annotation: str) -> Fraction | None:
    """The annotation's decimal as an exact fraction (None when it is not a positive number)."""
    try:
        value = Decimal(annotation)
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or value <= 0:
        return None
    return Fraction(value)


def annotation_agrees(annotation: str, exact: Fraction) -> bool:
    """True when the annotation is `exact` to six decimal places (the renderer writes e.g. "0.142857" for
    1/7): "0.25" agrees with 1/4, "0.3" does not."""
    value = annotation_fraction(annotation)
    return value is not None and abs(value - exact) <= ANNOTATION_TOLERANCE
