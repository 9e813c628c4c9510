"""The gang-fit check: can a request's pods be placed on its pool's nodes, per node, now? A pure function over plain
node snapshots (no ORM, no network); `provisioning.selectors.request_fit` feeds it from the last inventory sync.

Per node, free = allocatable GPU resources minus what non-terminated pods hold there. A node takes part only if
it is usable for the pool, has the decided GPU model, meets the driver floor, is not cordoned, and every NoSchedule
/ NoExecute taint on it is tolerated (the renderer tolerates the pool's taints). Pods are identical, so a node
holds `free // per_pod` of them; they are placed greedily, tightest node first (bin-packing leaves the big holes
for others). A gang must fit all at once; other multi-pod requests are answered the same way (the pods that do
not fit would wait), with the number that could start now.

Answers: `fits_now`; `fits_after` with the running work that must finish first (earliest known end first; work
without an expected end last), or `never` with the reason. "Never" means: not even with every schedulable node
empty, as the nodes and the layout are now.
"""
from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FITS_NOW, FITS_AFTER, NEVER = "fits_now", "fits_after", "never"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class NodeSlot:
    name: str
    gpu_model: str | None
    resources: Mapping[str, int]  # allocatable GPU resource keys -> count
    used: Mapping[str, int] = field(default_factory=dict)
    schedulable: bool = True
    taints: tuple[Mapping[str, str], ...] = ()
    driver_major: int | None = None
    mig_devices: Mapping[str, int] = field(default_factory=dict)
    mig_config: str = ""
    usable: bool = True


@dataclass(frozen=True)
class Holder:
    """Running work holding GPUs on the nodes: a portal request (all its pods) or a pod the portal did not make."""

    key: str
    label: str
    held: Mapping[str, Mapping[str, int]]  # node -> {resource key: count}
    request_id: int | None = None
    team: str = ""
    expected_end: datetime.datetime | None = None


@dataclass(frozen=True)
class Demand:
    resource: str  # the GPU resource key each pod asks for
    per_pod: int
    pods: int
    gang: bool
    gpu_model: str
    unit: str  # "GPU", "1g.18gb slice", "time-sliced share"
    profile: str | None = None  # MIG: the slice; also pins MIG `single` nodes to that profile
    min_driver_major: int | None = None
    tolerations: tuple[Mapping[str, str], ...] = ()
    driver_branch: int | None = None


@dataclass
class FitAnswer:
    verdict: str
    reason: str
    pods_fitting_now: int = 0
    placement: dict[str, int] = field(default_factory=dict)
    must_finish: list[Holder] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "pods_fitting_now": self.pods_fitting_now,
            "placement": [{"node": n, "pods": p} for n, p in self.placement.items()],
            "must_finish": [
                {"request_id": h.request_id, "team": h.team, "label": h.label,
                 "expected_end": h.expected_end}
                for h in self.must_finish
            ],
            "excluded_nodes": [{"node": n, "reason": r} for n, r in sorted(self.excluded.items())],
        }  # fmt: skip


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def tolerated(taint: Mapping[str, str], tolerations: Sequence[Mapping[str, str]]) -> bool:
    """Kubernetes toleration matching for one taint (Exists / Equal on key, value and effect)."""
    if taint.get("effect") not in BLOCKING_EFFECTS:
        return True
    for toleration in tolerations:
        if toleration.get("key") not in (None, "", taint.get("key")):
            continue
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        value = toleration.get("value")
        if value in (None, "") or value == taint.get("value", ""):
            return True
    return False


def _offers(node: NodeSlot, demand: Demand) -> bool:
    if not node.resources.get(demand.resource):
        return False
    if demand.profile and demand.resource == "nvidia.com/gpu":  # MIG `single`: the slices are nvidia.com/gpu
        return demand.profile in node.mig_devices
    return True


def _exclusion(node: NodeSlot, demand: Demand) -> str | None:
    if not node.usable:
        return "does not serve what the pool is rendered for"
    if demand.gpu_model and node.gpu_model != demand.gpu_model:
        return f"has {node.gpu_model or 'unknown'} GPUs, not {demand.gpu_model}"
    if demand.min_driver_major and (node.driver_major or 0) < demand.min_driver_major:
        return f"runs driver {node.driver_major or 'unknown'}, below the floor {demand.min_driver_major}"
    if demand.driver_branch and node.driver_major != demand.driver_branch:
        return f"runs driver {node.driver_major or 'unknown'}, not the {demand.driver_branch} branch"
    if not _offers(node, demand):
        return f"offers no {demand.unit}"
    if not node.schedulable:
        return "is cordoned"
    for taint in node.taints:
        if not tolerated(taint, demand.tolerations):
            shown = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}".replace("=:", ":")
            return f"has taint {shown}, which the request does not tolerate"
    return None


