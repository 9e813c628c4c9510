"""Late data for closed months: what a change of an interval adds to and removes from frozen time, as
adjustment lines booked at the start of the first open month (docs/chargeback.md, "Month close")."""
from __future__ import annotations

from datetime import datetime

from ..models import Adjustment, UsageInterval
from ..periods import add_months, day_start, month_start

Span = tuple[datetime, datetime]


def clip(start: datetime | None, end: datetime | None, horizon: datetime) -> Span | None:
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


def by_month(span: Span) -> list[Span]:
    pieces, start = [], span[0]
    while start < span[1]:
        stop = min(span[1], day_start(add_months(month_start(start.date()), 1)))
        pieces.append((start, stop))
        start = stop
    return pieces


def frozen_delta(old: Span | None, new: Span | None) -> list[tuple[Span, int]]:
    """What a change of an interval from `old` to `new` (both already clipped to frozen time) adds (+1) and
    removes (-1), one piece per month."""
    return [(piece, +1) for span in _minus(new, old) for piece in by_month(span)] + [
        (piece, -1) for span in _minus(old, new) for piece in by_month(span)
    ]


def adjustment_line(interval: UsageInterval, *, span: Span, sign: int, category: str, horizon: datetime, reason: str):
    return Adjustment(
        interval=interval, pod_uid=interval.pod_uid, request_id=interval.request_id, team_id=interval.team_id,
        cost_center=interval.cost_center, cluster=interval.cluster, strategy=interval.strategy,
        gpu_model=interval.gpu_model, mig_profile=interval.mig_profile, devices=interval.devices,
        equivalents_num=interval.equivalents_num, equivalents_den=interval.equivalents_den, category=category,
        started_at=span[0], ended_at=span[1], sign=sign, closed_month=span[0].date().replace(day=1),
        booked_at=horizon, reason=reason[:200], is_demo=interval.is_demo,
    )


def book_frozen_changes(changes: list[tuple], *, horizon: datetime, reason: str) -> int:
    """Adjustment lines for interval changes (id, old_start, old_end, new_start, new_end) in frozen time."""
    intervals = UsageInterval.objects.in_bulk([c[0] for c in changes])
    adjustments = []
    for pk, old_start, old_end, new_start, new_end in changes:
        interval = intervals[pk]
        for span, sign in frozen_delta(clip(old_start, old_end, horizon), clip(new_start, new_end, horizon)):
            adjustments.append(adjustment_line(interval, span=span, sign=sign, category=interval.category,
                                           horizon=horizon, reason=reason))
    Adjustment.objects.bulk_create(adjustments)
    return len(adjustments)

