"""Where the cluster disagrees with what the platform team declared: per pool, field by field, and for the cluster
(Kubernetes version, gang scheduler, scheduling model, GPUs the catalogue does not know), in plain words."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gpu.catalogue import Catalogue
from gpu.pools import PoolSpec
from gpu.vocabulary import REPLICATED
from portal.text import plural

from .grouping import usable_for
from .nodes import NodeFacts
from .resources import BOTH, DEVICE_PLUGIN, DRA, MIG
from .summary import product_label, version_key


def _d(field_name: str, declared: Any, discovered: Any, message: str) -> dict[str, Any]:
    return {"field": field_name, "declared": declared, "discovered": discovered, "message": message}


def _nodes_where(nodes: Sequence[NodeFacts], predicate) -> str:
    names = [n.name for n in nodes if predicate(n)]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return shown


def pool_discrepancies(pool: PoolSpec, nodes: Sequence[NodeFacts], catalogue: Catalogue,
                       overlaps: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """Where the declared pool and its nodes disagree, field by field, in plain words. Declared values are never
    changed; the summary used for placement counts only the nodes that serve the declaration."""
    found = []
    name = pool.name
    if len(nodes) != pool.node_count:
        found.append(_d("node_count", pool.node_count, len(nodes),
                         f"{name} declares {plural(pool.node_count, 'node')}; {len(nodes)} match its node selector."))
    if not nodes:
        return found
    models = sorted({n.gpu_model or f"unknown ({n.gpu_product})" for n in nodes})
    if models != [pool.gpu_model]:
        found.append(_d("gpu_model", pool.gpu_model, models,
                         f"{name} declares {pool.gpu_model}; its nodes have {', '.join(models)}."))
    skus = sorted({p for n in nodes if n.gpu_model == pool.gpu_model and (p := product_label(n))})
    if len(skus) > 1:
        found.append(_d("gpu_product", None, skus,
                         f"{name}'s nodes carry {len(skus)} SKUs ({', '.join(skus)}); pods are pinned to one "
                         "nvidia.com/gpu.product, so the others get none. Split the pool by SKU."))
    counts = sorted({n.gpu_count for n in nodes})
    if counts != [pool.gpus_per_node]:
        found.append(_d("gpus_per_node", pool.gpus_per_node, counts,
                         f"{name} declares {pool.gpus_per_node} GPUs per node; its nodes have "
                         f"{', '.join(map(str, counts))}."))
    modes = sorted({n.sharing_mode for n in nodes})
    if modes != [pool.sharing_mode]:
        odd = _nodes_where(nodes, lambda n: n.sharing_mode != pool.sharing_mode)
        found.append(_d("sharing_mode", pool.sharing_mode, modes,
                         f"{name} declares {pool.sharing_mode}; the sharing mode on {odd} is "
                         f"{', '.join(m for m in modes if m != pool.sharing_mode)}."))
    if pool.sharing_mode == MIG:
        layouts = sorted({n.mig_config or "(no nvidia.com/mig.config)" for n in nodes})
        if layouts != [pool.mig_layout]:
            odd = _nodes_where(nodes, lambda n: n.mig_config != pool.mig_layout)
            found.append(_d("mig_layout", pool.mig_layout, layouts,
                             f"{name} declares layout {pool.mig_layout}; the layout on {odd} is "
                             f"{', '.join(l for l in layouts if l != pool.mig_layout)}."))
        strategies = sorted({n.mig_strategy or "none" for n in nodes if n.sharing_mode == MIG})
        if pool.scheduling_model == DEVICE_PLUGIN and strategies and strategies != [pool.mig_strategy]:
            found.append(_d("mig_strategy", pool.mig_strategy, strategies,
                             f"{name} declares MIG strategy {pool.mig_strategy}; GFD reports "
                             f"{', '.join(strategies)}."))
        stuck = _nodes_where(nodes, lambda n: n.mig_config_state in ("pending", "failed", "rebooting"))
        if stuck:
            states = sorted({n.mig_config_state for n in nodes if n.mig_config_state in ("pending", "failed", "rebooting")})
            found.append(_d("mig_config_state", "success", states,
                             f"mig-manager reports {', '.join(states)} on {stuck}."))
    if pool.sharing_mode in REPLICATED:
        replicas = sorted({n.gpu_replicas or 1 for n in nodes})
        if replicas != [pool.time_slicing_replicas]:
            found.append(_d("time_slicing_replicas", pool.time_slicing_replicas, replicas,
                             f"{name} declares {pool.time_slicing_replicas} replicas per GPU; GFD reports "
                             f"{', '.join(map(str, replicas))}."))
        renamed = {n.time_slicing_renamed for n in nodes if n.time_slicing_renamed is not None}
        if renamed and renamed != {pool.time_slicing_renamed}:
            found.append(_d("time_slicing_renamed", pool.time_slicing_renamed, sorted(renamed),
                             f"{name} declares replicas advertised as "
                             f"{'nvidia.com/gpu.shared' if pool.time_slicing_renamed else 'nvidia.com/gpu'}; "
                             "the nodes advertise the other name."))
    if pool.device_plugin_config:
        configs = sorted({n.device_plugin_config or "(none)" for n in nodes})
        if configs != [pool.device_plugin_config]:
            found.append(_d("device_plugin_config", pool.device_plugin_config, configs,
                             f"{name} declares nvidia.com/device-plugin.config={pool.device_plugin_config}; nodes "
                             f"have {', '.join(configs)}."))
    drivers = sorted({n.driver_version or "(unknown)" for n in nodes}, key=version_key)
    if pool.driver_version and drivers != [pool.driver_version]:
        found.append(_d("driver_version", pool.driver_version, drivers,
                         f"{name} declares driver {pool.driver_version}; nodes run {', '.join(drivers)}."))
    cliques = sorted({n.clique or "(none)" for n in nodes})
    if pool.nvlink_domain and cliques != [pool.nvlink_domain]:
        found.append(_d("nvlink_domain", pool.nvlink_domain, cliques,
                         f"{name} declares NVLink domain {pool.nvlink_domain}; nodes report {', '.join(cliques)}."))
    models_seen = sorted({n.scheduling_model for n in nodes})
    if BOTH in models_seen:
        odd = _nodes_where(nodes, lambda n: n.scheduling_model == BOTH)
        found.append(_d("scheduling_model", pool.scheduling_model, models_seen,
                         f"Conflict: on {odd} both the device plugin (extended resources) and the NVIDIA DRA GPU "
                         "plugin (ResourceSlices) manage the GPUs; they must not manage the same node."))
    elif models_seen != [pool.scheduling_model]:
        found.append(_d("scheduling_model", pool.scheduling_model, models_seen,
                         f"{name} is rendered for {pool.scheduling_model}; its nodes use {', '.join(models_seen)}."))
    for node_name, other in overlaps:
        found.append(_d("node_selector", pool.node_selector, other,
                         f"Node {node_name} matches the selectors of {name} and {other}."))
    if nodes and not any(usable_for(pool, n) for n in nodes):
        found.append(_d("placement", "usable", "none",
                         f"None of {name}'s nodes serves what the pool declares; nothing is placed on it until "
                         "the declaration or the nodes change."))
    return found


def _unknown_sku_hint(facts: NodeFacts, catalogue: Catalogue | None) -> str:
    same = catalogue.same_memory_as(facts.gpu_memory_mib) if catalogue else []
    if not same:
        return ""
    return (f" Its GPUs have the memory of {' or '.join(same)} ({facts.gpu_memory_mib} MiB): if it is another SKU of "
            "that model, add its NVML name to the model's skus in gpu/data/gpu-catalogue.yaml.")


def cluster_discrepancies(*, declared_version: str, discovered_version: str, declared_gang: str,
                          installed_gang: Sequence[str], declared_scheduling: str, dra_in_use: bool,
                          unpooled: Sequence[NodeFacts], catalogue: Catalogue | None = None) -> list[dict[str, Any]]:
    found = []
    minor = re.match(r"v?(\d+)\.(\d+)", discovered_version or "")
    seen = f"{minor[1]}.{minor[2]}" if minor else ""
    if seen and seen != declared_version:
        found.append(_d("kubernetes_version", declared_version, discovered_version,
                         f"Declared Kubernetes {declared_version}; the API server runs {discovered_version}. "
                         "Objects are rendered for the declared version."))
    if declared_gang != "none" and declared_gang not in installed_gang:
        found.append(_d("gang_scheduler", declared_gang, list(installed_gang),
                         f"Declared gang scheduler {declared_gang} is not installed (its API is not served); "
                         "gangs rendered for it will be refused."))
    if declared_scheduling == DEVICE_PLUGIN and dra_in_use:
        found.append(_d("scheduling_model", declared_scheduling, DRA,
                         "GPU ResourceSlices exist although the cluster is declared device plugin."))
    for facts in unpooled:
        found.append(_d("gpu_model", None, facts.gpu_product,
                         f"Node {facts.name} has GPUs the catalogue does not know ({facts.gpu_product or 'no product'}"
                         "); it is not placed in any pool." + _unknown_sku_hint(facts, catalogue)))
    return found
