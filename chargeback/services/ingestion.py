"""Ingestion: one read of a cluster's pods turned into usage intervals, set-based (one statement per batch),
idempotent, safe from several workers (chargeback.services.locks). The unique (pod_uid, started_at) constraint
and the per-pod exclusion constraint are the safety net under the locks.

Who pays (docs/chargeback.md): a pod is billed as a request only when its owner chain reaches, by UID, an object
the portal applied for that request, in that request's team's namespace; every other pod is billed to the team
whose namespace it runs in, flagged `found_in_cluster`, never to another team. A pod that cannot be read is
skipped and reported on the pass (UsageCollection) and in the log; the others are metered."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Iterable, Sequence

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from gpu.catalogue import load_catalogue
from gpu.vocabulary import REPLICATED, STRATEGIES
from intake.decisions import Decision
from intake.models import GpuRequest
from portal.models import Team
from provisioning.choices import SchedulingModel
from provisioning.contract import Owners, pod_identity
from provisioning.manifests.names import team_namespace
from provisioning.models import NodePool
from provisioning.selectors.applied import applied_owners

from ..allocation import ClusterFacts
from ..choices import CollectionStatus, Flag
from ..credits.services import credits_record
from ..ingest import PodUsage, annotation_agrees, annotation_fraction, expected_equivalents, pods_usage
from ..models import UsageCollection
from .adjustments import book_frozen_changes
from .allocation import bill_as_allocated, mismatches_record
from .locks import frozen_until, lock_cluster

logger = logging.getLogger(__name__)

BATCH_SIZE = 5000
PRODUCT_LABEL = "nvidia.com/gpu.product"  # GPU feature discovery's label (docs/chargeback.md)


@dataclass
class IngestResult:
    cluster: str
    pods_seen: int = 0
    records: int = 0
    inserted: int = 0
    updated: int = 0
    vanished: int = 0
    adjustments: int = 0
    flagged: int = 0
    credits: int = 0
    found_in_cluster: int = 0
    unreadable: int = 0
    skipped: list[str] = field(default_factory=list)
    collection_id: int | None = None

    @property
    def rows_written(self) -> int:
        """Usage rows inserted or changed (and adjustment lines): 0 when the pods said nothing new."""
        return self.inserted + self.updated + self.vanished + self.adjustments


@dataclass(frozen=True)
class _RequestRow:
    team_id: int
    team_slug: str
    cost_center: str
    decision: Decision


def _context(records: Sequence[PodUsage]) -> tuple[dict, dict, dict]:
    """The request rows, teams and time-sliced pools the records refer to: three queries, whatever the count."""
    request_ids = {r.request_id for r in records if r.request_id}
    requests = {
        pk: _RequestRow(team_id, slug, cost_center, decision)
        for pk, team_id, slug, cost_center, decision in GpuRequest.objects.filter(pk__in=request_ids).values_list(
            "pk", "team_id", "team__slug", "team__cost_center", "decision"
        )
    }
    # Who owns a namespace: the team whose namespace the portal names it (provisioning.manifests.names).
    teams = {team_namespace(slug): (pk, cc) for pk, slug, cc in Team.objects.values_list("pk", "slug", "cost_center")}
    pool_keys = {
        (row.decision.cluster, row.decision.node_pool)
        for row in requests.values()
        if row.decision.strategy in REPLICATED or row.decision.node_pool
    }
    pools = {}
    if pool_keys:
        clusters = {c for c, _ in pool_keys if c}
        for cluster, name, replicas, model, cluster_model in NodePool.objects.filter(
            cluster__name__in=clusters
        ).values_list("cluster__name", "name", "time_slicing_replicas", "scheduling_model", "cluster__scheduling_model"):
            # On DRA each pod's claim holds whole devices (provisioning/manifests/devices.py): one device, one GPU.
            pools[(cluster, name)] = 1 if (model or cluster_model) == SchedulingModel.DRA else replicas
    return requests, teams, pools


def _share(strategy, devices, gpu_model, mig_profile, replicas, annotation, *, catalogue, policy):
    """(exact GPU equivalents or None, flag or None): the catalogue's value, checked against the annotation."""
    common = dict(strategy=strategy, devices=devices, gpu_model=gpu_model, mig_profile=mig_profile,
                  catalogue=catalogue, time_slicing_replicas=replicas)
    checked = expected_equivalents(**common, policy="compute")
    if checked is None:
        return annotation_fraction(annotation), Flag.EQUIVALENTS_UNVERIFIED
    # The renderer annotates compute equivalents; the stored share follows the configured MIG policy.
    stored = expected_equivalents(**common, policy=policy) if strategy == "mig" else checked
    mismatch = bool(annotation) and not annotation_agrees(annotation, checked)
    return stored, Flag.EQUIVALENTS_MISMATCH if mismatch else None


