"""Writes for metering and chargeback: ingesting pods, waste windows, rate cards and month close.

Concurrency: every write to a cluster's intervals runs under a per-cluster transaction-level advisory lock, so
passes over the same cluster from several workers serialise, and each one upserts against what the previous
one committed. A month close takes an exclusive lock that ingestion shares, so a pass never straddles a close.
The unique (pod_uid, started_at) constraint and the per-pod exclusion constraint are the safety net under that.
"""
from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone
from decimal import Decimal
from typing import Iterable, Sequence

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from intake.models import GpuRequest
from portal.errors import Conflict, InvalidInput, PermissionDenied
from portal.models import Team
from portal.roles import is_finance, is_platform
from gpu.catalogue import load_catalogue
from provisioning.choices import SchedulingModel
from provisioning.models import Cluster, GangStall, NodePool
from gpu.vocabulary import REPLICATED, STRATEGIES

from . import report_sql
from .choices import Category, CollectionStatus, EndSource, Flag
from .ingest import PodUsage, annotation_agrees, annotation_fraction, expected_equivalents, pods_usage
from .models import Adjustment, ClosedPeriod, RateCard, StallWaste, UsageCollection, UsageInterval
from .periods import add_months, day_start, month_error, month_start

logger = logging.getLogger(__name__)

LOCK_CLASS = 0x6362  # "cb": the advisory-lock namespace of chargeback
CLOSE_LOCK = 1
BATCH_SIZE = 5000


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
    skipped: list[str] = field(default_factory=list)
    collection_id: int | None = None

    @property
    def rows_written(self) -> int:
        """Usage rows inserted or changed (and adjustment lines): 0 when the pods said nothing new."""
        return self.inserted + self.updated + self.vanished + self.adjustments


# --- locks and the frozen horizon ----------------------------------------------------------------------------


def _lock_cluster(cluster_name: str) -> None:
    key = zlib.crc32(f"cluster:{cluster_name}".encode()) - 2**31  # signed int4
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [LOCK_CLASS, CLOSE_LOCK])
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, key])


def frozen_until() -> datetime | None:
    """Start of the first open month after the closed ones; everything before it is frozen (None: nothing)."""
    last = ClosedPeriod.objects.order_by("-month").values_list("month", flat=True).first()
    return None if last is None else day_start(add_months(last, 1))


# --- ingestion -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RequestRow:
    team_id: int
    team_slug: str
    cost_center: str
    decision: dict


