"""Grouping nodes into pools: each GPU node goes to the declared pool whose selector it satisfies, the others form
discovered pools (the rule is in the package docstring); and whether a node serves what its pool is rendered for."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu.pools import PoolSpec
from gpu.vocabulary import MPS, REPLICATED

from ..contract import DEFAULT_POOL_LABEL
from .nodes import NodeFacts
from .resources import DEVICE_PLUGIN, DRA, EXCLUSIVE, MIG, TIME_SLICING


@dataclass(frozen=True)
class DiscoveredGroup:
    key: str  # stable grouping key
    name: str  # pool name (DNS-1123, <= 40 characters)
    gpu_model: str
    sharing_mode: str
    mig_strategy: str
    mig_layout: str
    time_slicing_replicas: int | None
    time_slicing_renamed: bool
    device_plugin_config: str
    scheduling_model: str
    node_selector: dict[str, str]
    taints: tuple[dict, ...]
    nodes: tuple[NodeFacts, ...]


@dataclass(frozen=True)
class Grouping:
    declared: dict[str, list[NodeFacts]]  # declared pool name -> its nodes
    discovered: list[DiscoveredGroup]
    overlaps: dict[str, list[tuple[str, str]]]  # declared pool -> [(node, other pool)]
    unpooled: list[NodeFacts]  # GPU nodes whose model the catalogue does not know


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == str(v) for k, v in selector.items())


def pool_name(*parts: str, max_length: int = 40) -> str:
    """A DNS-1123 pool name from parts; a hash keeps long names distinct when they must be cut."""
    import hashlib

    raw = "-".join(p for p in parts if p)
    name = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", raw.lower())).strip("-") or "gpu"
    if len(name) > max_length:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: max_length - 9].rstrip('-')}-{digest}"
    return name


def _layout_part(facts: NodeFacts) -> str:
    if facts.sharing_mode == MIG:
        return facts.mig_config or "+".join(f"{p}x{n}" for p, n in sorted(facts.mig_devices.items()))
    if facts.sharing_mode == TIME_SLICING:
        return f"ts{facts.gpu_replicas or 0}"
    if facts.sharing_mode == MPS:
        return f"mps{facts.gpu_replicas or 0}"
    return ""


def group_nodes(nodes: Sequence[NodeFacts], declared: Sequence[PoolSpec], *,
                pool_label: str = DEFAULT_POOL_LABEL) -> Grouping:
    """Assign GPU nodes to declared pools by selector, and group the rest into discovered pools (module doc)."""
    by_declared: dict[str, list[NodeFacts]] = {p.name: [] for p in declared}
    overlaps: dict[str, list[tuple[str, str]]] = {}
    rest: list[NodeFacts] = []
    for facts in nodes:
        if not facts.is_gpu_node:
            continue
        matching = [
            p for p in declared
            if selector_matches(p.node_selector, facts.labels)
            or (not p.node_selector and facts.labels.get(pool_label) == p.name)
        ]  # fmt: skip
        if not matching:
            rest.append(facts)
            continue
        matching.sort(key=lambda p: (-len(p.node_selector), p.name))
        by_declared[matching[0].name].append(facts)
        for other in matching[1:]:
            overlaps.setdefault(matching[0].name, []).append((facts.name, other.name))
            overlaps.setdefault(other.name, []).append((facts.name, matching[0].name))

    taken = {p.name for p in declared}
    groups: dict[str, list[NodeFacts]] = {}
    unpooled = []
    for facts in rest:
        if facts.gpu_model is None:
            unpooled.append(facts)
            continue
        if facts.portal_pool:
            key = f"label:{facts.portal_pool}"
        else:
            model_part = f"{facts.gpu_model}/{facts.gpu_sku}" if facts.gpu_sku else facts.gpu_model
            key = "|".join([model_part, facts.sharing_mode, _layout_part(facts), facts.scheduling_model])
        groups.setdefault(key, []).append(facts)
    discovered = []
    for key, members in sorted(groups.items()):
        first = members[0]
        if key.startswith("label:"):
            name = pool_name(first.portal_pool)
            selector = {pool_label: first.portal_pool}
        else:
            suffix = "dra" if first.scheduling_model == DRA else ""
            mode_part = {EXCLUSIVE: "", MIG: f"mig-{_layout_part(first)}", TIME_SLICING: _layout_part(first),
                         MPS: _layout_part(first)}
            name = pool_name(first.gpu_model, first.gpu_sku, mode_part[first.sharing_mode], suffix)
            selector = {"nvidia.com/gpu.product": first.labels["nvidia.com/gpu.product"]} if (
                first.labels.get("nvidia.com/gpu.product")
            ) else {}
            if first.sharing_mode == MIG and first.mig_config:
                selector["nvidia.com/mig.config"] = first.mig_config
            if first.sharing_mode in REPLICATED and first.device_plugin_config:
                selector["nvidia.com/device-plugin.config"] = first.device_plugin_config
        if name in taken:
            name = pool_name(name, "discovered")
        taken.add(name)
        common_taints = [t for t in first.taints if all(t in m.taints for m in members)]
        replicas = min((m.gpu_replicas or 0 for m in members), default=0) or None
        discovered.append(
            DiscoveredGroup(
                key=key, name=name, gpu_model=most_common(m.gpu_model for m in members),
                sharing_mode=most_common(m.sharing_mode for m in members),
                mig_strategy=most_common(m.mig_strategy for m in members) or "mixed",
                mig_layout=most_common(m.mig_config for m in members) if first.sharing_mode == MIG else "",
                time_slicing_replicas=replicas if first.sharing_mode in REPLICATED else None,
                time_slicing_renamed=any(m.time_slicing_renamed for m in members),
                device_plugin_config=most_common(m.device_plugin_config for m in members),
                scheduling_model=DRA if first.scheduling_model == DRA else DEVICE_PLUGIN,
                node_selector=selector, taints=tuple(common_taints), nodes=tuple(members),
            )
        )  # fmt: skip
    return Grouping(declared=by_declared, discovered=discovered, overlaps=overlaps, unpooled=unpooled)


def most_common(values: Iterable[Any]) -> Any:
    counted = Counter(v for v in values if v not in (None, ""))
    if not counted:
        return ""
    return sorted(counted.items(), key=lambda item: (-item[1], str(item[0])))[0][0]


def as_declared(group: DiscoveredGroup) -> PoolSpec:
    """A discovered group seen as the pool row the sync writes for it (what rendering will use)."""
    return PoolSpec(
        name=group.name, gpu_model=group.gpu_model, node_count=len(group.nodes),
        gpus_per_node=max((n.gpu_count for n in group.nodes), default=0) or 1, sharing_mode=group.sharing_mode,
        mig_strategy=group.mig_strategy, mig_layout=group.mig_layout,
        time_slicing_replicas=group.time_slicing_replicas, time_slicing_renamed=group.time_slicing_renamed,
        device_plugin_config=group.device_plugin_config, node_selector=dict(group.node_selector),
        scheduling_model=group.scheduling_model,
    )  # fmt: skip


def usable_for(pool: PoolSpec, facts: NodeFacts) -> bool:
    """Does this node serve what the pool's objects are rendered for: the sharing mode, the MIG strategy, the
    time-slicing resource name and the scheduling model? (The GPU model is taken from the nodes.)"""
    if facts.gpu_model is None or facts.sharing_mode != pool.sharing_mode:
        return False
    if facts.scheduling_model != pool.scheduling_model:
        return False
    if pool.scheduling_model == DEVICE_PLUGIN:
        if pool.sharing_mode == MIG and (facts.mig_strategy or "mixed") != pool.mig_strategy:
            return False
        if pool.sharing_mode == MIG and pool.mig_strategy == "single" and facts.mig_config != pool.mig_layout:
            return False  # under `single` pods are pinned to the declared layout
        if pool.sharing_mode in REPLICATED and facts.time_slicing_renamed not in (None, pool.time_slicing_renamed):
            return False
    return True
