"""The MIG layout planner: from unmet MIG demand and the nodes' current layouts, the cheapest per-node
`nvidia.com/mig.config` changes that meet it, each with its cost. Pure functions: `provisioning.mig_plans` feeds them
from the database and executes what the platform team approves.

Demand is counted per pool (a request's pods are pinned to its pool's nodes): the MIG devices its pending and
approved requests ask for, minus what the pool's schedulable nodes have free of that profile now. A change is
node-wide (mig-manager applies one named layout to all its GPUs, reference §11): after it the node offers
`layout_profiles(layout) x GPUs`, all free, and every GPU workload on it has been interrupted or waited for.

Greedy, one node at a time: the (node, layout) that removes the most unmet demand (in compute slices) wins; ties
go to the cheaper change (fewer unknown end times, then the shorter drain, then fewer workloads), then to the
layout that keeps most of what the node offers now, then to names. Each node changes at most once per plan;
nodes mid-reconfiguration, cordoned or of another model are left alone. Cost of a change: 30-60 s per GPU for the
reconfiguration (no official figure exists; mig-manager's own timeouts are minutes) plus the longest expected
remaining run time of the GPU workloads on the node (unknown when a workload gave no expected_hours).
"""
from __future__ import annotations

from portal.text import plural

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu.catalogue import Catalogue

SECONDS_PER_GPU = (30, 60)
SETTLED_STATES = ("", "success")


@dataclass(frozen=True)
class MigDemand:
    request_id: int
    label: str  # "#12 team-a/chat (pending_approval)"
    pool: str
    gpu_model: str
    profile: str
    devices: int


@dataclass(frozen=True)
class Workload:
    label: str
    request_id: int | None = None
    team: str = ""
    owner: str = ""
    pods: int = 1
    remaining_seconds: int | None = None  # None: no expected end


@dataclass(frozen=True)
class MigNode:
    name: str
    pool: str
    gpu_model: str
    gpu_count: int
    mig_config: str
    offered: Mapping[str, int]  # MIG devices per profile on the node now
    used: Mapping[str, int] = field(default_factory=dict)
    mig_strategy: str = "mixed"
    schedulable: bool = True
    config_state: str = "success"
    workloads: tuple[Workload, ...] = ()


@dataclass
class ProposedStep:
    node: str
    pool: str
    from_config: str
    to_config: str
    gpu_count: int
    before: dict[str, int]
    after: dict[str, int]
    covers: dict[str, int]  # unmet devices per profile this change meets
    estimated_seconds_min: int
    estimated_seconds_max: int
    remaining_work_seconds: int
    remaining_work_known: bool
    affected: list[dict[str, Any]]

    @property
    def gains(self) -> dict[str, int]:
        names = sorted(set(self.before) | set(self.after))
        return {p: self.after.get(p, 0) - self.before.get(p, 0) for p in names if self.after.get(p, 0) != self.before.get(p, 0)}


@dataclass
class MigPlanProposal:
    steps: list[ProposedStep]
    unmet: list[dict[str, Any]]  # {pool, profile, devices, reason}
    demand: list[dict[str, Any]]  # {pool, profile, devices, free, requests}

    @property
    def summary(self) -> str:
        if not self.demand:
            return "No MIG demand is waiting for slices: nothing to change."
        parts = [f"{plural(len(self.steps), 'node')} to change" if self.steps else "no layout change helps"]
        wanted = ", ".join(f"{d['devices'] - d['free']} x {d['profile']} on {d['pool']}" for d in self.demand)
        parts.append(f"unmet: {wanted}")
        if self.unmet:
            parts.append("left unmet: " + ", ".join(f"{u['devices']} x {u['profile']} on {u['pool']}" for u in self.unmet))
        return "; ".join(parts) + "."


def _slices(catalogue: Catalogue, model: str, profile: str) -> int:
    spec = catalogue.profile(model, profile)
    return spec.compute_slices if spec else 1


def _unmet(demand: Mapping[str, int], free: Mapping[str, int]) -> dict[str, int]:
    return {p: d - free.get(p, 0) for p, d in demand.items() if d > free.get(p, 0)}


def _weight(unmet: Mapping[str, int], catalogue: Catalogue, model: str) -> int:
    return sum(n * _slices(catalogue, model, p) for p, n in unmet.items())


