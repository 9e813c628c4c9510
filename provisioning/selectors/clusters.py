"""Reads of clusters and pools as rows: lists with their pools and nodes loaded, one pool, the pool a decision
placed a request on, and the last sync error as a given user may see it."""
from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from intake.decisions import Decision
from portal.errors import NotFound
from portal.roles import is_platform

from ..choices import Applier
from ..models import Cluster, Node, NodePool


def no_api_server_note(cluster: Cluster) -> str | None:
    """Why discovery skips a cluster (it has no API server to read), or None when it reads it."""
    if cluster.applier == Applier.KUBERNETES and cluster.api_server:
        return None
    return (
        f"No API server: {cluster.name} is provisioned through {cluster.get_applier_display()}, so its inventory "
        "is what the platform team declared; discovery skips it."
    )


def cluster_list() -> QuerySet[Cluster]:
    pools = NodePool.objects.select_related("gpu_model").order_by("name")
    return Cluster.objects.prefetch_related(Prefetch("pools", queryset=pools)).order_by("name")


def cluster_detail_list() -> QuerySet[Cluster]:
    """Clusters with pools and present nodes loaded up front (a constant number of queries for any list)."""
    pools = NodePool.objects.select_related("gpu_model").order_by("name")
    nodes = Node.objects.filter(present=True).select_related("gpu_model", "pool").order_by("name")
    return Cluster.objects.prefetch_related(
        Prefetch("pools", queryset=pools), Prefetch("nodes", queryset=nodes)
    ).order_by("name")


def pool_get(*, cluster_id, pool_id) -> NodePool:
    pool = NodePool.objects.select_related("cluster", "gpu_model").filter(pk=pool_id, cluster_id=cluster_id).first() \
        if all(str(i).isascii() and str(i).isdigit() for i in (pool_id, cluster_id)) else None
    if pool is None:
        raise NotFound("No such pool in this cluster.")
    return pool


def pool_for_decision(decision: Decision) -> NodePool:
    """The pool (with its cluster and GPU model) a decision placed the request on."""
    return NodePool.objects.select_related("cluster", "gpu_model").get(
        cluster__name=decision.cluster, name=decision.node_pool
    )


def cluster_for_request(*, gpu_request) -> Cluster:
    return Cluster.objects.get(name=gpu_request.decision.cluster)


SYNC_FAILED_FOR_OTHERS = "The last inventory sync failed; the platform team has the details."


def cluster_sync_error_for(*, user, cluster: Cluster) -> str:
    """The last sync error as `user` may see it: the platform team reads the detail, which can quote what the API
    server (or whatever answered at its URL) sent; everyone else a generic line. The portal's own note on a
    cluster without an API server is shown to all."""
    if not cluster.last_sync_error or is_platform(user) or cluster.last_sync_error == no_api_server_note(cluster):
        return cluster.last_sync_error
    return SYNC_FAILED_FOR_OTHERS
