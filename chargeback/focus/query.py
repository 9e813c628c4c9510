"""The FOCUS export's read: the report's finest lines (chargeback.report_sql, the same lines the report sums, from
rollups, frozen closed months and the raw rows rollups cannot hold) with what a FOCUS row also names: the team,
the request, the rate card's price and whether the request was allocated something else than it was approved."""
from __future__ import annotations

from datetime import date, datetime
from typing import Iterator

from django.conf import settings

from .. import report_sql
from ..selectors import ReportQuery, report_iter, report_scope
from .columns import Line, Provider, columns, row

_SELECT = (
    "day", "category", "currency", "segment", "cost", "device_hours", "gpu_equivalent_hours", "price", "team",
    "team_name", "cost_center", "cluster", "strategy", "gpu_model", "mig_profile", "request_id", "request_name",
    "allocation_mismatch",
)


def focus_query(*, user, start: date, end: date, now: datetime | None = None,
                filters: dict | None = None) -> ReportQuery:
    """One statement: every priced line of [start, end) the user sees, in a stable order. Unpriced time (before
    any rate card) has no price and no currency, which every FOCUS cost column needs: it stays in the report."""
    where, params = report_scope(user=user, start=start, end=end, now=now, filters=filters)
    sql = f"""
WITH {report_sql.rollup_lines(where)},
mismatched AS (  -- requests billed as allocated where the cluster allocated other than the approval
    SELECT DISTINCT request_id, gpu_model, mig_profile FROM chargeback_usageinterval
    WHERE flags @> ARRAY['allocation_mismatch']::varchar(40)[] AND request_id IS NOT NULL
)
SELECT l.day, l.category, l.currency, l.segment, round(l.cost, 2),
    round(l.device_seconds / 3600, 6), round(l.gpu_equivalent_seconds / 3600, 6),
    rc.price_per_equivalent_hour, t.slug, t.name, l.cost_center, l.cluster, l.strategy, l.gpu_model, l.mig_profile,
    l.request_id, r.name, m.request_id IS NOT NULL
FROM lines l
LEFT JOIN portal_team t ON t.id = l.team_id
LEFT JOIN intake_gpurequest r ON r.id = l.request_id
LEFT JOIN chargeback_ratecard rc ON rc.gpu_model = l.gpu_model AND rc.strategy = l.strategy
    AND rc.valid_from::timestamp AT TIME ZONE 'UTC' = l.segment
LEFT JOIN mismatched m ON m.request_id = l.request_id AND m.gpu_model = l.gpu_model AND m.mig_profile = l.mig_profile
WHERE l.cost IS NOT NULL AND (l.device_seconds <> 0 OR l.gpu_equivalent_seconds <> 0 OR l.cost <> 0)
ORDER BY l.day, t.slug NULLS FIRST, l.cost_center, l.request_id NULLS FIRST, l.cluster, l.strategy, l.gpu_model,
    l.mig_profile, l.category, l.segment
"""
    return ReportQuery(sql=sql, params=params, columns=_SELECT, group_by=())


def focus_provider() -> Provider:
    return Provider(name=settings.CHARGEBACK_FOCUS_PROVIDER, tag_prefix=settings.PORTAL_LABEL_DOMAIN)


def focus_rows(query: ReportQuery, *, version: str, provider: Provider) -> Iterator[dict]:
    """The export's rows, read through a server-side cursor (constant memory)."""
    for values in report_iter(query):
        yield row(Line(*values), provider=provider, version=version)


def focus_columns(version: str) -> tuple[str, ...]:
    return columns(version)
