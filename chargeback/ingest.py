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

**Which request** (docs/chargeback.md): the one whose object the portal applied is the pod's controller, or its
controller's controller, by UID and in the pod's namespace (`contract.applied_request_id`); the request-id label
is only what the pod claims (`claimed_request_id`). Everything else is found in the cluster.

**Bounded reads.** Every text read from the pod is checked against the column it is stored in (`FIELD_LIMITS`): an
identity field (uid, namespace, name) that does not fit makes the pod unreadable (`Unreadable`, skipped and
reported by the service); an annotation that does not fit is read as absent and reported (`PodUsage.problems`).

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
    claimed_request_id: int | None = None  # its request-id label: a claim, not what it is billed as
    resource_devices: int | None = None  # GPUs, slices or replicas its containers ask for (spec resources)
    problems: tuple[str, ...] = ()  # what was read as absent because it did not fit
    node: str = ""  # spec.nodeName: where a pod that does not say its GPU model ran
    preempted: bool = False  # the scheduler preempted it (DisruptionTarget, reason PreemptionByScheduler)


# The columns the fields are stored in (chargeback.models.UsageInterval); tests/chargeback check they agree.
FIELD_LIMITS = {"pod_uid": 64, "namespace": 63, "pod_name": 253, "team": 40, "cluster": 40, "strategy": 20,
                "gpu_model": 40, "mig_profile": 40, "annotated_equivalents": 40}
IDENTITY_FIELDS = ("pod_uid", "namespace", "pod_name")
NVIDIA_PREFIX = "nvidia.com/"


class Unreadable(ValueError):
    """A pod whose status or identity cannot be read as the API server writes it: skipped, never guessed."""


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


NO_OWNERS = contract.Owners(applied={}, between={})


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def resource_devices(pod: dict) -> int | None:
    """The NVIDIA devices (GPUs, MIG slices, shared replicas) the pod's containers ask for, from its spec."""
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = (container or {}).get("resources") or {}
        merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        total += sum(_int_or_none(v) or 0 for k, v in merged.items() if str(k).startswith(NVIDIA_PREFIX))
    return total or None


def pod_usage(pod: dict, *, label_domain: str, owners: contract.Owners = NO_OWNERS) -> PodUsage | None:
    """One pod -> its usage record; None for a pod of someone else or one that has not started a container.
    Raises Unreadable for a pod that cannot be read (a malformed time, an identity field too long for its column)."""
    metadata = pod.get("metadata") or {}
    identity = contract.pod_identity(pod, label_domain)
    if not identity.managed:
        return None
    try:
        interval = pod_interval(pod.get("status") or {}, deleting=bool(metadata.get("deletionTimestamp")))
    except (TypeError, ValueError, AttributeError) as exc:
        raise Unreadable(f"unreadable status ({type(exc).__name__})") from exc
    if interval is None:
        return None
    started_at, ended_at, end_source = interval
    fields = {"pod_uid": _text(metadata.get("uid")), "namespace": identity.namespace, "pod_name": identity.name}
    if not fields["pod_uid"]:
        raise Unreadable("no uid")
    for name in IDENTITY_FIELDS:
        if len(fields[name]) > FIELD_LIMITS[name]:
            raise Unreadable(f"{name} over {FIELD_LIMITS[name]} characters")
    problems: list[str] = []

    def bounded(name: str, value) -> str:
        value = _text(value)
        if len(value) > FIELD_LIMITS[name]:
            problems.append(f"{name} over {FIELD_LIMITS[name]} characters, read as absent")
            return ""
        return value

    return PodUsage(
        **fields,
        request_id=contract.applied_request_id(identity, owners),
        team=bounded("team", identity.team),
        cluster=bounded("cluster", identity.cluster),
        strategy=bounded("strategy", identity.strategy),
        gpu_model=bounded("gpu_model", contract.pod_annotation(pod, contract.GPU_MODEL, label_domain)),
        mig_profile=bounded("mig_profile", contract.pod_annotation(pod, contract.MIG_PROFILE, label_domain)),
        devices=_int_or_none(contract.pod_annotation(pod, contract.DEVICES, label_domain)),
        annotated_equivalents=bounded("annotated_equivalents",
                                      _text(contract.pod_annotation(pod, contract.GPU_EQUIVALENTS, label_domain)).strip()),
        started_at=started_at,
        ended_at=ended_at,
        end_source=end_source,
        claimed_request_id=identity.request_id,
        resource_devices=resource_devices(pod),
        problems=tuple(problems),
        node=_text((pod.get("spec") or {}).get("nodeName")),
        preempted=any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                      and c.get("reason") == PREEMPTION_BY_SCHEDULER
                      for c in (pod.get("status") or {}).get("conditions") or []),
    )


def pods_usage(pods: Iterable[dict], *, label_domain: str,
               owners: contract.Owners = NO_OWNERS) -> tuple[list[PodUsage], list[str]]:
    """Usage records of the pods that have one, one per pod UID (the last one listed wins), and why each pod that
    could not be read was skipped ("namespace/name: reason"): one bad pod never stops the others."""
    records: dict[str, PodUsage] = {}
    skipped: list[str] = []
    for pod in pods:
        try:
            record = pod_usage(pod, label_domain=label_domain, owners=owners)
        except (Unreadable, TypeError, ValueError, AttributeError) as exc:
            metadata = pod.get("metadata") if isinstance(pod, dict) else None
            metadata = metadata if isinstance(metadata, dict) else {}
            where = f"{_text(metadata.get('namespace'))[:63]}/{_text(metadata.get('name'))[:253]}"
            skipped.append(f"{where}: skipped, {exc}")
            continue
        if record is not None:
            records[record.pod_uid] = record
    return list(records.values()), skipped


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
