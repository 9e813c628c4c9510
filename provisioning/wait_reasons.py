"""Why an approved request is not (fully) running, what would unblock it and when it is likely to start. Pure: the
scheduler objects come in as the API server's dicts, the capacity as the fit check's answer, the running work as
plain holders; no Django, no I/O. `provisioning.wait_refresh` reads the cluster and stores what this says.

The reasons are read from the objects the schedulers write, in their own vocabulary:
- Kueue v0.19 (kubernetes-sigs/kueue v0.19.2, `apis/kueue/v1beta2/workload_types.go`): the Workload conditions
  `QuotaReserved` (reasons `WaitingForQuota`, `ExceedsMaxQuota`, `NoMatchingFlavor`, `WaitingForPodsReady`,
  `Pending`, ...) and `Admitted` (`UnsatisfiedAdmissionChecks`, `NoReservation`, `PendingDelayedTopologyRequests`);
  evicted and deactivated Workloads are read by `provisioning.wait_lifecycle`; the message of a quota shortage is written by
  `pkg/scheduler/flavorassigner/flavorassigner.go` as "insufficient unused quota for <resource> in flavor
  <flavor>, <n> more needed".
- Volcano v1.15.1 (`scheduling.volcano.sh/v1beta1` PodGroup): the gang plugin writes a condition of type
  `Unschedulable`, status True, reason `NotEnoughResources`, message "<n>/<m> tasks in gang unschedulable: ..."
  (`pkg/scheduler/plugins/gang/gang.go`; types in `staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1`).
- KAI v0.17.0 (`scheduling.run.ai/v2alpha2` PodGroup): `status.schedulingConditions[]` with `reasons[]` of
  {reason, message, details}; the quota reasons are `NonPreemptibleOverQuota` and `OverLimit`, others
  `QueueDoesNotExist`, `PreemptionDelayNotElapsed` (`pkg/apis/scheduling/v2alpha2/podgroup_types.go`).
- native gang scheduling (`scheduling.k8s.io` PodGroup, 1.36+): any `status.conditions[]` that is False for a
  `...Scheduled` type or True for an `Unschedulable` one.
- the pods: `PodScheduled=False` with its reason (Unschedulable, SchedulingGated) and the scheduler's message,
  e.g. "0/12 nodes are available: 8 Insufficient nvidia.com/gpu".
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpu.vocabulary import KAI

QUOTA, CAPACITY, ADMISSION, GANG, SCHEDULING = "quota", "capacity", "admission", "gang", "scheduling"

KUEUE_QUOTA_REASONS = {
    "WaitingForQuota": (QUOTA, "the team's queue has no unused quota for it yet"),
    "ExceedsMaxQuota": (QUOTA, "it asks for more than the team's queue can ever hold"),
    "NoMatchingFlavor": (CAPACITY, "no resource flavor of the queue matches what it asks for"),
    "TopologyPlacementFailed": (CAPACITY, "Kueue found no topology domain that holds the whole gang"),
    "WaitingForPreemptedWorkloads": (QUOTA, "Kueue is preempting other work to make room for it"),
    "Misconfigured": (ADMISSION, "its queue is misconfigured"),
    "Suspended": (ADMISSION, "its queue is stopped"),
    "PendingEvaluation": (QUOTA, "Kueue has not evaluated it yet"),
    # waitForPodsReady: one workload at a time until those admitted before it have all their pods ready.
    "WaitingForPodsReady": (ADMISSION, "Kueue holds it until the workloads admitted before it have all their pods "
                                       "ready (waitForPodsReady)"),
    "Pending": (QUOTA, "it waits in the team's queue"),
    "Inadmissible": (ADMISSION, "Kueue cannot admit it to its queue"),
}
KUEUE_ADMITTED_REASONS = {
    "UnsatisfiedAdmissionChecks": (ADMISSION, "quota is reserved; it waits for its admission checks"),
    "NoReservation": (QUOTA, "no quota is reserved for it yet"),
    "PendingDelayedTopologyRequests": (ADMISSION, "quota is reserved; Kueue is still choosing the topology domain "
                                                  "its pods go to (delayed topology request)"),
}
QUOTA_SHORTAGE = re.compile(r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), "
                            r"(?P<more>\d+) more needed")
INSUFFICIENT = re.compile(r"(\d+) Insufficient (\S+?)[,.]?(?:\s|$)")


@dataclass(frozen=True)
class Blocker:
    kind: str  # quota | capacity | admission | gang | scheduling
    source: str  # which object and field said so
    reason: str  # the system's reason, verbatim
    message: str  # the system's message, verbatim
    words: str  # the same in plain words


@dataclass(frozen=True)
class Running:
    """Work that holds what a waiting request needs: a request of the portal, with what it holds."""

    label: str
    holds: float  # GPU equivalents (quota) or GPUs (capacity)
    started_at: datetime.datetime | None
    expected_end: datetime.datetime | None
    basis: str  # how expected_end was found


@dataclass
class Estimate:
    start: datetime.datetime | None
    basis: str
    waits_for: list[str] = field(default_factory=list)


def _conditions(status: Mapping[str, Any], key: str = "conditions") -> list[Mapping[str, Any]]:
    return [c for c in status.get(key) or () if isinstance(c, Mapping)]


def kueue_blockers(workload: Mapping[str, Any]) -> list[Blocker]:
    """What a Kueue Workload's conditions say holds it (empty once it is admitted)."""
    meta, status = workload.get("metadata") or {}, workload.get("status") or {}
    where = f"Kueue Workload {meta.get('namespace', '')}/{meta.get('name', '')}"
    conditions = {c.get("type"): c for c in _conditions(status)}
    if (conditions.get("Admitted") or {}).get("status") == "True":
        return []
    found = []
    reserved = conditions.get("QuotaReserved")
    if reserved and reserved.get("status") == "False":
        kind, words = KUEUE_QUOTA_REASONS.get(reserved.get("reason", ""), (QUOTA, "it is not admitted to its queue"))
        found.append(Blocker(kind, f"{where}: condition QuotaReserved=False", reserved.get("reason", ""),
                             (reserved.get("message") or "").strip(), f"Not admitted by Kueue: {words}."))
    admitted = conditions.get("Admitted")
    if admitted and admitted.get("status") == "False" and not found:
        kind, words = KUEUE_ADMITTED_REASONS.get(admitted.get("reason", ""), (ADMISSION, "it is not admitted"))
        found.append(Blocker(kind, f"{where}: condition Admitted=False", admitted.get("reason", ""),
                             (admitted.get("message") or "").strip(), f"Not admitted by Kueue: {words}."))
    for check in status.get("admissionChecks") or ():
        if check.get("state") in ("Pending", "Retry", "Rejected"):
            found.append(Blocker(ADMISSION, f"{where}: admission check {check.get('name')}", check.get("state", ""),
                                 (check.get("message") or "").strip(),
                                 f"Admission check {check.get('name')} is {check.get('state', '').lower()}."))
    return found


