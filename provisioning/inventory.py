"""Inventory declarations: clusters and their node pools as the platform team declares them (bootstrap scripts, the
demo, `declare_clusters`), and team quotas. What the clusters report is recorded by `provisioning.inventory_sync`."""
from __future__ import annotations

from django.core.exceptions import FieldError
from django.db import transaction

from .credentials import cluster_server_changed
from .models import Cluster, GpuModel, NodePool, TeamQuota


@transaction.atomic
def cluster_declare(*, name: str, pools: list[dict], **fields) -> Cluster:
    """Create or update a cluster and its declared pools (by name). Pools not listed are left alone. A changed
    API server clears the cluster's credentials (they were given for the old one)."""
    cluster = Cluster.objects.select_for_update().filter(name=name).first() or Cluster(name=name)
    known = {f.name for f in Cluster._meta.concrete_fields}
    for key, value in fields.items():
        if key not in known:
            raise FieldError(f"Cluster has no field {key!r}")
        setattr(cluster, key, value)
    cluster.full_clean()
    cluster.save()
    cluster_server_changed(cluster=cluster)
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
