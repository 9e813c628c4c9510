"""The capacity page's figures now: per cluster, pool and kind of device (whole GPUs, each MIG profile, time-sliced
or MPS shares), what the last inventory sync found allocated and free (the same `capacity_of` figures as
`GET /api/v1/clusters/`), what approved requests not running yet will take (reserved), what waits for approval
(queued), the viewer's teams' share of each, and the fragmentation that blocks big pods.

Requests are counted in devices of their kind: replicas x gpus_per_replica of their decision's pool and profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, IntegerField, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce

from gpu.catalogue import load_catalogue
from gpu.vocabulary import MIG, MPS, TIME_SLICING, WHOLE_GPU
from intake.choices import RequestStatus
from intake.models import GpuRequest
from portal.selectors import team_visible_ids
from portal.text import plural

from .. import discovery
from .capacity import capacity_of
from .clusters import cluster_detail_list

RESERVING = (RequestStatus.APPROVED, RequestStatus.PROVISIONING)
HOLDING = (RequestStatus.RUNNING, RequestStatus.STALLED)
QUEUED = (RequestStatus.PENDING_APPROVAL,)
# kind -> (what a row counts, one unit of it)
KIND_WORDS = {WHOLE_GPU: ("Whole GPUs", "GPU"), TIME_SLICING: ("Time-sliced GPU shares", "share"),
              MPS: ("MPS GPU shares", "share")}


def kind_words(strategy: str, profile: str | None) -> tuple[str, str]:
    if strategy == MIG:
        return f"MIG {profile} slices", "slice"
    return KIND_WORDS.get(strategy, (strategy, strategy))


@dataclass
class KindRow:
    """One kind of device in one pool."""

    strategy: str
    profile: str | None
    words: str
    unit: str
    total: int = 0
    allocated: int = 0
    free: int = 0
    reserved: int = 0
    queued: int = 0
    queued_requests: int = 0
    mine_running: int = 0
    mine_reserved: int = 0
    mine_queued: int = 0
    largest_waiting: tuple[int, int | None] | None = None  # (per pod, request id) of the biggest pod waiting here
    free_by_node: dict[str, int] = field(default_factory=dict)
    fragmentation: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.strategy, self.profile or ""


@dataclass
class PoolCapacity:
    cluster: str
    name: str
    anchor: str
    gpu_model: str
    nodes: int
    synced: bool
    rows: list[KindRow]
    declared: str = ""  # a never-synced cluster's pool: what the platform team declared


@dataclass
class ClusterCapacity:
    name: str
    synced_at: Any
    pools: list[PoolCapacity]
    equivalents_total: float
    equivalents_free: float


def pool_anchor(cluster: str, pool: str) -> str:
    """The capacity page's anchor of a pool (the approval review and the wait explanation link to it)."""
    return f"pool-{cluster}-{pool}"


def _node_free_by_kind(nodes, catalogue) -> dict[tuple[str, str], dict[str, int]]:
    """Free units per (strategy, profile) per node, as capacity_by_strategy counts them (cordoned: none free)."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for node in nodes:
        model = catalogue.models.get(node.gpu_model.key) if node.gpu_model else None
        for key, total in (node.gpu_resources or {}).items():
            strategy = discovery.key_strategy(key, node.sharing_mode, node.mig_strategy)
            if strategy is None:
                continue
            profile = discovery.key_profile(key, model) if strategy == MIG else None
            if strategy == MIG and profile is None:
                profile = next(iter(node.mig_devices or {}), "?")
            free = 0 if node.unschedulable else max(total - (node.gpu_used or {}).get(key, 0), 0)
            per = out.setdefault((strategy, profile or ""), {})
            per[node.name] = per.get(node.name, 0) + free
    return out


def fragmentation_words(*, per_pod: int, unit: str, free_by_node: dict[str, int], why: str) -> str:
    """"No node has 8 free GPUs (a whole node); 2 nodes have 2." or "3 nodes have 8 free GPUs or more (...)"."""
    units = f"{unit}s" if per_pod != 1 else unit
    roomy = sorted(n for n, free in free_by_node.items() if free >= per_pod)
    counts: dict[int, int] = {}
    for free in free_by_node.values():
        if 0 < free < per_pod:
            counts[free] = counts.get(free, 0) + 1
    rest = ", ".join(f"{plural(c, 'node')} {'has' if c == 1 else 'have'} {free}"
                     for free, c in sorted(counts.items(), key=lambda item: -item[0]))
    if not roomy:
        return f"No node has {per_pod} free {units} ({why})" + (f"; {rest}." if rest else "; every node is full.")
    have = "has" if len(roomy) == 1 else "have"
    shown = ", ".join(roomy[:4]) + (f" and {len(roomy) - 4} more" if len(roomy) > 4 else "")
    return (f"{plural(len(roomy), 'node')} ({shown}) {have} {per_pod} free {units} or more ({why})"
            + (f"; {rest} besides." if rest else "."))


def _request_totals(team_ids: set[int] | None):
    """Devices of the portal's live requests per (cluster, pool, strategy, profile): reserved, queued, and the
    viewer's teams' share (running, reserved, queued). One query."""
    devices = Cast(KeyTextTransform("replicas", "decision"), IntegerField()) * Cast(
        KeyTextTransform("gpus_per_replica", "decision"), IntegerField())
    mine = Q(team_id__in=team_ids) if team_ids is not None else Q()

    def total(statuses, *extra) -> Coalesce:
        return Coalesce(Sum(devices, filter=Q(status__in=statuses, *extra)), 0)

    return (GpuRequest.objects.filter(status__in=(*RESERVING, *HOLDING, *QUEUED))
            .values(cluster=KeyTextTransform("cluster", "decision"), pool=KeyTextTransform("node_pool", "decision"),
                    kind=KeyTextTransform("strategy", "decision"), profile=KeyTextTransform("mig_profile", "decision"))
            .annotate(reserved=total(RESERVING), queued=total(QUEUED),
                      queued_requests=Count("pk", filter=Q(status__in=QUEUED)),
                      mine_running=total(HOLDING, mine), mine_reserved=total(RESERVING, mine),
                      mine_queued=total(QUEUED, mine))
            .order_by())


def _largest_waiting(team_ids: set[int] | None):
    """The biggest pod waiting (approval, or approved and not running) per pool and kind: (per pod, request id),
    the id left out (None) where the request is another team's and the viewer sees only their own teams."""
    rows = (GpuRequest.objects.filter(status__in=(*RESERVING, *QUEUED))
            .values_list("pk", "team_id", "decision__cluster", "decision__node_pool", "decision__strategy",
                         "decision__mig_profile", "decision__gpus_per_replica").order_by("pk"))
    largest: dict[tuple, tuple[int, int | None]] = {}
    for pk, team_id, cluster, pool, strategy, profile, per_pod in rows:
        key = (cluster, pool, strategy, profile or "")
        if per_pod and (key not in largest or int(per_pod) > largest[key][0]):
            largest[key] = (int(per_pod), pk if team_ids is None or team_id in team_ids else None)
    return largest


