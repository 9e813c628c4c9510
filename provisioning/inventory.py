"""Declared inventory writes used by bootstrap scripts and the demo: clusters and node pools."""
from __future__ import annotations

from django.db import transaction

from .models import Cluster, GpuModel, NodePool, TeamQuota


@transaction.atomic
def cluster_declare(*, name: str, pools: list[dict], **fields) -> Cluster:
    """Create or update a cluster and its declared pools (by name). Pools not listed are left alone."""
    cluster, _ = Cluster.objects.update_or_create(name=name, defaults=fields)
    for spec in pools:
        spec = dict(spec)
        gpu_model = GpuModel.objects.get(key=spec.pop("gpu_model"))
        pool = NodePool.objects.filter(cluster=cluster, name=spec["name"]).first() or NodePool(cluster=cluster)
        pool.gpu_model = gpu_model
        for key, value in spec.items():
            setattr(pool, key, value)
        pool.full_clean()
        pool.save()
    return cluster


def team_quota_set(*, team, strategy: str, gpu_equivalents) -> TeamQuota:
    quota, _ = TeamQuota.objects.update_or_create(team=team, strategy=strategy,
                                                  defaults={"gpu_equivalents": gpu_equivalents})
    return quota
