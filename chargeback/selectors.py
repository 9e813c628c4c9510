"""Reads for chargeback: the report (one SQL statement), rate cards, intervals, closed months, collections.

The report, for a half-open UTC window [start, end):

1. spans: every interval overlapping the window, clipped to it, an open one closed at `now` (not stored);
   plus, for closed months, each adjustment's stretch with the opposite sign (so the closed month shows exactly
   what it showed when it closed) and, when its booking date is in the window, the adjustment line itself
   (category `adjustment`, or `waste_adjustment` for waste);
2. buckets: spans cut at UTC days (an adjustment line stays whole, on the day it is booked);
3. pieces: buckets cut where a rate card of the same GPU model and strategy starts (a card is in force from its
   `valid_from` until the next card's); time before any card, or of a model with no card, is unpriced
   (currency "", cost empty);
4. lines, the finest line (every groupable dimension x day x category x rate segment): device-seconds,
   GPU-equivalent-seconds (the exact fraction num/den, divided once per line and denominator at 24 decimal
   places) and the cost, rounded to the cent here and only here;
5. rows: sums of lines per grouping, so the rows always add up to the total (to the cent); hours are rounded
   to 6 places for display only; rows that net to nothing (a reclassification inside a closed month) are
   left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Iterator, Sequence

from django.db import connection
from django.db.models import Count, QuerySet
from django.utils import timezone

from portal.selectors import team_visible_ids

from . import report_sql
from .choices import GROUP_BY_CHOICES, Flag
from .filtersets import RateCardFilterSet, UsageIntervalFilterSet
from .models import Adjustment, ClosedPeriod, HardwareCredit, RateCard, UsageCollection, UsageInterval
from .periods import day_start

# group_by name -> (column in the spans, output columns)
_DIMENSIONS = {
    "team": ("team_id", ("team",)),
    "cost_center": ("cost_center", ("cost_center",)),
    "cluster": ("cluster", ("cluster",)),
    "strategy": ("strategy", ("strategy",)),
    "gpu_model": ("gpu_model", ("gpu_model",)),
    "mig_profile": ("mig_profile", ("mig_profile",)),
    "request": ("request_id", ("request", "request_name")),
    "month": (None, ("month",)),
    "day": (None, ("day",)),
}
MEASURES = ("device_hours", "gpu_equivalent_hours", "cost", "currency")
EXACT_MEASURES = ("device_seconds", "gpu_equivalent_seconds")
# Filters the report accepts: name -> condition on a span source (interval or adjustment table).
_FILTERS = {
    "team": "team_id IN (SELECT id FROM portal_team WHERE slug = %(f_team)s)",
    "cost_center": "cost_center = %(f_cost_center)s",
    "cluster": "cluster = %(f_cluster)s",
    "strategy": "strategy = %(f_strategy)s",
    "gpu_model": "gpu_model = %(f_gpu_model)s",
    "request": "request_id = %(f_request)s",
}
REPORT_FILTERS = tuple(_FILTERS)


@dataclass(frozen=True)
class ReportQuery:
    sql: str
    params: dict
    columns: tuple[str, ...]  # every output column, in order
    group_by: tuple[str, ...]

    @property
    def csv_columns(self) -> tuple[str, ...]:
        """What the API and the CSV show: the group columns, the category, the rounded measures."""
        return tuple(c for c in self.columns if c not in EXACT_MEASURES)


def ordered_group_by(group_by: Sequence[str]) -> tuple[str, ...]:
    wanted = set(group_by)
    return tuple(name for name in GROUP_BY_CHOICES if name in wanted)


def report_scope(*, user, start: date, end: date, now: datetime | None = None,
                 filters: dict | None = None) -> tuple[str, dict]:
    """(where, params) of a report over [start, end): the teams `user` sees (None: every team) and the filters,
    as " AND ..." conditions on columns every line source has (chargeback.report_sql)."""
    params: dict = {"start": day_start(start), "end": day_start(end), "now": now or timezone.now()}
    conditions = []
    team_ids = team_visible_ids(user=user) if user is not None else None
    if team_ids is not None:
        conditions.append("team_id = ANY(%(team_ids)s::bigint[])")
        params["team_ids"] = sorted(team_ids)
    for name, value in (filters or {}).items():
        if value in (None, ""):
            continue
        conditions.append(_FILTERS[name])
        params[f"f_{name}"] = value
    return "".join(f" AND {c}" for c in conditions), params


def report_query(
    *,
    user,
    start: date,
    end: date,
    group_by: Sequence[str],
    now: datetime | None = None,
    filters: dict | None = None,
    source: str = "rollups",
) -> ReportQuery:
    """The report as one SQL statement and its parameters (see the module docstring). `source="raw"` reads
    the raw intervals only: the reference the rollups are tested and benchmarked against."""
    group_by = ordered_group_by(group_by)
    where, params = report_scope(user=user, start=start, end=end, now=now, filters=filters)

    inner_keys, outer_select, joins, order = [], [], [], []
    for name in group_by:
        column, _outputs = _DIMENSIONS[name]
        if name == "month":
            inner_keys.append("date_trunc('month', day, 'UTC') AS month")
            outer_select.append("to_char(a.month AT TIME ZONE 'UTC', 'YYYY-MM') AS month")
            order.append("a.month")
        elif name == "day":
            inner_keys.append("day")
            outer_select.append("to_char(a.day AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day")
            order.append("a.day")
        elif name == "team":
            inner_keys.append("team_id")
            outer_select.append("t.slug AS team")
            joins.append("LEFT JOIN portal_team t ON t.id = a.team_id")
            order.append("t.slug")
        elif name == "request":
            inner_keys.append("request_id")
            outer_select += ["a.request_id AS request", "r.name AS request_name"]
            joins.append("LEFT JOIN intake_gpurequest r ON r.id = a.request_id")
            order.append("a.request_id")
        else:
            inner_keys.append(column)
            outer_select.append(f"a.{column} AS {name}")
            order.append(f"a.{column}")
    key_names = [k.split(" AS ")[-1] for k in inner_keys]
    group_keys = ", ".join(key_names + ["category", "currency"])
    select_keys = "".join(f"{k}, " for k in inner_keys)

    lines = report_sql.raw_lines(where) if source == "raw" else report_sql.rollup_lines(where)
    sql = f"""