def _usage_row(record: PodUsage, *, cluster_name: str, requests, teams, pools, catalogue, policy,
               shares: dict, node_models: dict) -> tuple | str:
    """The interval row for one record, or why it cannot be billed (a string)."""
    flags: list[str] = []
    request = requests.get(record.request_id) if record.request_id else None
    if request is not None and (team_namespace(request.team_slug) != record.namespace
                                or _larger_than_approved(record, request.decision)):
        request = None  # elsewhere than its team's namespace, or asking for more per pod: not the approval's pod
    decision = request.decision if request else None
    if request is None:
        # Found in the cluster: the namespace's team pays (never the team a label names), the platform team looks.
        flags.append(Flag.FOUND_IN_CLUSTER)
        team_id, cost_center = teams.get(record.namespace, (None, ""))
    else:
        team_id, cost_center = request.team_id, request.cost_center
        if record.team and record.team != request.team_slug:
            flags.append(Flag.TEAM_MISMATCH)
    if record.cluster and record.cluster != cluster_name:
        flags.append(Flag.CLUSTER_MISMATCH)

    def from_request(value, decided):
        if value or not decided:
            return value
        flags.append(Flag.FROM_REQUEST)
        return decided

    strategy = from_request(record.strategy, decision and decision.strategy)
    gpu_model = from_request(record.gpu_model, decision and decision.gpu_model) or node_models.get(record.node, "")
    mig_profile = from_request(record.mig_profile, decision and decision.mig_profile) if strategy == "mig" else ""
    # What its containers ask for is what it holds (a copyable annotation may say less); then the annotation.
    devices = record.resource_devices or record.devices or from_request(None, decision and decision.gpus_per_replica)
    if strategy not in STRATEGIES:
        return f"{record.namespace}/{record.pod_name}: no sharing strategy"
    if not gpu_model or not devices:
        return f"{record.namespace}/{record.pod_name}: no GPU model or device count"
    replicas = pools.get((decision.cluster, decision.node_pool)) if decision else None
    key = (strategy, int(devices), gpu_model, mig_profile or "", replicas, record.annotated_equivalents)
    if key not in shares:  # many pods share one request's shape: work it out once per pass
        shares[key] = _share(*key, catalogue=catalogue, policy=policy)
    equivalents, flag = shares[key]
    if equivalents is None:
        return f"{record.namespace}/{record.pod_name}: GPU equivalents unknown (no catalogue entry, no annotation)"
    if flag:
        flags.append(flag)
    return (
        record.pod_uid, record.namespace, record.pod_name, request and record.request_id, team_id, cost_center or "",
        strategy, gpu_model, mig_profile or "", int(devices), equivalents.numerator, equivalents.denominator,
        record.annotated_equivalents[:40], ",".join(dict.fromkeys(flags)), _microseconds(record.started_at),
        _microseconds(record.ended_at), record.end_source,
    )