def capacity_overview(*, user) -> list[ClusterCapacity]:
    """Every cluster's pools, kind by kind (module docstring). A constant number of queries."""
    catalogue = load_catalogue()
    team_ids = team_visible_ids(user=user)
    requested = {(r["cluster"], r["pool"], r["kind"], r["profile"] or ""): r for r in _request_totals(team_ids)}
    largest = _largest_waiting(team_ids)
    clusters = []
    for cluster in cluster_detail_list():
        pools = []
        nodes = list(cluster.nodes.all())
        pooled = list(cluster.pools.all())
        if any(n.pool_id is None for n in nodes):
            pooled.append(None)  # nodes discovery matched to no declared pool: counted by the API's cluster figures
        for pool in pooled:
            pool_nodes = [n for n in nodes if n.pool_id == (pool.pk if pool else None)]
            figures = capacity_of(pool_nodes)
            free_by_kind = _node_free_by_kind(pool_nodes, catalogue)
            rows: dict[tuple[str, str], KindRow] = {}
            for strategy, bucket in figures.items():
                if strategy == MIG:
                    for profile, per in bucket.get("profiles", {}).items():
                        rows[(MIG, profile)] = KindRow(MIG, profile, *kind_words(MIG, profile), total=per["total"],
                                                       allocated=per["used"], free=per["free"])
                else:
                    rows[(strategy, "")] = KindRow(strategy, None, *kind_words(strategy, None),
                                                   total=bucket["devices_total"], allocated=bucket["devices_used"],
                                                   free=bucket["devices_free"])
            name = pool.name if pool else ""
            for (c, p, strategy, profile), totals in requested.items():
                if pool is not None and c == cluster.name and p == name:
                    row = rows.setdefault((strategy, profile), KindRow(strategy, profile or None,
                                                                       *kind_words(strategy, profile)))
                    for figure in ("reserved", "queued", "queued_requests", "mine_running", "mine_reserved",
                                   "mine_queued"):
                        setattr(row, figure, totals[figure])
            for row in rows.values():
                row.free_by_node = free_by_kind.get(row.key, {})
                row.largest_waiting = largest.get((cluster.name, name, *row.key))
                row.fragmentation = _fragmentation(row, pool)
            pools.append(PoolCapacity(cluster=cluster.name, name=name, anchor=pool_anchor(cluster.name, name or "none"),
                                      gpu_model=pool.gpu_model.key if pool and pool.gpu_model else "",
                                      nodes=len(pool_nodes),
                                      declared=(f"{plural(pool.node_count, 'node')} of {plural(pool.gpus_per_node, 'GPU')}"
                                                " declared") if pool else "",
                                      synced=cluster.last_synced_at is not None,
                                      rows=sorted(rows.values(), key=lambda r: (r.strategy != WHOLE_GPU, r.key))))
        whole = capacity_of(nodes)
        clusters.append(ClusterCapacity(
            name=cluster.name, synced_at=cluster.last_synced_at, pools=pools,
            equivalents_total=sum(b["equivalents_total"] for b in whole.values()),
            equivalents_free=sum(b["equivalents_free"] for b in whole.values())))
    return clusters


def _fragmentation(row: KindRow, pool) -> str:
    """What stands between the biggest waiting pod (or a whole node's worth) and the free devices."""
    if not row.free_by_node:
        return ""
    if row.largest_waiting:
        per_pod, request_id = row.largest_waiting
        if per_pod <= 1:
            return ""
        why = "the largest pod waiting here" + (f", request #{request_id}" if request_id else "")
    elif row.strategy == MIG or pool is None:
        return ""  # a slice is the unit: nothing to fragment unless a request asks for several per pod
    else:
        per_pod = pool.gpus_per_node * ((pool.time_slicing_replicas or 1) if row.strategy in (TIME_SLICING, MPS) else 1)
        if per_pod <= 1:
            return ""
        why = "a whole node's worth"
    return fragmentation_words(per_pod=per_pod, unit=row.unit, free_by_node=row.free_by_node, why=why)
