"""The capacity page's last 30 days, from what the portal keeps anyway: each request's status changes (its
transition events) and its decision's GPU equivalents and place. Per cluster and UTC day, the average GPU
equivalents the portal's requests held (running or stalled), had reserved (approved, not running yet) and had
waiting for approval, and the viewer's teams' part of what was held. One SQL statement.

What the inventory does not keep (its history: the nodes and their other tenants are only known as last synced) is
not drawn; the page says so.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from intake.choices import EventKind, RequestStatus
from intake.models import GpuRequest, RequestEvent

DAYS = 30
BUCKETS = {
    "held": (RequestStatus.RUNNING, RequestStatus.STALLED),
    "reserved": (RequestStatus.APPROVED, RequestStatus.PROVISIONING),
    "queued": (RequestStatus.PENDING_APPROVAL,),
}
ACTIVE = tuple(s for statuses in BUCKETS.values() for s in statuses)

SQL = """
WITH candidates AS (
    SELECT id FROM {requests} WHERE status = ANY(%(active)s) OR status_changed_at >= %(start)s
), spans AS (
    SELECT e.request_id, e.to_status AS status, e.at AS since,
           COALESCE(LEAD(e.at) OVER (PARTITION BY e.request_id ORDER BY e.at, e.id), %(now)s) AS until
    FROM {events} e WHERE e.kind = %(transition)s AND e.request_id IN (SELECT id FROM candidates)
), days AS (
    SELECT d AS day, LEAST(d + interval '1 day', %(now)s) AS day_end
    FROM generate_series(%(start)s::timestamptz, %(now)s::timestamptz, interval '1 day') AS d
)
SELECT d.day, r.decision->>'cluster' AS cluster,
       CASE WHEN s.status = ANY(%(held)s) THEN 'held' WHEN s.status = ANY(%(reserved)s) THEN 'reserved'
            ELSE 'queued' END AS bucket,
       SUM(w.share * (r.decision->>'gpu_equivalents')::numeric) AS equivalents,
       COALESCE(SUM(w.share * (r.decision->>'gpu_equivalents')::numeric)
                FILTER (WHERE %(all_teams)s OR r.team_id = ANY(%(teams)s)), 0) AS mine
FROM spans s
JOIN {requests} r ON r.id = s.request_id
JOIN days d ON s.since < d.day_end AND s.until > d.day
CROSS JOIN LATERAL (SELECT EXTRACT(EPOCH FROM LEAST(s.until, d.day_end) - GREATEST(s.since, d.day))
                           / EXTRACT(EPOCH FROM d.day_end - d.day) AS share) w
WHERE s.status = ANY(%(active)s) AND d.day_end > d.day
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3
"""


@dataclass(frozen=True)
class Day:
    day: datetime.date
    held: float
    reserved: float
    queued: float
    mine: float  # the viewer's teams' part of `held`


def capacity_history(*, team_ids: set[int] | None, now: datetime.datetime | None = None,
                     days: int = DAYS) -> dict[str, list[Day]]:
    """Per cluster, one `Day` per UTC day of the last `days` (today so far included), oldest first.
    `team_ids`: the viewer's teams (None: the viewer sees every team, so all of `held` is theirs to see)."""
    now = now or timezone.now()
    today = now.astimezone(datetime.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - datetime.timedelta(days=days - 1)
    quote = connection.ops.quote_name
    sql = SQL.format(requests=quote(GpuRequest._meta.db_table), events=quote(RequestEvent._meta.db_table))
    params = {"now": now, "start": start, "transition": EventKind.TRANSITION, "active": list(ACTIVE),
              "held": list(BUCKETS["held"]), "reserved": list(BUCKETS["reserved"]),
              "all_teams": team_ids is None, "teams": sorted(team_ids or ())}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    figures: dict[str, dict[datetime.date, dict[str, float]]] = {}
    for day, cluster, bucket, equivalents, mine in rows:
        per_day = figures.setdefault(cluster or "", {}).setdefault(day.date(), {})
        per_day[bucket] = float(equivalents or 0)
        if bucket == "held":
            per_day["mine"] = float(mine or 0)
    calendar = [(start + datetime.timedelta(days=i)).date() for i in range(days)]
    return {cluster: [Day(day, *(round(per.get(day, {}).get(k, 0.0), 3) for k in ("held", "reserved", "queued",
                                                                                   "mine")))
                      for day in calendar]
            for cluster, per in sorted(figures.items())}