_UPSERT_SQL = """
WITH incoming AS (
    SELECT * FROM unnest(
        %(pod_uid)s::text[], %(namespace)s::text[], %(pod_name)s::text[], %(request_id)s::bigint[],
        %(team_id)s::bigint[], %(cost_center)s::text[], %(strategy)s::text[], %(gpu_model)s::text[],
        %(mig_profile)s::text[], %(devices)s::int[], %(num)s::bigint[], %(den)s::bigint[], %(annotated)s::text[],
        %(flags)s::text[], %(started_us)s::bigint[], %(ended_us)s::bigint[], %(end_source)s::text[]
    ) AS r(pod_uid, namespace, pod_name, request_id, team_id, cost_center, strategy, gpu_model, mig_profile,
           devices, num, den, annotated, flags, started_us, ended_us, end_source)
    CROSS JOIN LATERAL (SELECT
        timestamptz 'epoch' + r.started_us * interval '1 microsecond' AS started_at,
        timestamptz 'epoch' + r.ended_us * interval '1 microsecond' AS ended_at) t
),
plan AS (
    -- Per incoming pod (index lookups, whatever the planner guesses for unnest): its first and last segment.
    -- The earliest start ever seen moves the first segment; a finish closes the last one.
    SELECT u.id, u.started_at AS old_start, u.ended_at AS old_end,
        CASE WHEN u.started_at = s.first_start THEN LEAST(u.started_at, i.started_at) ELSE u.started_at END
            AS new_start,
        CASE WHEN u.started_at <> s.last_start OR i.ended_at IS NULL THEN u.ended_at
             WHEN u.ended_at IS NULL OR u.end_source = 'vanished' THEN GREATEST(i.ended_at, u.started_at)
             ELSE GREATEST(u.ended_at, i.ended_at) END AS new_end,
        CASE WHEN u.started_at <> s.last_start OR i.ended_at IS NULL THEN u.end_source
             WHEN u.ended_at IS NULL OR u.end_source = 'vanished' THEN i.end_source
             WHEN i.ended_at > u.ended_at THEN i.end_source
             ELSE u.end_source END AS new_source
    FROM incoming i
    CROSS JOIN LATERAL (
        SELECT min(started_at) AS first_start, max(started_at) AS last_start
        FROM chargeback_usageinterval WHERE pod_uid = i.pod_uid
    ) s
    JOIN chargeback_usageinterval u ON u.pod_uid = i.pod_uid AND u.started_at IN (s.first_start, s.last_start)
),
updated AS (
    UPDATE chargeback_usageinterval u
    SET started_at = p.new_start, ended_at = p.new_end, end_source = p.new_source, updated_at = now()
    FROM plan p
    WHERE u.id = p.id
      AND (p.new_start <> p.old_start OR p.new_end IS DISTINCT FROM p.old_end OR p.new_source <> u.end_source)
    RETURNING u.id, p.old_start, p.old_end, u.started_at AS new_start, u.ended_at AS new_end
),
inserted AS (
    INSERT INTO chargeback_usageinterval (
        pod_uid, namespace, pod_name, request_id, team_id, cost_center, cluster, strategy, gpu_model, mig_profile,
        devices, equivalents_num, equivalents_den, annotated_equivalents, flags, started_at, ended_at, end_source,
        category, is_demo, source, first_seen_at, ingested_at, updated_at)
    SELECT i.pod_uid, i.namespace, i.pod_name, i.request_id, i.team_id, i.cost_center, %(cluster)s, i.strategy,
        i.gpu_model, i.mig_profile, i.devices, i.num, i.den, i.annotated,
        COALESCE(string_to_array(NULLIF(i.flags, ''), ','), '{}'), i.started_at, i.ended_at, i.end_source,
        'usage', %(is_demo)s, %(source)s, %(now)s, now(), now()
    FROM incoming i
    WHERE NOT EXISTS (SELECT 1 FROM chargeback_usageinterval u WHERE u.pod_uid = i.pod_uid)
    ON CONFLICT DO NOTHING
    RETURNING id, NULL::timestamptz AS old_start, NULL::timestamptz AS old_end, started_at AS new_start,
        ended_at AS new_end
)
SELECT 'frozen', c.id, c.old_start, c.old_end, c.new_start, c.new_end
FROM (SELECT * FROM updated UNION ALL SELECT * FROM inserted) c
WHERE LEAST(COALESCE(c.old_start, c.new_start), c.new_start) < %(horizon)s
UNION ALL SELECT 'updated', count(*), NULL, NULL, NULL, NULL FROM updated
UNION ALL SELECT 'inserted', count(*), NULL, NULL, NULL, NULL FROM inserted
"""