def step_cost(node: MigNode) -> tuple[int, int, int, bool]:
    """(min seconds, max seconds, remaining work seconds, all ends known) for changing this node's layout."""
    known = all(w.remaining_seconds is not None for w in node.workloads)
    remaining = max((max(w.remaining_seconds or 0, 0) for w in node.workloads), default=0)
    low, high = (s * node.gpu_count + remaining for s in SECONDS_PER_GPU)
    return low, high, remaining, known


def plan_layouts(demand: Sequence[MigDemand], nodes: Sequence[MigNode], catalogue: Catalogue) -> MigPlanProposal:
    """Propose layout changes (module docstring)."""
    steps: list[ProposedStep] = []
    unmet_out: list[dict[str, Any]] = []
    demand_out: list[dict[str, Any]] = []
    by_pool: dict[tuple[str, str], dict[str, int]] = {}
    requests: dict[tuple[str, str, str], list[str]] = {}
    for item in demand:
        per = by_pool.setdefault((item.pool, item.gpu_model), {})
        per[item.profile] = per.get(item.profile, 0) + item.devices
        requests.setdefault((item.pool, item.gpu_model, item.profile), []).append(item.label)

    for (pool, model), wanted in sorted(by_pool.items()):
        members = [n for n in nodes if n.pool == pool]
        usable = [n for n in members if n.schedulable and n.config_state in SETTLED_STATES]
        free: dict[str, int] = {}
        for n in usable:
            for profile, count in n.offered.items():
                free[profile] = free.get(profile, 0) + max(count - n.used.get(profile, 0), 0)
        for profile, devices in sorted(wanted.items()):
            if devices > free.get(profile, 0):
                demand_out.append({"pool": pool, "gpu_model": model, "profile": profile, "devices": devices,
                                   "free": free.get(profile, 0), "requests": requests[(pool, model, profile)]})
        unmet = _unmet(wanted, free)
        candidates = [n for n in usable if n.gpu_model == model]
        changed: set[str] = set()
        while unmet:
            best = None
            for node in candidates:
                if node.name in changed:
                    continue
                before = dict(node.offered)
                node_free = {p: max(c - node.used.get(p, 0), 0) for p, c in before.items()}
                low, high, remaining, known = step_cost(node)
                for layout in catalogue.layouts_for(model):
                    if layout == node.mig_config:
                        continue
                    per_gpu = catalogue.layout_profiles(layout, model)
                    if node.mig_strategy == "single" and len(per_gpu) != 1:
                        continue  # under `single` every slice of a node must be the same profile
                    after = {p: n * node.gpu_count for p, n in per_gpu.items()}
                    new_free = {p: free.get(p, 0) - node_free.get(p, 0) + after.get(p, 0)
                                for p in set(free) | set(after)}
                    left = _unmet(wanted, new_free)
                    benefit = _weight(unmet, catalogue, model) - _weight(left, catalogue, model)
                    if benefit <= 0:
                        continue
                    kept = sum(min(after.get(p, 0), c) for p, c in before.items())
                    rank = (-benefit, not known, high, len(node.workloads), -kept, node.name, layout)
                    if best is None or rank < best[0]:
                        best = (rank, node, layout, before, after, new_free, left, (low, high, remaining, known))
            if best is None:
                break
            _, node, layout, before, after, new_free, left, (low, high, remaining, known) = best
            covers = {p: n - left.get(p, 0) for p, n in unmet.items() if n - left.get(p, 0) > 0}
            steps.append(ProposedStep(
                node=node.name, pool=pool, from_config=node.mig_config, to_config=layout, gpu_count=node.gpu_count,
                before=before, after=after, covers=covers, estimated_seconds_min=low, estimated_seconds_max=high,
                remaining_work_seconds=remaining, remaining_work_known=known,
                affected=[{"label": w.label, "request_id": w.request_id, "team": w.team, "owner": w.owner,
                           "pods": w.pods, "remaining_seconds": w.remaining_seconds} for w in node.workloads],
            ))  # fmt: skip
            changed.add(node.name)
            free, unmet = new_free, left
        for profile, devices in sorted(unmet.items()):
            if catalogue.profile(model, profile) is None:
                reason = f"{model} has no MIG profile {profile}."
            elif not candidates:
                reason = f"No node of {pool} can change layout now (cordoned, reconfiguring, or none left)."
            else:
                reason = f"Even after the proposed changes, {pool} offers too few {profile} slices."
            unmet_out.append({"pool": pool, "gpu_model": model, "profile": profile, "devices": devices,
                              "reason": reason})
    return MigPlanProposal(steps=steps, unmet=unmet_out, demand=demand_out)