def _capacity(free: Mapping[str, Mapping[str, int]], demand: Demand) -> dict[str, int]:
    return {name: max(per.get(demand.resource, 0), 0) // demand.per_pod for name, per in free.items()}


def _place(capacity: Mapping[str, int], pods: int) -> dict[str, int]:
    """Greedy bin-packing: the tightest nodes that can hold a pod first, then by name."""
    placement: dict[str, int] = {}
    for name, room in sorted(capacity.items(), key=lambda item: (item[1], item[0])):
        if pods <= 0:
            break
        if room <= 0:
            continue
        placement[name] = min(room, pods)
        pods -= placement[name]
    return placement


def _end_key(holder: Holder) -> tuple:
    known = holder.expected_end is not None
    when = holder.expected_end or datetime.datetime.max.replace(tzinfo=datetime.UTC)
    return (not known, when, holder.label)


def _describe(demand: Demand) -> str:
    return f"{_plural(demand.per_pod, demand.unit)} per pod"


def free_by_node(demand: Demand, nodes: Sequence[NodeSlot]) -> dict[str, int]:
    """Free units of the demanded resource on each node that could take the pods (the others left out)."""
    return {n.name: max(n.resources.get(demand.resource, 0) - n.used.get(demand.resource, 0), 0)
            for n in nodes if _exclusion(n, demand) is None}


def check_fit(demand: Demand, nodes: Sequence[NodeSlot], holders: Sequence[Holder] = ()) -> FitAnswer:
    """Where the request's pods go now, or what must finish first, or why never (module docstring)."""
    if not nodes:
        return FitAnswer(NEVER, "The pool has no nodes.")
    excluded = {n.name: why for n in nodes if (why := _exclusion(n, demand))}
    eligible = [n for n in nodes if n.name not in excluded]
    what = _describe(demand)

    if not any(_offers(n, demand) for n in nodes if n.usable):
        if demand.profile:
            layouts = sorted({n.mig_config or "none" for n in nodes})
            return FitAnswer(NEVER, f"Needs a {demand.profile} slice and no node offers that layout (the pool's "
                                    f"nodes run {', '.join(layouts)}); a MIG layout change would be needed.",
                             excluded=excluded)
        return FitAnswer(NEVER, f"No node of the pool offers a {demand.unit} ({demand.resource}).", excluded=excluded)
    if not eligible:
        why = "; ".join(f"{name} {reason}" for name, reason in sorted(excluded.items()))
        return FitAnswer(NEVER, f"No node can take these pods: {why}.", excluded=excluded)

    # Never: not even with every eligible node empty.
    empty = {n.name: dict(n.resources) for n in eligible}
    most = max(n.resources.get(demand.resource, 0) for n in eligible)
    if most < demand.per_pod:
        free_word = {"GPU": "free GPUs", "time-sliced share": "free time-sliced shares"}.get(
            demand.unit, f"free {demand.unit}s")
        return FitAnswer(
            NEVER,
            f"{what} but no node has {demand.per_pod} {free_word} of this model ({demand.gpu_model}): the most one "
            f"schedulable node has is {most}.",
            excluded=excluded,
        )
    ceiling = sum(_capacity(empty, demand).values())
    if ceiling < demand.pods:
        kind = "the gang needs" if demand.gang else "the request needs"
        return FitAnswer(
            NEVER,
            f"{kind.capitalize()} {_plural(demand.pods, 'pod')} of {what} at once but the pool's schedulable nodes "
            f"can hold at most {ceiling} even with nothing else running."
            if demand.gang else
            f"{kind.capitalize()} {_plural(demand.pods, 'pod')} of {what} but the pool's schedulable nodes can hold "
            f"at most {ceiling} even with nothing else running.",
            excluded=excluded,
        )  # fmt: skip

    free = {n.name: {k: v - n.used.get(k, 0) for k, v in n.resources.items()} for n in eligible}
    now = _capacity(free, demand)
    fitting_now = min(sum(now.values()), demand.pods)
    if fitting_now >= demand.pods:
        placement = _place(now, demand.pods)
        where = ", ".join(f"{p} on {n}" for n, p in placement.items())
        said = f"All {demand.pods} pods of {what} fit now" if demand.pods != 1 else f"Its pod of {what} fits now"
        return FitAnswer(FITS_NOW, f"{said}: {where}.",
                         pods_fitting_now=fitting_now, placement=placement, excluded=excluded)

    # Fits after: release running work, earliest expected end first, until the pods fit; then drop what did not
    # need to finish after all.
    def fits_without(released: Sequence[Holder]) -> bool:
        freed = {name: dict(per) for name, per in free.items()}
        for holder in released:
            for node, held in holder.held.items():
                if node in freed:
                    for key, count in held.items():
                        freed[node][key] = freed[node].get(key, 0) + count
        return sum(_capacity(freed, demand).values()) >= demand.pods

    relevant = [h for h in holders if any(node in free and demand.resource in held for node, held in h.held.items())]
    released: list[Holder] = []
    for holder in sorted(relevant, key=_end_key):
        released.append(holder)
        if fits_without(released):
            break
    for holder in reversed(list(released)):
        trial = [h for h in released if h is not holder]
        if fits_without(trial):
            released = trial
    if not fits_without(released):  # what holds the GPUs is not known (pods gone since the sync)
        released = []
    partial = f" {fitting_now} of {demand.pods} could start now; a gang waits for all." if demand.gang else (
        f" {fitting_now} of {demand.pods} could start now." if fitting_now else "")
    if not released:
        return FitAnswer(FITS_AFTER, f"The {_plural(demand.pods, 'pod')} of {what} do not fit now; the GPUs are "
                                     f"held by work the last sync could not attribute.{partial}",
                         pods_fitting_now=fitting_now, excluded=excluded)
    waits = " and ".join(
        f"{h.label} (expected to end {h.expected_end:%Y-%m-%d %H:%M} UTC)" if h.expected_end else
        f"{h.label} (no expected end)" for h in released
    )
    verb = "finishes" if len(released) == 1 else "finish"
    return FitAnswer(FITS_AFTER, f"Fits after {waits} {verb}.{partial}", pods_fitting_now=fitting_now,
                     must_finish=released, excluded=excluded)
