"""What a pool's nodes offer, summed up for the decision function and the API (JSON-ready)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from gpu.catalogue import Catalogue, base_product
from gpu.pools import PoolSpec

from .grouping import most_common, usable_for
from .nodes import NodeFacts
from .resources import DRIVER_MAJOR_LABEL


def version_key(version: str) -> tuple:
    return tuple(int(p) if p.isascii() and p.isdigit() else 0 for p in version.split("."))


def summarise_pool(pool: PoolSpec, nodes: Sequence[NodeFacts], catalogue: Catalogue) -> dict[str, Any]:
    """What the pool's nodes offer, for the decision function and the API (JSON-ready). Capacity figures count only
    the usable nodes (see `usable_for`) of the most common GPU model among them."""
    usable = [n for n in nodes if usable_for(pool, n)]
    model = most_common(n.gpu_model for n in usable) or None
    usable = [n for n in usable if n.gpu_model == model]
    spec = catalogue.models.get(model) if model else None
    mig_profiles: dict[str, int] = {}  # per GPU: the most any usable node offers per physical GPU
    mig_devices: Counter = Counter()
    for n in usable:
        mig_devices.update(n.mig_devices)
        for profile, count in n.mig_devices.items():
            per_gpu = -(-count // max(n.gpu_count, 1))
            mig_profiles[profile] = max(mig_profiles.get(profile, 0), per_gpu)
    drivers = sorted({n.driver_version for n in usable if n.driver_version}, key=version_key)
    majors = [n.driver_major for n in usable if n.driver_major]
    cliques = Counter(n.clique for n in usable if n.clique)
    return {
        "node_count": len(nodes),
        "usable_node_count": len(usable),
        "schedulable_node_count": sum(1 for n in usable if n.schedulable),
        "gpu_model": model or "",
        # The SKU the nodes carry (an H200 NVL pool is pinned to NVIDIA-H200-NVL, not to the model's first SKU).
        "gpu_product": most_common(product_label(n) for n in usable) or (spec.product if spec else ""),
        "dra_product_name": most_common(d["product_name"] for n in usable for d in n.dra_devices),
        "gpu_models": sorted({n.gpu_model or n.gpu_product for n in nodes}),
        "gpus_per_node": max((n.gpu_count for n in usable), default=0),
        "gpu_counts": sorted({n.gpu_count for n in nodes}),
        "sharing_modes": sorted({n.sharing_mode for n in nodes}),
        "mig_strategies": sorted({n.mig_strategy for n in nodes if n.mig_strategy}),
        "mig_layouts": sorted({n.mig_config for n in nodes if n.mig_config}),
        "mig_profiles": dict(sorted(mig_profiles.items())),
        "mig_devices": dict(sorted(mig_devices.items())),
        "time_slicing_replicas": min((n.gpu_replicas for n in usable if n.gpu_replicas), default=None),
        "replicas": sorted({n.gpu_replicas for n in nodes if n.gpu_replicas}),
        "device_plugin_configs": sorted({n.device_plugin_config for n in nodes if n.device_plugin_config}),
        "driver_versions": drivers,
        "min_driver_version": drivers[0] if drivers else "",
        "min_driver_major": min(majors) if majors else None,
        "nvlink_domain": most_common(n.clique for n in usable),
        "cliques": sorted(cliques),
        "scheduling_models": sorted({n.scheduling_model for n in nodes}),
        # Does GFD's driver label exist on every usable node? DRA-only nodes may have no GFD (renderer: affinity.py).
        "driver_major_label": bool(usable) and all(DRIVER_MAJOR_LABEL in n.labels for n in usable),
        # Does mig-manager run there? Only it writes nvidia.com/mig.config.state (mig-parted v0.15.0
        # deployments/container/reconfigure-mig.sh); static or cloud-configured MIG nodes never carry it.
        "mig_config_state_label": bool(usable) and all(n.mig_config_state for n in usable),
    }


def product_label(facts: NodeFacts) -> str:
    """The node's `nvidia.com/gpu.product` without GFD's sharing and MIG suffixes ("" on a node without GFD)."""
    label = facts.labels.get("nvidia.com/gpu.product", "")
    return base_product(label) if label else ""
