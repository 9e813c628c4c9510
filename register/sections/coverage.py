"""6. Chargeback coverage per cluster: of the GPU-equivalent-hours metered in the window (usage intervals clipped
to it, open ones up to now, in SQL), the share attributed to a team and a strategy through a request versus
unattributed (no team, or a team but no request the portal knows). Attributed hours are decided when every
request they belong to was approved: the approver (or a signed-off rule approving automatically) decided who pays."""
from __future__ import annotations

from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import connection

from ..choices import Section, Verdict
from .common import Item, SectionResult, Snapshot

AREA = Section.CHARGEBACK_COVERAGE
HOURS = Decimal("0.001")
MISMATCH_FLAGS = ["team_mismatch", "cluster_mismatch"]

_WINDOW = """
    SELECT i.cluster, i.team_id, i.request_id, i.strategy, i.category, i.flags,
           i.equivalents_num::numeric / i.equivalents_den AS eq,
           EXTRACT(EPOCH FROM LEAST(COALESCE(i.ended_at, %(now)s), %(now)s) - GREATEST(i.started_at, %(start)s))
               AS seconds
    FROM chargeback_usageinterval i
    WHERE i.started_at < %(now)s AND (i.ended_at IS NULL OR i.ended_at > %(start)s)
"""

TOTALS_SQL = f"""
WITH spans AS ({_WINDOW})
SELECT cluster,
       COALESCE(SUM(eq * seconds), 0) / 3600,
       COALESCE(SUM(eq * seconds) FILTER (WHERE team_id IS NOT NULL AND request_id IS NOT NULL
                                          AND strategy <> ''), 0) / 3600,
       COALESCE(SUM(eq * seconds) FILTER (WHERE team_id IS NULL), 0) / 3600,
       COALESCE(SUM(eq * seconds) FILTER (WHERE team_id IS NOT NULL AND request_id IS NULL), 0) / 3600,
       COALESCE(SUM(eq * seconds) FILTER (WHERE category = 'waste'), 0) / 3600,
       COALESCE(SUM(eq * seconds) FILTER (WHERE category = 'idle'), 0) / 3600,
       COUNT(*) FILTER (WHERE flags && %(mismatch)s::varchar[]),
       COUNT(*)
FROM spans WHERE seconds > 0
GROUP BY cluster ORDER BY cluster
"""

BY_STRATEGY_SQL = f"""
WITH spans AS ({_WINDOW})
SELECT cluster, strategy, COALESCE(SUM(eq * seconds), 0) / 3600
FROM spans WHERE seconds > 0 AND team_id IS NOT NULL AND request_id IS NOT NULL
GROUP BY cluster, strategy ORDER BY cluster, strategy
"""

APPROVALS_SQL = f"""
WITH spans AS ({_WINDOW}),
attributed AS (SELECT DISTINCT cluster, request_id FROM spans
               WHERE seconds > 0 AND team_id IS NOT NULL AND request_id IS NOT NULL)
SELECT s.cluster,
       COUNT(DISTINCT s.request_id),
       COUNT(DISTINCT s.request_id) FILTER (WHERE a.at IS NULL),
       COUNT(DISTINCT s.request_id) FILTER (WHERE a.at IS NOT NULL AND a.actor_id IS NULL),
       ARRAY_AGG(DISTINCT u.{{username}}) FILTER (WHERE u.{{username}} IS NOT NULL),
       MAX(a.at)
FROM attributed s
LEFT JOIN LATERAL (
    SELECT e.actor_id, e.at FROM intake_requestevent e
    WHERE e.request_id = s.request_id AND e.to_status = 'approved' ORDER BY e.at DESC, e.id DESC LIMIT 1
) a ON TRUE
LEFT JOIN {{users}} u ON u.id = a.actor_id
GROUP BY s.cluster
"""


def _hours(value) -> Decimal:
    return Decimal(value or 0).quantize(HOURS)


def _share(part: Decimal, total: Decimal) -> float | None:
    return round(float(part / total * 100), 1) if total else None