WITH {lines},
a AS (
    SELECT {select_keys}category, currency,
        sum(device_seconds) AS device_seconds,
        sum(gpu_equivalent_seconds) AS gpu_equivalent_seconds,
        sum(cost) AS cost
    FROM lines
    GROUP BY {group_keys}
    -- nothing left (a reclassification inside a closed month): no line
    HAVING sum(device_seconds) <> 0 OR sum(gpu_equivalent_seconds) <> 0 OR sum(cost) <> 0
)
SELECT {"".join(f"{c}, " for c in outer_select)}a.category,
    round(a.device_seconds / 3600, 6) AS device_hours,
    round(a.gpu_equivalent_seconds / 3600, 6) AS gpu_equivalent_hours,
    round(a.cost, 2) AS cost, a.currency,
    a.device_seconds, a.gpu_equivalent_seconds
FROM a {" ".join(joins)}
ORDER BY {"".join(f"{o}, " for o in order)}a.category, a.currency
"""
    columns = tuple(out for name in group_by for out in _DIMENSIONS[name][1]) + ("category",) + MEASURES + EXACT_MEASURES
    return ReportQuery(sql=sql, params=params, columns=columns, group_by=group_by)


# generate_series() is estimated at 1,000 rows a call, so the planner prices the report in millions and
# JIT-compiles it, which took seconds (measured: 10.8 s against 0.9 s without, at 20,000 intervals).
_NO_JIT = "SET jit = off"


def report_rows(*, user, start: date, end: date, group_by: Sequence[str], now: datetime | None = None,
                filters: dict | None = None, source: str = "rollups") -> list[dict]:
    """The report rows as dicts (one query). For large results stream with `report_iter`."""
    query = report_query(user=user, start=start, end=end, group_by=group_by, now=now, filters=filters,
                         source=source)
    with connection.cursor() as cursor:
        cursor.execute(_NO_JIT)
        try:
            cursor.execute(query.sql, query.params)
            return [dict(zip(query.columns, row)) for row in cursor.fetchall()]
        finally:
            cursor.execute("RESET jit")


def report_rows_regrouped(rows: Sequence[dict], *, group_by: Sequence[str]) -> list[dict]:
    """Rows of a finer grouping summed into a coarser one (`group_by` a subset of theirs), as the report would
    give them: exact seconds and cents added up, hours rounded from the exact sums. Ordered by the group columns."""
    keys = tuple(c for name in ordered_group_by(group_by) for c in _DIMENSIONS[name][1]) + ("category", "currency")
    sums: dict[tuple, dict] = {}
    with localcontext(prec=100):  # exact: the seconds carry 24 decimals
        for row in rows:
            total = sums.setdefault(tuple(row[k] for k in keys), {"device_seconds": Decimal(0),
                                                                   "gpu_equivalent_seconds": Decimal(0), "cost": None})
            total["device_seconds"] += row["device_seconds"]
            total["gpu_equivalent_seconds"] += row["gpu_equivalent_seconds"]
            if row["cost"] is not None:
                total["cost"] = (total["cost"] or Decimal(0)) + row["cost"]
        regrouped = []
        for key, total in sorted(sums.items(), key=lambda item: tuple((v is None, v) for v in item[0])):
            if not (total["device_seconds"] or total["gpu_equivalent_seconds"] or total["cost"]):
                continue  # nothing left, as the report's HAVING
            regrouped.append({**dict(zip(keys, key)), **total,
                              "device_hours": _hours(total["device_seconds"]),
                              "gpu_equivalent_hours": _hours(total["gpu_equivalent_seconds"])})
    return regrouped


def report_total(rows: Sequence[dict]) -> dict:
    """The grand total of report rows: hours from the exact seconds (rounded once, as a row's), and the cost per
    currency (rows add up to it to the cent); time no rate card priced is counted apart."""
    with localcontext(prec=100):
        device = sum((r["device_seconds"] for r in rows), Decimal(0))
        equivalent = sum((r["gpu_equivalent_seconds"] for r in rows), Decimal(0))
        unpriced = sum((r["gpu_equivalent_seconds"] for r in rows if r["cost"] is None), Decimal(0))
        costs: dict[str, Decimal] = {}
        for row in rows:
            if row["cost"] is not None:
                costs[row["currency"]] = costs.get(row["currency"], Decimal(0)) + row["cost"]
    return {"device_hours": _hours(device), "gpu_equivalent_hours": _hours(equivalent),
            "costs": [{"currency": currency, "cost": cost} for currency, cost in sorted(costs.items())],
            "unpriced_gpu_equivalent_hours": _hours(unpriced)}


def _hours(seconds: Decimal) -> Decimal:
    return (seconds / 3600).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def report_iter(query: ReportQuery, *, chunk_size: int = 2000) -> Iterator[tuple]:
    """The rows of a report as tuples (in `query.columns` order), read through a server-side cursor a chunk
    at a time, so memory stays flat however many rows there are."""
    with connection.cursor() as settings_cursor:
        # A cursor is planned for its first rows (cursor_tuple_fraction 0.1); this one is always read to the end.
        settings_cursor.execute("SET cursor_tuple_fraction = 1.0")
        settings_cursor.execute(_NO_JIT)
    try:
        with connection.chunked_cursor() as cursor:
            cursor.execute(query.sql, query.params)
            while True:
                chunk = cursor.fetchmany(chunk_size)
                if not chunk:
                    return
                yield from chunk
    finally:
        with connection.cursor() as settings_cursor:
            settings_cursor.execute("RESET cursor_tuple_fraction")
            settings_cursor.execute("RESET jit")


def report_has_demo_data(*, user, start: date, end: date) -> bool:
    queryset = UsageInterval.objects.filter(is_demo=True, started_at__lt=day_start(end)).exclude(
        ended_at__lte=day_start(start)
    )
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        queryset = queryset.filter(team_id__in=team_ids)
    return queryset.exists()


def interval_list(*, user, filters: dict | None = None) -> QuerySet[UsageInterval]:
    queryset = UsageInterval.objects.select_related("team", "request")
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        queryset = queryset.filter(team_id__in=team_ids)
    if filters:
        queryset = UsageIntervalFilterSet(filters, queryset=queryset).qs
    return queryset.order_by("-started_at", "pod_uid")


def rate_card_list(*, filters: dict | None = None) -> QuerySet[RateCard]:
    queryset = RateCard.objects.all()
    if filters:
        queryset = RateCardFilterSet(filters, queryset=queryset).qs
    return queryset.order_by("gpu_model", "strategy", "valid_from")


def closed_period_list() -> QuerySet[ClosedPeriod]:
    return ClosedPeriod.objects.select_related("closed_by").order_by("-month")


def adjustment_list(*, user) -> QuerySet[Adjustment]:
    queryset = Adjustment.objects.select_related("team", "request")
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        queryset = queryset.filter(team_id__in=team_ids)
    return queryset.order_by("-booked_at", "started_at", "id")


def credit_list(*, user) -> QuerySet[HardwareCredit]:
    """Hardware-fault credits, newest first, of the teams the user sees."""
    queryset = HardwareCredit.objects.select_related("team", "reversed_by")
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        queryset = queryset.filter(team_id__in=team_ids)
    return queryset.order_by("-ended_at", "pod_uid", "id")


def allocation_mismatches(*, user, start: date, end: date) -> list[dict]:
    """Requests billed in [start, end) for other devices than were approved (intervals flagged
    `allocation_mismatch`): what was approved (the decision), what was billed, how many pods."""
    queryset = UsageInterval.objects.filter(flags__contains=[Flag.ALLOCATION_MISMATCH], started_at__lt=day_start(end))
    queryset = queryset.exclude(ended_at__lte=day_start(start)).exclude(request=None)
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        queryset = queryset.filter(team_id__in=team_ids)
    rows = (queryset.values("request_id", "request__name", "request__decision", "team__slug", "gpu_model",
                            "mig_profile", "devices").annotate(pods=Count("pod_uid", distinct=True))
            .order_by("request_id", "gpu_model", "mig_profile", "devices"))
    return [_mismatch_row(r, r["request__decision"]) for r in rows]


def _mismatch_row(row: dict, approved) -> dict:
    """One mismatch as the report shows it; `approved` is the request's Decision (the field reads it as the type)."""
    return {"request": row["request_id"], "request_name": row["request__name"], "team": row["team__slug"],
            "approved_gpu_model": (approved.gpu_model if approved else "") or "",
            "approved_mig_profile": (approved.mig_profile if approved else "") or "",
            "approved_devices": approved.gpus_per_replica if approved else None,
            "billed_gpu_model": row["gpu_model"], "billed_mig_profile": row["mig_profile"],
            "billed_devices": row["devices"], "pods": row["pods"]}


def collection_list() -> QuerySet[UsageCollection]:
    return UsageCollection.objects.order_by("-listed_at", "-id")
