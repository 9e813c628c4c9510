"""What the decision function sees: the enabled clusters and their pools as plain specs (declared, or as discovery
found them), and the inventory's generation that stamps it."""
from __future__ import annotations

from django.db import connection

from gpu.catalogue import load_catalogue
from gpu.pools import PoolSpec
from intake.decisions import ClusterSpec, Inventory
from intake.hooks import ScalarSql

from ..choices import SharingMode
from ..dra_inputs import decided_replicas, dra_extended_resources
from ..models import InventoryGeneration, NodePool
from .clusters import cluster_list


def pool_spec(pool: NodePool, catalogue=None) -> PoolSpec:
    catalogue = catalogue or load_catalogue()
    profiles = {}
    if pool.sharing_mode == SharingMode.MIG and pool.gpu_model.key in catalogue.models:
        profiles = catalogue.layout_profiles(pool.mig_layout, pool.gpu_model.key)
    return PoolSpec(
        id=pool.id,
        cluster=pool.cluster.name,
        name=pool.name,
        gpu_model=pool.gpu_model.key,
        gpus_per_node=pool.gpus_per_node,
        node_count=pool.node_count,
        sharing_mode=pool.sharing_mode,
        mig_profiles=profiles,
        mig_layout=pool.mig_layout,
        mig_strategy=pool.mig_strategy,
        time_slicing_replicas=decided_replicas(pool, pool.time_slicing_replicas),
        driver_major=pool.driver_major,
        nvlink_domain=pool.nvlink_domain,
        scheduling_model=pool.effective_scheduling_model,
        dra_extended_resources=dra_extended_resources(pool),
        mig_ready_label=mig_ready_label(pool),
    )


def mig_ready_label(pool: NodePool) -> bool | None:
    """Does mig-manager's nvidia.com/mig.config.state mark the pool's nodes ready: as the platform team declared, else
    as the last sync saw every usable node (None: neither)."""
    if pool.mig_readiness_label is not None:
        return pool.mig_readiness_label
    return (pool.discovered or {}).get("mig_config_state_label")


def discovered_pool_spec(pool: NodePool, catalogue=None) -> PoolSpec | None:
    """A pool of a synced cluster as its nodes offer it now: the GPU model on its nodes, the MIG
    profiles they advertise, the lowest driver present, their NVLink domain; counted over the nodes that serve
    what the pool is rendered for. None when no such node is left (nothing can be placed there)."""
    catalogue = catalogue or load_catalogue()
    seen = pool.discovered or {}
    if not seen.get("usable_node_count") or seen.get("gpu_model") not in catalogue.models:
        return None
    return PoolSpec(
        id=pool.id,
        cluster=pool.cluster.name,
        name=pool.name,
        gpu_model=seen["gpu_model"],
        gpus_per_node=seen.get("gpus_per_node") or pool.gpus_per_node,
        node_count=seen["usable_node_count"],
        sharing_mode=pool.sharing_mode,
        mig_profiles=dict(seen.get("mig_profiles") or {}) if pool.sharing_mode == SharingMode.MIG else {},
        mig_layout=pool.mig_layout,
        mig_strategy=pool.mig_strategy,
        time_slicing_replicas=decided_replicas(pool, seen.get("time_slicing_replicas") or pool.time_slicing_replicas),
        driver_major=seen.get("min_driver_major"),
        nvlink_domain=seen.get("nvlink_domain") or "",
        scheduling_model=pool.effective_scheduling_model,
        dra_extended_resources=dra_extended_resources(pool),
        mig_ready_label=mig_ready_label(pool),
    )


def inventory_snapshot() -> Inventory:
    """What the decision function sees: enabled clusters and their pools, with the catalogue. A cluster that was
    never synced offers its declared pools as declared; a synced one offers what discovery found."""
    catalogue = load_catalogue()
    clusters = []
    for cluster in cluster_list().filter(enabled=True):
        if cluster.last_synced_at is None:
            pools = tuple(pool_spec(pool, catalogue) for pool in cluster.pools.all())
        else:
            pools = tuple(spec for pool in cluster.pools.all() if (spec := discovered_pool_spec(pool, catalogue)))
        clusters.append(
            ClusterSpec(
                id=cluster.id,
                name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                scheduling_model=cluster.scheduling_model,
                gang_scheduler=cluster.gang_scheduler,
                pools=pools,
                feature_gates=tuple(cluster.feature_gates or ()),
                jobset=cluster.jobset_installed,
                gang_topology_key=cluster.gang_topology_key,
                gang_topology_name=cluster.gang_topology_name,
            )
        )
    return Inventory(clusters=tuple(clusters), catalogue=catalogue)


def inventory_generation() -> ScalarSql:
    """The inventory's generation, for a caller to read beside its own stamps in one query: it changes, in the
    writing transaction, with every write to what `inventory_snapshot` reads (database triggers,
    provisioning.models.InventoryGeneration)."""
    quote = connection.ops.quote_name
    return ScalarSql(f"SELECT {quote('generation')} FROM {quote(InventoryGeneration._meta.db_table)} "
                     f"WHERE {quote('id')} = 1")
