"""Writes of the platform team's declarations: clusters, node pools and team quotas, as the admin and the REST API
make them. Each is one transaction that checks who asks, validates the row as a whole (`full_clean`: the model's
rules, e.g. an API server the outbound policy refuses) and saves it; a raised ValidationError names the field.
Bootstrap paths (`cluster_declare`, `team_quota_set` in provisioning.inventory) have no user and skip the check."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from portal.errors import PermissionDenied
from portal.models import Team
from portal.roles import is_platform

from .choices import Applier
from .credentials import cluster_server_changed
from .models import Cluster, NodePool, TeamQuota


def _check_platform(user, what: str) -> None:
    if not is_platform(user):
        raise PermissionDenied(f"Only the platform team changes {what}.")


@transaction.atomic
def cluster_save(*, user, cluster: Cluster) -> tuple[Cluster, bool]:
    """Save a new or changed cluster (its fields already set). A changed API server clears the credentials given
    for the old one. Returns (cluster, whether credentials were cleared)."""
    _check_platform(user, "clusters")
    if cluster.pk is not None:
        Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
    cluster.full_clean()
    cluster.save()
    return cluster, cluster_server_changed(cluster=cluster)


CLUSTER_UPDATABLE = ("api_server", "description", "enabled")


@transaction.atomic
def cluster_update(*, user, cluster: Cluster, **fields) -> tuple[Cluster, bool]:
    """Change a cluster's API server, description or enabled flag (the REST API's PATCH). A new API server is
    checked against the outbound policy and clears the credentials given for the old one. Returns (cluster,
    cleared)."""
    _check_platform(user, "clusters")
    unknown = sorted(set(fields) - set(CLUSTER_UPDATABLE))
    if unknown:
        raise ValidationError({unknown[0]: ["This field cannot be changed here."]})
    cluster = Cluster.objects.select_for_update().get(pk=cluster.pk)
    for key, value in fields.items():
        setattr(cluster, key, value)
    if fields.get("api_server"):
        cluster.applier = Applier.KUBERNETES  # an API server is where it provisions
    return cluster_save(user=user, cluster=cluster)


@transaction.atomic
def cluster_delete(*, user, cluster: Cluster) -> None:
    _check_platform(user, "clusters")
    cluster.delete()


@transaction.atomic
def node_pool_save(*, user, pool: NodePool) -> NodePool:
    """Save a new or changed declared pool (its fields already set), with the pool's rules against its cluster
    (e.g. MPS on a DRA cluster needs the driver's MPSSupport gate)."""
    _check_platform(user, "node pools")
    if pool.pk is not None:
        NodePool.objects.select_for_update().filter(pk=pool.pk).first()
    pool.full_clean()
    pool.save()
    return pool


@transaction.atomic
def node_pool_delete(*, user, pool: NodePool) -> None:
    _check_platform(user, "node pools")
    pool.delete()


def _lock_teams(*team_ids) -> None:
    """The lock approvals of a team take before summing its quota (intake.services._lock_team_quota), so a quota
    never changes under an approval that is reading it. In id order, as every path that locks two teams must."""
    for team_id in sorted({team_id for team_id in team_ids if team_id is not None}):
        Team.objects.select_for_update(no_key=True).filter(pk=team_id).first()


@transaction.atomic
def team_quota_save(*, user, quota: TeamQuota) -> TeamQuota:
    """Save a new or changed team quota (its fields already set); a quota moved to another team locks both."""
    _check_platform(user, "quotas")
    before = TeamQuota.objects.filter(pk=quota.pk).values_list("team_id", flat=True).first() if quota.pk else None
    _lock_teams(quota.team_id, before)
    quota.full_clean()
    quota.save()
    return quota


@transaction.atomic
def team_quota_delete(*, user, quota: TeamQuota) -> None:
    _check_platform(user, "quotas")
    _lock_teams(quota.team_id)
    quota.delete()
