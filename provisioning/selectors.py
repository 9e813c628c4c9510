"""Reads of clusters and inventory."""
from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from intake.decisions import ClusterSpec, Inventory, PoolSpec

from .catalogue import load_catalogue
from .choices import SharingMode
from .models import Cluster, NodePool


def cluster_list() -> QuerySet[Cluster]:
    pools = NodePool.objects.select_related("gpu_model").order_by("name")
    return Cluster.objects.prefetch_related(Prefetch("pools", queryset=pools)).order_by("name")


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
        time_slicing_replicas=pool.time_slicing_replicas,
        driver_major=pool.driver_major,
        nvlink_domain=pool.nvlink_domain,
        scheduling_model=pool.effective_scheduling_model,
    )


def inventory_snapshot() -> Inventory:
    """What the decision function sees: enabled clusters and their pools, with the catalogue."""
    catalogue = load_catalogue()
    clusters = []
    for cluster in cluster_list().filter(enabled=True):
        pools = tuple(pool_spec(pool, catalogue) for pool in cluster.pools.all())
        clusters.append(
            ClusterSpec(
                id=cluster.id,
                name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                scheduling_model=cluster.scheduling_model,
                gang_scheduler=cluster.gang_scheduler,
                pools=pools,
            )
        )
    return Inventory(clusters=tuple(clusters), catalogue=catalogue)