def _context(records: Sequence[PodUsage]) -> tuple[dict, dict, dict]:
    """The request rows, teams and time-sliced pools the records refer to: three queries, whatever the count."""
    request_ids = {r.request_id for r in records if r.request_id}
    requests = {
        pk: _RequestRow(team_id, slug, cost_center, decision or {})
        for pk, team_id, slug, cost_center, decision in GpuRequest.objects.filter(pk__in=request_ids).values_list(
            "pk", "team_id", "team__slug", "team__cost_center", "decision"
        )
    }
    team_slugs = {r.team for r in records if r.team and r.request_id not in requests}
    teams = {slug: (pk, cc) for pk, slug, cc in Team.objects.filter(slug__in=team_slugs).values_list("pk", "slug", "cost_center")}
    pool_keys = {
        (row.decision.get("cluster"), row.decision.get("node_pool"))
        for row in requests.values()
        if row.decision.get("strategy") in REPLICATED or row.decision.get("node_pool")
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
               shares: dict) -> tuple | str:
    """The interval row for one record, or why it cannot be billed (a string)."""
    flags: list[str] = []
    request = requests.get(record.request_id) if record.request_id else None
    decision = request.decision if request else {}
    if request is None:
        flags.append(Flag.UNKNOWN_REQUEST)
        team_id, cost_center = teams.get(record.team, (None, ""))
    else:
        team_id, cost_center = request.team_id, request.cost_center
        if record.team and record.team != request.team_slug:
            flags.append(Flag.TEAM_MISMATCH)
    if record.cluster and record.cluster != cluster_name:
        flags.append(Flag.CLUSTER_MISMATCH)

    def from_request(value, key):
        if value or not decision.get(key):
            return value
        flags.append(Flag.FROM_REQUEST)
        return decision[key]

    strategy = from_request(record.strategy, "strategy")
    gpu_model = from_request(record.gpu_model, "gpu_model")
    mig_profile = from_request(record.mig_profile, "mig_profile") if strategy == "mig" else ""
    devices = record.devices or from_request(None, "gpus_per_replica")
    if strategy not in STRATEGIES:
        return f"{record.namespace}/{record.pod_name}: no sharing strategy"
    if not gpu_model or not devices:
        return f"{record.namespace}/{record.pod_name}: no GPU model or device count"
    replicas = pools.get((decision.get("cluster"), decision.get("node_pool"))) if decision else None
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
) -> IngestResult:
    """Turn one read of a cluster's pods into usage intervals: insert new pods, move starts earlier, close
    finished pods, and (when `complete`, i.e. the list held every portal pod of the cluster) close the open
    intervals of pods that disappeared at the last pass that still saw them. Idempotent: reading the same pods
    again writes nothing. Changes that reach into a closed month become adjustment lines."""
    now = now or timezone.now()
    pods = list(pods)
    records = pods_usage(pods, label_domain=settings.PORTAL_LABEL_DOMAIN)
    # Every listed pod counts as seen, even one with no usage record (it may have lost its status).
    seen = [uid for uid in ((p.get("metadata") or {}).get("uid") for p in pods) if uid]
    result = IngestResult(cluster=cluster_name, pods_seen=len(pods), records=len(records))
    catalogue = load_catalogue()
    policy = settings.CHARGEBACK_MIG_EQUIVALENTS
    with transaction.atomic():
        _lock_cluster(cluster_name)
        requests, teams, pools = _context(records)
        rows, shares = [], {}
        for record in records:
            row = _usage_row(record, cluster_name=cluster_name, requests=requests, teams=teams, pools=pools,
                             catalogue=catalogue, policy=policy, shares=shares)
            if isinstance(row, str):
                result.skipped.append(row)
                continue
            result.flagged += bool(row[13])
            rows.append(row)
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
            result.adjustments = _book_frozen_changes(changes, horizon=horizon, reason=f"late data from {source}")
        collection = UsageCollection.objects.create(
            cluster=cluster_name, listed_at=now, complete=complete, source=source, pods_seen=result.pods_seen,
            intervals_inserted=result.inserted, intervals_updated=result.updated,
            intervals_vanished=result.vanished, adjustments=result.adjustments, flagged=result.flagged,
            message="\n".join(result.skipped[:50]),
        )
        result.collection_id = collection.pk
    if result.skipped:
        logger.warning("collect %s: %d pods not billable, e.g. %s", cluster_name, len(result.skipped), result.skipped[0])
    return result


# --- closed months: adjustments ------------------------------------------------------------------------------

Span = tuple[datetime, datetime]


def _clip(start: datetime | None, end: datetime | None, horizon: datetime) -> Span | None:
    """The part of [start, end) before the horizon; an open end reaches the horizon."""
    if start is None or start >= horizon:
        return None
    stop = horizon if end is None else min(end, horizon)
    return (start, stop) if stop > start else None


def _minus(a: Span | None, b: Span | None) -> list[Span]:
    if a is None:
        return []
    if b is None or b[1] <= a[0] or b[0] >= a[1]:
        return [a]
    pieces = []
    if a[0] < b[0]:
        pieces.append((a[0], b[0]))
    if b[1] < a[1]:
        pieces.append((b[1], a[1]))
    return pieces


def _by_month(span: Span) -> list[Span]:
    pieces, start = [], span[0]
    while start < span[1]:
        stop = min(span[1], day_start(add_months(month_start(start.date()), 1)))
        pieces.append((start, stop))
        start = stop
    return pieces


def frozen_delta(old: Span | None, new: Span | None) -> list[tuple[Span, int]]:
    """What a change of an interval from `old` to `new` (both already clipped to frozen time) adds (+1) and
    removes (-1), one piece per month."""
    return [(piece, +1) for span in _minus(new, old) for piece in _by_month(span)] + [
        (piece, -1) for span in _minus(old, new) for piece in _by_month(span)
    ]


