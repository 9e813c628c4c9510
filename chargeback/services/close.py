"""Month close: months close in order once over, their totals are recorded and their report lines frozen."""
from __future__ import annotations

from datetime import date, datetime

from django.db import connection, transaction
from django.utils import timezone

from portal.errors import Conflict, InvalidInput, PermissionDenied
from portal.roles import is_finance, is_platform

from .. import report_sql
from ..models import ClosedPeriod
from ..periods import add_months, day_start, month_error, month_start
from ..selectors import report_rows
from .locks import lock_close


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
    if not (is_finance(user) or is_platform(user)):
        raise PermissionDenied("Only finance and the platform team close months.")
    error = month_error(month)
    if error:
        raise InvalidInput(error, field="month")
    now = now or timezone.now()
    month = month_start(month)
    lock_close()
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

