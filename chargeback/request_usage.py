"""What one request has used so far, as metered (its intervals, an open one counted up to now) and priced by the
report's own rules: for the request page of a running request."""
from __future__ import annotations

import datetime
from decimal import Decimal

from django.utils import timezone

from .selectors import report_rows


def request_usage_so_far(*, gpu_request, now: datetime.datetime | None = None) -> dict:
    """{"gpu_hours": Decimal, "costs": [(currency, Decimal)], "unpriced": bool} over the request's whole life."""
    now = now or timezone.now()
    start = gpu_request.created_at.astimezone(datetime.UTC).date()
    end = now.astimezone(datetime.UTC).date() + datetime.timedelta(days=1)
    rows = report_rows(user=None, start=start, end=end, group_by=["request"], now=now,
                       filters={"request": gpu_request.pk})
    hours, costs, unpriced = Decimal(0), {}, False
    for row in rows:
        hours += row["gpu_equivalent_hours"] or 0
        if row["cost"] is None:
            unpriced = unpriced or bool(row["gpu_equivalent_hours"])
        else:
            costs[row["currency"]] = costs.get(row["currency"], Decimal(0)) + row["cost"]
    return {"gpu_hours": hours, "costs": sorted(costs.items()), "unpriced": unpriced}