def _adjustment(interval: UsageInterval, *, span: Span, sign: int, category: str, horizon: datetime, reason: str):
    return Adjustment(
        interval=interval, pod_uid=interval.pod_uid, request_id=interval.request_id, team_id=interval.team_id,
        cost_center=interval.cost_center, cluster=interval.cluster, strategy=interval.strategy,
        gpu_model=interval.gpu_model, mig_profile=interval.mig_profile, devices=interval.devices,
        equivalents_num=interval.equivalents_num, equivalents_den=interval.equivalents_den, category=category,
        started_at=span[0], ended_at=span[1], sign=sign, closed_month=span[0].date().replace(day=1),
        booked_at=horizon, reason=reason[:200], is_demo=interval.is_demo,
    )


def _book_frozen_changes(changes: list[tuple], *, horizon: datetime, reason: str) -> int:
    """Adjustment lines for interval changes (id, old_start, old_end, new_start, new_end) in frozen time."""
    intervals = UsageInterval.objects.in_bulk([c[0] for c in changes])
    adjustments = []
    for pk, old_start, old_end, new_start, new_end in changes:
        interval = intervals[pk]
        for span, sign in frozen_delta(_clip(old_start, old_end, horizon), _clip(new_start, new_end, horizon)):
            adjustments.append(_adjustment(interval, span=span, sign=sign, category=interval.category,
                                           horizon=horizon, reason=reason))
    Adjustment.objects.bulk_create(adjustments)
    return len(adjustments)


# --- waste -------------------------------------------------------------------------------------------------------


@transaction.atomic
def usage_mark_waste(*, request_id: int, started_at: datetime, ended_at: datetime, reason: str = "stalled gang",
                     now: datetime | None = None, category: str = Category.WASTE) -> int:
    """Reclassify a request's GPU time inside [started_at, ended_at) as waste (e.g. the burnt time of a stalled
    gang), splitting its pods' intervals there; its own line in reports, category `waste`. Returns how many
    intervals were split. Time already in a closed month moves through adjustment lines. `category` IDLE books
    idle GPU time (paid for, unused) the same way."""
    now = now or timezone.now()
    if ended_at <= started_at:
        raise InvalidInput("The waste window must end after it starts.", field="ended_at")
    if ended_at > now:
        raise InvalidInput("The waste window cannot end in the future; mark it once it is over.", field="ended_at")
    clusters = sorted(set(UsageInterval.objects.filter(request_id=request_id).values_list("cluster", flat=True)))
    for cluster in clusters:
        _lock_cluster(cluster)
    horizon = frozen_until()
    overlapping = list(
        UsageInterval.objects.select_for_update(no_key=True)
        .filter(request_id=request_id, category=Category.USAGE, started_at__lt=ended_at)
        .exclude(ended_at__isnull=False, ended_at__lte=started_at)
        .order_by("pod_uid", "started_at")
    )
    adjustments = []
    for interval in overlapping:
        a, b = interval.started_at, interval.ended_at
        mid = (max(a, started_at), ended_at if b is None else min(b, ended_at))
        before = (a, started_at) if a < started_at else None
        after = (ended_at, b) if b is None or b > ended_at else None
        original_end, original_source = b, interval.end_source
        # Shrink the existing row first, so the pieces never overlap it (the exclusion constraint checks).
        if before:
            interval.ended_at, interval.end_source = before[1], EndSource.SPLIT
        else:
            interval.category = category
            interval.ended_at = mid[1]
            interval.end_source = EndSource.SPLIT if after else original_source
        interval.save(update_fields=["ended_at", "end_source", "category", "updated_at"])
        pieces = []
        if before:
            pieces.append((mid, category, EndSource.SPLIT if after else original_source))
        if after:
            pieces.append(((after[0], original_end), Category.USAGE, original_source))
        for (start, end), piece_category, end_source in pieces:
            piece = UsageInterval.objects.get(pk=interval.pk)
            piece.pk = None
            piece.started_at, piece.ended_at, piece.category, piece.end_source = start, end, piece_category, end_source
            piece.save(force_insert=True)
        if horizon:
            frozen_mid = _clip(mid[0], mid[1], horizon)
            if frozen_mid:
                for span in _by_month(frozen_mid):
                    adjustments.append(_adjustment(interval, span=span, sign=-1, category=Category.USAGE,
                                                   horizon=horizon, reason=f"reclassified as {category}: {reason}"))
                    adjustments.append(_adjustment(interval, span=span, sign=+1, category=category,
                                                   horizon=horizon, reason=f"reclassified as {category}: {reason}"))
    Adjustment.objects.bulk_create(adjustments)
    return len(overlapping)