_COLUMNS = ("pod_uid", "namespace", "pod_name", "request_id", "team_id", "cost_center", "strategy", "gpu_model",
            "mig_profile", "devices", "num", "den", "annotated", "flags", "started_us", "ended_us", "end_source")
_EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)


def _microseconds(moment: datetime | None) -> int | None:
    """Since the epoch, exactly (timedelta arithmetic is integral)."""
    return None if moment is None else (moment - _EPOCH) // timedelta(microseconds=1)

_VANISHED_SQL = """
UPDATE chargeback_usageinterval u
SET ended_at = GREATEST(u.started_at, u.first_seen_at, %(previous)s), end_source = 'vanished', updated_at = now()
WHERE u.cluster = %(cluster)s AND u.ended_at IS NULL AND u.first_seen_at < %(now)s
  AND u.pod_uid NOT IN (SELECT unnest(%(seen)s::text[]))  -- a hashed subplan: linear in the list
RETURNING u.id, u.started_at, NULL::timestamptz, u.started_at, u.ended_at
"""

# A preempted pod's GPU time is its own category (chargeback.ingest), from the first pass that sees it preempted;
# time in closed months stays as it was closed.
_PREEMPTED_SQL = """
UPDATE chargeback_usageinterval SET category = 'preempted', updated_at = now()
WHERE pod_uid = ANY(%(uids)s) AND category = 'usage' AND started_at >= %(horizon)s
"""

# Stand-in horizon when no month is closed: nothing is before it, so the frozen filter stays one comparison.
_NEVER = datetime(1, 1, 1, tzinfo=dt_timezone.utc)