def kueue_quota_shortage(blockers: Iterable[Blocker]) -> tuple[str, str, int] | None:
    """(resource, flavor, how many more) from Kueue's own message, when it names a quota shortage."""
    for blocker in blockers:
        match = QUOTA_SHORTAGE.search(blocker.message)
        if match:
            return match["resource"], match["flavor"], int(match["more"])
    return None


def podgroup_blockers(podgroup: Mapping[str, Any], backend: str) -> list[Blocker]:
    """What a gang scheduler's PodGroup says holds the gang (Volcano, KAI or native)."""
    meta, status = podgroup.get("metadata") or {}, podgroup.get("status") or {}
    where = f"{backend.capitalize() if backend != 'kai' else 'KAI'} PodGroup {meta.get('namespace', '')}/" \
            f"{meta.get('name', '')}"
    found = []
    if backend == KAI:
        for condition in _conditions(status, "schedulingConditions"):
            reasons = condition.get("reasons") or [{"reason": condition.get("reason", ""),
                                                    "message": condition.get("message", "")}]
            for reason in reasons:
                found.append(Blocker(_kind_of(reason.get("reason", ""), reason.get("message", "")),
                                     f"{where}: scheduling condition {condition.get('type', '')}",
                                     reason.get("reason", ""), (reason.get("message") or "").strip(),
                                     "The KAI scheduler cannot place the gang yet."))
        return found
    for condition in _conditions(status):
        kind_of, value = condition.get("type", ""), condition.get("status")
        stuck = (kind_of == "Unschedulable" and value == "True") or (kind_of.endswith("Scheduled") and value == "False")
        if stuck:
            found.append(Blocker(_kind_of(condition.get("reason", ""), condition.get("message", ""), gang=True),
                                 f"{where}: condition {kind_of}={value}", condition.get("reason", ""),
                                 (condition.get("message") or "").strip(),
                                 "The gang scheduler cannot place the whole gang yet."))
    return found