def waste_record_stalls(*, cluster_name: str, now: datetime | None = None) -> int:
    """Turn every stalled gang of the cluster that is over, and whose cluster was read after it ended, into
    `waste` lines (once each). Run after each collection pass. Returns how many stalls were recorded."""
    now = now or timezone.now()
    last_read = (UsageCollection.objects.filter(cluster=cluster_name, status=CollectionStatus.OK)
                 .order_by("-listed_at").values_list("listed_at", flat=True).first())
    if last_read is None:
        return 0
    stalls = (GangStall.objects.filter(cluster__name=cluster_name, ended_at__isnull=False, ended_at__lte=last_read,
                                       waste__isnull=True)
              .exclude(ended_at=F("started_at")).order_by("ended_at"))
    recorded = 0
    for stall in stalls:
        with transaction.atomic():
            split = usage_mark_waste(request_id=stall.request_id, started_at=stall.started_at,
                                     ended_at=stall.ended_at, reason=f"stalled gang #{stall.pk}", now=now)
            StallWaste.objects.create(stall=stall, intervals_split=split)
        recorded += 1
    return recorded


# --- rate cards ---------------------------------------------------------------------------------------------------


def _require_rates_role(user) -> None:
    if not (is_platform(user) or is_finance(user)):
        raise PermissionDenied("Only the platform team and finance edit rate cards.")


def rate_card_check(*, gpu_model: str, strategy: str, valid_from: date, existing: RateCard | None = None) -> None:
    """Why a rate card cannot be saved like this (InvalidInput naming the field), or nothing."""
    catalogue = load_catalogue()
    model = catalogue.models.get(gpu_model)
    if model is None:
        raise InvalidInput(f"Unknown GPU model {gpu_model!r}; use a catalogue key such as H200-141GB.", field="gpu_model")
    if strategy == "mig" and model.mig is None:
        raise InvalidInput(f"{gpu_model} has no MIG; pick whole_gpu, time_slicing or mps.", field="strategy")
    horizon = frozen_until()
    if horizon is None:
        return
    first_open = horizon.date()
    if existing is not None and existing.pk and existing.valid_from < first_open:
        raise InvalidInput(
            f"This card priced the closed month {existing.valid_from:%Y-%m}; add a new card from {first_open} instead.",
            field="valid_from",
        )
    if valid_from < first_open:
        raise InvalidInput(
            f"{valid_from:%Y-%m} is closed and its rates are frozen; start the new rate on or after {first_open}.",
            field="valid_from",
        )


@transaction.atomic
def rate_card_create(*, user, gpu_model: str, strategy: str, price_per_equivalent_hour: Decimal, currency: str,
                     valid_from: date, note: str = "") -> RateCard:
    _require_rates_role(user)
    rate_card_check(gpu_model=gpu_model, strategy=strategy, valid_from=valid_from)
    if RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy, valid_from=valid_from).exists():
        raise InvalidInput(f"A {gpu_model} {strategy} rate already starts on {valid_from}; edit that one.",
                           field="valid_from")
    card = RateCard(gpu_model=gpu_model, strategy=strategy, price_per_equivalent_hour=price_per_equivalent_hour,
                    currency=currency.upper(), valid_from=valid_from, note=note, created_by=user)
    card.full_clean()
    card.save()
    return card


@transaction.atomic
def rate_card_update(*, user, rate_card: RateCard, **changes) -> RateCard:
    _require_rates_role(user)
    before = RateCard.objects.select_for_update(no_key=True).get(pk=rate_card.pk)
    rate_card_check(gpu_model=changes.get("gpu_model", before.gpu_model),
                    strategy=changes.get("strategy", before.strategy),
                    valid_from=changes.get("valid_from", before.valid_from), existing=before)
    for name, value in changes.items():
        setattr(rate_card, name, value)
    rate_card.full_clean()
    rate_card.save()
    return rate_card


@transaction.atomic
def rate_card_delete(*, user, rate_card: RateCard) -> None:
    _require_rates_role(user)
    rate_card_check(gpu_model=rate_card.gpu_model, strategy=rate_card.strategy, valid_from=rate_card.valid_from,
                    existing=rate_card)
    rate_card.delete()


# --- month close -------------------------------------------------------------------------------------------------