def usage_ingest(
    *,
    cluster_name: str,
    pods: Iterable[dict],
    now: datetime | None = None,
    complete: bool = True,
    source: str = "collector",
    is_demo: bool = False,
    facts: ClusterFacts | None = None,
) -> IngestResult:
    """Turn one read of a cluster's pods into usage intervals: insert new pods, move starts earlier, close
    finished pods, and (when `complete`, i.e. the list held every portal pod of the cluster) close the open
    intervals of pods that disappeared at the last pass that still saw them. Idempotent: reading the same pods
    again writes nothing. Changes that reach into a closed month become adjustment lines. With `facts` (what the
    pass read besides the pods), a DRA pod is billed for what its claims were allocated and a pod that failed on
    an unhealthy device gets its last run credited (chargeback.services.allocation)."""
    now = now or timezone.now()
    pods = list(pods)
    owners = Owners(applied=applied_owners(cluster_name=cluster_name), between=_between(facts))
    records, unreadable = pods_usage(pods, label_domain=settings.PORTAL_LABEL_DOMAIN, owners=owners)
    # Every listed pod counts as seen, even one with no usage record (it may have lost its status).
    seen = [uid for uid in (_uid(p) for p in pods) if uid]
    result = IngestResult(cluster=cluster_name, pods_seen=len(pods), records=len(records), unreadable=len(unreadable),
                          skipped=list(unreadable))
    result.skipped.extend(f"{r.namespace}/{r.pod_name}: {problem}" for r in records for problem in r.problems)
    catalogue = load_catalogue()
    policy = settings.CHARGEBACK_MIG_EQUIVALENTS
    with transaction.atomic():
        lock_cluster(cluster_name)
        requests, teams, pools = _context(records)
        rows, shares, node_models = [], {}, _node_models(facts, catalogue)
        for record in records:
            row = _usage_row(record, cluster_name=cluster_name, requests=requests, teams=teams, pools=pools,
                             catalogue=catalogue, policy=policy, shares=shares,
                             node_models=node_models)
            if isinstance(row, str):
                result.skipped.append(row)
                continue
            rows.append(row)
        rows, mismatches = bill_as_allocated(rows, pods, facts=facts, catalogue=catalogue, policy=policy)
        result.flagged = sum(bool(row[13]) for row in rows)
        result.found_in_cluster = sum(Flag.FOUND_IN_CLUSTER in row[13].split(",") for row in rows)
        horizon = frozen_until()
        changes: list[tuple] = []
        with connection.cursor() as cursor:
            for offset in range(0, len(rows), BATCH_SIZE):
                batch = rows[offset:offset + BATCH_SIZE]
                params = {name: [row[i] for row in batch] for i, name in enumerate(_COLUMNS)}
                params.update(cluster=cluster_name, is_demo=is_demo, source=source, now=now,
                              horizon=horizon or _NEVER)
                cursor.execute(_UPSERT_SQL, params)
                for kind, *values in cursor.fetchall():
                    if kind == "frozen":
                        changes.append(tuple(values))
                    elif kind == "updated":
                        result.updated += values[0]
                    else:
                        result.inserted += values[0]
            preempted = [record.pod_uid for record in records if record.preempted]
            if preempted:
                cursor.execute(_PREEMPTED_SQL, {"uids": preempted, "horizon": horizon or _NEVER})
            if complete:
                previous = (
                    UsageCollection.objects.filter(cluster=cluster_name, status=CollectionStatus.OK, listed_at__lt=now)
                    .order_by("-listed_at").values_list("listed_at", flat=True).first()
                )
                if previous is not None:
                    cursor.execute(_VANISHED_SQL, {"previous": previous, "cluster": cluster_name, "now": now,
                                                   "seen": seen})
                    vanished = cursor.fetchall()
                    result.vanished = len(vanished)
                    if horizon:
                        changes.extend(v for v in vanished if v[1] < horizon)
        if changes and horizon:
            result.adjustments = book_frozen_changes(changes, horizon=horizon, reason=f"late data from {source}")
        mismatches_record(mismatches)
        result.credits = len(credits_record(pods=pods, facts=facts))
        collection = UsageCollection.objects.create(
            cluster=cluster_name, listed_at=now, complete=complete, source=source, pods_seen=result.pods_seen,
            intervals_inserted=result.inserted, intervals_updated=result.updated,
            intervals_vanished=result.vanished, adjustments=result.adjustments, flagged=result.flagged,
            found_in_cluster=result.found_in_cluster, pods_unreadable=result.unreadable,
            message="\n".join(line[:500] for line in result.skipped[:50]),
        )
        result.collection_id = collection.pk
    if result.skipped:
        logger.warning("collect %s: %d pods not billable or read in part, e.g. %s", cluster_name, len(result.skipped),
                       result.skipped[0][:500])
    return result


def _larger_than_approved(record: PodUsage, decision: Decision) -> bool:
    """The pod's containers ask for more devices than were approved per pod (where both are known)."""
    approved = decision.gpus_per_replica
    return bool(record.resource_devices and approved and record.resource_devices > approved)


def _node_models(facts: ClusterFacts | None, catalogue) -> dict[str, str]:
    """Node name -> the catalogue model its `nvidia.com/gpu.product` label (GPU feature discovery) names."""
    found = {}
    for node in (facts.nodes if facts else ()):
        metadata = node.get("metadata") or {}
        model = catalogue.model_by_product(str((metadata.get("labels") or {}).get(PRODUCT_LABEL, "")))
        if model is not None:
            found[metadata.get("name", "")] = model.key
    return found


def _uid(pod) -> str:
    metadata = pod.get("metadata") if isinstance(pod, dict) else None
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    return uid if isinstance(uid, str) and len(uid) <= 64 else ""


def _between(facts: ClusterFacts | None) -> dict:
    """The ReplicaSets and Jobs the pass read, by UID: the links of the pods' owner chains."""
    found = {}
    for obj in (facts.owners if facts else ()):
        try:
            identity = pod_identity(obj)
        except (AttributeError, TypeError):
            continue
        if identity.uid:
            found[identity.uid] = identity
    return found