def _kind_of(reason: str, message: str, *, gang: bool = False) -> str:
    text = f"{reason} {message}".lower()
    if "quota" in text or "overlimit" in text:
        return QUOTA
    if "insufficient" in text or "notenoughresources" in text or "resource" in text:
        return CAPACITY
    return GANG if gang else SCHEDULING


def pod_blockers(pods: Sequence[Any]) -> list[Blocker]:
    """Each pending pod the scheduler could not place, named (with its rank) and with the scheduler's words.
    `pods`: provisioning.reconcile PodFacts."""
    found = []
    for pod in pods:
        if pod.phase != "Pending" or pod.scheduled is not False:
            continue
        reason = pod.unschedulable_reason or "Unschedulable"
        words = (f"Pod {pod.rank} waits for its scheduling gates ({', '.join(pod.scheduling_gates)})."
                 if reason == "SchedulingGated" else f"Pod {pod.rank} cannot be placed on any node.")
        if pod.nominated_node and reason != "SchedulingGated":
            # kube-scheduler preempted lower-priority pods there for it (status.nominatedNodeName, v1.35
            # pkg/scheduler/framework/preemption): it binds once they have stopped, after their grace period.
            words = (f"Pod {pod.rank} outranks work on node {pod.nominated_node}: the scheduler preempted lower-priority "
                     "pods there to make room, and it starts once they have stopped (each gets its termination grace "
                     "period to checkpoint first).")
        found.append(Blocker(CAPACITY if INSUFFICIENT.search(pod.unschedulable_message) else SCHEDULING,
                             f"Pod {pod.namespace}/{pod.name}: condition PodScheduled=False", reason,
                             pod.unschedulable_message, words))
    return found


def missing_members(pods: Sequence[Any], wanted: int) -> list[str]:
    """In plain words, which members of a gang are not running and why (the scheduler's message)."""
    lines = []
    running = [p for p in pods if p.phase == "Running"]
    for pod in pods:
        if pod.phase == "Running":
            continue
        why = pod.unschedulable_message or pod.unschedulable_reason or pod.reason or "not scheduled yet"
        lines.append(f"{pod.rank} is {pod.phase}: {why}")
    absent = wanted - len(pods)
    if absent > 0:
        lines.append(f"{absent} member{'s' if absent != 1 else ''} not created yet ({len(running)} of {wanted} "
                     "running)")
    return lines