def period_closable(*, now: datetime | None = None) -> date | None:
    """The month that can be closed next: the one after the last closed, or last month when none is."""
    now = now or timezone.now()
    current = month_start(now.date())
    last = ClosedPeriod.objects.order_by("-month").values_list("month", flat=True).first()
    candidate = add_months(last, 1) if last else add_months(current, -1)
    return candidate if candidate < current else None


@transaction.atomic
def period_close(*, month: date, user, now: datetime | None = None) -> ClosedPeriod:
    """Close a month: its report lines are frozen from now on (late data becomes adjustment lines in the next
    open month). Months close in order, once they are over."""
    from .selectors import report_rows

    if not (is_finance(user) or is_platform(user)):
        raise PermissionDenied("Only finance and the platform team close months.")
    error = month_error(month)
    if error:
        raise InvalidInput(error, field="month")
    now = now or timezone.now()
    month = month_start(month)
    with connection.cursor() as cursor:  # waits for ingestion passes in flight, holds new ones back
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, CLOSE_LOCK])
    if ClosedPeriod.objects.filter(month=month).exists():
        raise Conflict(f"{month:%Y-%m} is already closed.")
    if month >= month_start(now.date()):
        raise InvalidInput(f"{month:%Y-%m} is not over yet; close it from {add_months(month, 1)} on.", field="month")
    expected = period_closable(now=now)
    if expected is None or month != expected:
        raise InvalidInput(f"Months close in order: close {expected:%Y-%m} next.", field="month")
    totals = [
        {key: str(row[key]) for key in ("category", "currency", "device_hours", "gpu_equivalent_hours", "cost")}
        for row in report_rows(user=user, start=month, end=add_months(month, 1), group_by=(), now=now)
    ]
    period = ClosedPeriod.objects.create(month=month, closed_by=user, totals=totals)
    _freeze_lines(period, now=now)
    return period


def _freeze_lines(period: ClosedPeriod, *, now: datetime) -> None:
    """Store the month's report lines; from then on the report reads the month from them alone."""
    keys = report_sql.LINE_KEYS
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH {report_sql.rollup_lines('')} INSERT INTO chargeback_closedline (period_id, {keys}, "
            f"device_seconds, gpu_equivalent_seconds, cost) "
            f"SELECT %(period)s, {keys}, device_seconds, gpu_equivalent_seconds, cost FROM lines",
            {"period": period.pk, "start": day_start(period.month), "end": day_start(add_months(period.month, 1)),
             "now": now},
        )
    period.lines_frozen = True
    period.save(update_fields=["lines_frozen"])


# --- collection -------------------------------------------------------------------------------------------------


def usage_collect(*, cluster_name: str | None = None) -> list[UsageCollection]:
    """One collection pass per enabled cluster (or the named one): read its portal pods and ingest them.
    GitOps clusters without an API server cannot be read and are recorded as skipped."""
    from . import collect

    clusters = Cluster.objects.filter(enabled=True).select_related("credential").order_by("name")
    if cluster_name:
        clusters = Cluster.objects.filter(name=cluster_name).select_related("credential")
        if not clusters:
            raise InvalidInput(f"No cluster named {cluster_name!r}.", field="cluster")
    done = []
    for cluster in clusters:
        now = timezone.now()
        if not cluster.api_server:
            done.append(UsageCollection.objects.create(
                cluster=cluster.name, listed_at=now, status=CollectionStatus.SKIPPED,
                message=f"Cluster {cluster.name} has no API server to read pods from "
                        f"(applier {cluster.applier}); set api_server and credentials to meter it.",
            ))
            continue
        try:
            pods = collect.pods_for_cluster(cluster)
        except Exception as exc:  # noqa: BLE001 - any read failure is recorded on the row, the next pass retries
            logger.warning("collect %s failed: %s", cluster.name, exc)
            done.append(UsageCollection.objects.create(
                cluster=cluster.name, listed_at=now, status=CollectionStatus.FAILED,
                message=f"{type(exc).__name__}: {exc}"[:2000],
            ))
            continue
        result = usage_ingest(cluster_name=cluster.name, pods=pods, now=now, source="collector")
        waste_record_stalls(cluster_name=cluster.name, now=now)
        done.append(UsageCollection.objects.get(pk=result.collection_id))
    return done


