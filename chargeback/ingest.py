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

from gpu.catalogue import mig_equivalents  # pure Python, no Django
from gpu.vocabulary import REPLICATED
from gpu.vocabulary import STRATEGIES as STRATEGY_NAMES

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-portal"
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


def parse_time(value: str | None) -> datetime | None:
    """RFC 3339 as the API server writes it ("2026-11-03T10:00:00Z"), always timezone-aware."""
    if not value:
        return None
    return datetime.fromisoformat(value)


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
    labels = metadata.get("labels") or {}
    if labels.get(MANAGED_BY_KEY) != MANAGED_BY:
        return None
    interval = pod_interval(pod.get("status") or {}, deleting=bool(metadata.get("deletionTimestamp")))
    if interval is None:
        return None
    annotations = metadata.get("annotations") or {}
    d = label_domain
    started_at, ended_at, end_source = interval
    return PodUsage(
        pod_uid=metadata["uid"],
        namespace=metadata.get("namespace", ""),
        pod_name=metadata.get("name", ""),
        request_id=_int_or_none(labels.get(f"{d}/request-id")),
        team=labels.get(f"{d}/team", ""),
        cluster=labels.get(f"{d}/cluster", ""),
        strategy=labels.get(f"{d}/strategy", ""),
        gpu_model=annotations.get(f"{d}/gpu-model", ""),
        mig_profile=annotations.get(f"{d}/mig-profile", ""),
        devices=_int_or_none(annotations.get(f"{d}/devices")),
        annotated_equivalents=(annotations.get(f"{d}/gpu-equivalents") or "").strip(),
        started_at=started_at,
        ended_at=ended_at,
        end_source=end_source,
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
    if strategy == "whole_gpu":
        return Fraction(devices)
    if strategy == "mig":
        model = catalogue.models.get(gpu_model)
        if model is None or model.mig is None or mig_profile not in model.mig.profiles:
            return None
        return devices * mig_equivalents(model.mig.profiles[mig_profile], model.mig, policy=policy)
    if strategy in REPLICATED:
        if not time_slicing_replicas:
            return None
        return Fraction(devices, time_slicing_replicas)
    return None


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