def quota_unblock(*, team: str, unit: str, limit: float, held: float, needed: float,
                  running: Sequence[Running]) -> tuple[str, Estimate]:
    """"team vision holds 16 of 16 H100 GPUs; 8 free up when #12 vision/sweep finishes", with the estimate: the
    running work of the team is released earliest expected end first until `needed` is free."""
    free = max(limit - held, 0)
    head = f"Team {team} holds {_n(held)} of {_n(limit)} {unit}"
    if needed <= free:
        return f"{head}; {_n(free)} are free, enough for it.", Estimate(None, "quota is not what holds it")
    released, freed = [], free
    for work in sorted(running, key=_end_key):
        released.append(work)
        freed += work.holds
        if freed >= needed:
            break
    if freed < needed:
        return (f"{head} and it needs {_n(needed)}: more than the quota frees up even when all of the team's "
                "running work finishes; the platform team must raise the quota.",
                Estimate(None, "the quota can never hold it"))
    names = " and ".join(w.label for w in released)
    text = f"{head}; {_n(freed - free)} free up when {names} {'finishes' if len(released) == 1 else 'finish'}."
    return text, _after(released)


def capacity_unblock(fit_answer: Mapping[str, Any], fragmentation: str) -> tuple[str, Estimate]:
    """The fit check's answer ("fits after X finishes") with the free-GPU picture, and the estimate from the work that
    must finish first (fit_answer["must_finish"] holds fit.Holder-shaped dicts)."""
    verdict, reason = fit_answer.get("verdict"), fit_answer.get("reason", "")
    text = f"{fragmentation} {reason}".strip()
    if verdict == "fits_now":
        return text, Estimate(None, "the nodes have room now: the scheduler has not placed it yet")
    if verdict == "never":
        return text, Estimate(None, "it cannot fit the pool as it is now")
    released = [Running(label=h["label"], holds=0, started_at=None, expected_end=h.get("expected_end"),
                        basis="its start time plus its expected_hours") for h in fit_answer.get("must_finish") or ()]
    if not released:
        return text, Estimate(None, "what holds the GPUs is not known")
    return text, _after(released)


def _after(released: Sequence[Running]) -> Estimate:
    waits = [w.label for w in released]
    unknown = [w.label for w in released if w.expected_end is None]
    if unknown:
        return Estimate(None, f"{', '.join(unknown)} gave no expected run time and the team has no finished work of "
                              "the same class to measure", waits)
    latest = max(released, key=lambda w: w.expected_end)
    basis = "; ".join(f"{w.label} is expected to end {w.expected_end:%Y-%m-%d %H:%M} UTC ({w.basis})"
                      for w in released)
    return Estimate(latest.expected_end, basis, waits)


def fragmentation_words(*, per_pod: int, pods: int, unit: str, free_by_node: Mapping[str, int]) -> str:
    """"No node has 8 free GPUs; 3 nodes have 4." (or how many nodes have room for how many pods)."""
    units = f"{unit}s" if per_pod != 1 else unit
    roomy = sorted(n for n, free in free_by_node.items() if free >= per_pod)
    counts: dict[int, int] = {}
    for free in free_by_node.values():
        if free < per_pod:
            counts[free] = counts.get(free, 0) + 1
    rest = ", ".join(f"{c} node{'s' if c != 1 else ''} {'has' if c == 1 else 'have'} {free}"
                     for free, c in sorted(counts.items(), key=lambda item: -item[0]) if free > 0)
    if not roomy:
        return f"No node has {per_pod} free {units}" + (f"; {rest}." if rest else ".")
    have = f"{len(roomy)} node{'s' if len(roomy) != 1 else ''} ({', '.join(roomy)}) {'has' if len(roomy) == 1 else 'have'}"
    return (f"It needs {pods} pod{'s' if pods != 1 else ''} of {per_pod} {units}; {have} {per_pod} free"
            + (f", {rest}." if rest else "."))


def _end_key(work: Running) -> tuple:
    when = work.expected_end or datetime.datetime.max.replace(tzinfo=datetime.UTC)
    return (work.expected_end is None, when, work.label)


def _n(value: float) -> str:
    return f"{value:g}"


def as_dicts(blockers: Iterable[Blocker]) -> list[dict[str, str]]:
    return [asdict(b) for b in blockers]