def coverage_rows(*, start, now) -> tuple[dict, dict, dict]:
    """Per cluster: totals, attributed hours by strategy, and the approvals behind the attributed hours. Three
    queries, whatever the number of intervals."""
    params = {"start": start, "now": now, "mismatch": MISMATCH_FLAGS}
    users = get_user_model()
    approvals_sql = APPROVALS_SQL.replace("{username}", connection.ops.quote_name(users.USERNAME_FIELD)) \
        .replace("{users}", connection.ops.quote_name(users._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(TOTALS_SQL, params)
        totals = {row[0]: row[1:] for row in cursor.fetchall()}
        cursor.execute(BY_STRATEGY_SQL, params)
        by_strategy: dict[str, dict[str, str]] = {}
        for cluster, strategy, hours in cursor.fetchall():
            by_strategy.setdefault(cluster, {})[strategy] = str(_hours(hours))
        cursor.execute(approvals_sql, params)
        approvals = {row[0]: row[1:] for row in cursor.fetchall()}
    return totals, by_strategy, approvals


def build(snapshot: Snapshot) -> SectionResult:
    totals, by_strategy, approvals = coverage_rows(start=snapshot.start, now=snapshot.now)
    prometheus_urls = {c.name: c.prometheus_url for c in snapshot.clusters}
    idle_notes: list[str] = []  # the section's notes: where idle GPUs are looked for (chargeback/idle/)
    names = [c.name for c in snapshot.clusters] + sorted(set(totals) - {c.name for c in snapshot.clusters})
    items = []
    grand = {"total": Decimal(0), "attributed": Decimal(0)}
    for name in names:
        total, attributed, no_team, no_request, waste, idle, mismatched, intervals = totals.get(
            name, (0, 0, 0, 0, 0, 0, 0, 0))
        total, attributed, no_team, no_request, waste, idle = map(
            _hours, (total, attributed, no_team, no_request, waste, idle))
        unattributed = no_team + no_request
        grand["total"] += total
        grand["attributed"] += attributed
        requests, unapproved, automatic, approvers, last_approval = approvals.get(name, (0, 0, 0, None, None))
        approvers = sorted(approvers or [])
        share = _share(attributed, total)
        if not total:
            state = f"no metered GPU time in the last {snapshot.days} days"
        else:
            state = (f"{share}% of {total} GPU-equivalent-hours attributed to a team and a strategy; "
                     f"{unattributed} unattributed")
        notes = []
        if mismatched:
            verdict = Verdict.CONFLICT
            notes.append(f"{mismatched} interval(s) carry a team or cluster label that disagrees with the request "
                         "or the cluster they were read from.")
        elif total and not unattributed and not unapproved:
            verdict = Verdict.DECIDED
        else:
            verdict = Verdict.INHERITED
        if no_team:
            notes.append(f"{no_team} GPU-equivalent-hours belong to no team: nobody decided who pays for them.")
        if no_request:
            notes.append(f"{no_request} GPU-equivalent-hours have a team but no request the portal knows.")
        if unapproved:
            notes.append(f"{unapproved} of {requests} requests with metered hours were never approved.")
        if total and verdict == Verdict.DECIDED:
            notes.append(f"Every GPU-hour belongs to one of {requests} approved requests.")
        prometheus_url = prometheus_urls.get(name, "")
        if name in prometheus_urls:
            idle_notes.append(
                f"{name}: idle GPUs are looked for through {prometheus_url}; {idle} GPU-equivalent-hours were idle "
                "(paid for, unused)." if prometheus_url else
                f"{name}: no prometheus_url, so idle GPUs are not looked for on this cluster and right-sizing has "
                "nothing to go on (docs/idle-gpus.md).")
        who = approvers + (["policy (automatic approval)"] if automatic else [])
        decided = verdict == Verdict.DECIDED
        items.append(Item(
            area=AREA, subject=name, state=state, verdict=verdict,
            owner=", ".join(who) if decided else None, signed_off_by=", ".join(who) if decided else None,
            signed_off_at=last_approval if decided else None,
            rationale=("Each GPU-hour belongs to an approved request; its approval decided that the team pays for it "
                       "at its strategy's rate.") if decided else "",
            evidence={
                "cluster": name, "gpu_equivalent_hours": str(total), "attributed": str(attributed),
                "unattributed": str(unattributed), "no_team": str(no_team), "no_request": str(no_request),
                "waste": str(waste), "idle": str(idle), "idle_gpus_watched": bool(prometheus_url),
                "attributed_share_percent": share, "attributed_by_strategy": by_strategy.get(
                    name, {}), "intervals": intervals, "mismatched_intervals": mismatched,
                "requests": requests, "requests_never_approved": unapproved,
                "requests_approved_automatically": automatic, "approvers": approvers,
            },
            notes=notes,
        ))  # fmt: skip
    summary = {
        "gpu_equivalent_hours": str(grand["total"]), "attributed": str(grand["attributed"]),
        "attributed_share_percent": _share(grand["attributed"], grand["total"]),
        "window_days": snapshot.days,
    }
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary, notes=idle_notes)
