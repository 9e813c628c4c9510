"""Prometheus metric families about requests, decisions and approvals, computed in SQL at scrape time.

Registered with `portal.metrics` in `IntakeConfig.ready()`. Each function runs one aggregate query.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db.models import (
    Case,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Min,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from portal.metrics import PREFIX

from .choices import RequestStatus
from .decisions import STRATEGY_WORDS
from .models import GpuRequest, RequestEvent

PLATFORM_DEFAULT_RULE = "platform default"
# Seconds from "submitted" to "approved/rejected": a minute to a week.
APPROVAL_LATENCY_BUCKETS = (60, 300, 900, 1800, 3600, 4 * 3600, 8 * 3600, 86400, 3 * 86400, 7 * 86400)


def requests_by_status() -> Iterable[Metric]:
    """Current requests by status and strategy; every known pair is present, zero when empty."""
    family = GaugeMetricFamily(f"{PREFIX}requests", "GPU requests by current status and strategy",
                               labels=["status", "strategy"])
    counts = {
        (row["status"], row["strategy"]): row["n"]
        for row in GpuRequest.objects.order_by().values("status", "strategy").annotate(n=Count("id"))
    }
    strategies = sorted(set(STRATEGY_WORDS) | {strategy for _, strategy in counts})
    for status in RequestStatus.values:
        for strategy in strategies:
            family.add_metric([status, strategy], counts.get((status, strategy), 0))
    yield family


def decisions_by_rule() -> Iterable[Metric]:
    """Every decision stored on a request, by the policy version and the route rule that made it."""
    family = CounterMetricFamily(f"{PREFIX}decisions", "Placement decisions stored on requests, by policy rule",
                                 labels=["policy_version", "rule"])
    rows = (
        GpuRequest.objects.order_by()
        .values("policy_version__number", "rule_key")
        .annotate(n=Count("id"))
        .order_by("policy_version__number", "rule_key")
    )
    for row in rows:
        family.add_metric([str(row["policy_version__number"]), row["rule_key"] or PLATFORM_DEFAULT_RULE], row["n"])
    yield family


def approval_latency() -> Iterable[Metric]:
    """Histogram of the time from submission (entering pending_approval) to approval or rejection.

    The bucket counts are computed by PostgreSQL (one conditional COUNT per bucket), labelled by outcome and by
    whether a person or the policy's auto-approval decided.
    """
    entered = (
        RequestEvent.objects.filter(
            request_id=OuterRef("request_id"), to_status=RequestStatus.PENDING_APPROVAL, at__lte=OuterRef("at")
        )
        .order_by("-at", "-id")
        .values("at")[:1]
    )
    latency = ExpressionWrapper(F("at") - Subquery(entered), output_field=DurationField())
    buckets = {
        f"le_{index}": Count("id", filter=Q(latency__lte=timedelta(seconds=bound)))
        for index, bound in enumerate(APPROVAL_LATENCY_BUCKETS)
    }
    rows = (
        RequestEvent.objects.filter(
            from_status=RequestStatus.PENDING_APPROVAL,
            to_status__in=[RequestStatus.APPROVED, RequestStatus.REJECTED],
        )
        .annotate(
            latency=latency,
            decided_by=Case(When(actor__isnull=True, then=Value("policy")), default=Value("person")),
        )
        .filter(latency__isnull=False)
        .order_by()
        .values("to_status", "decided_by")
        .annotate(count=Count("id"), total=Sum("latency"), **buckets)
    )
    family = HistogramMetricFamily(
        f"{PREFIX}approval_latency_seconds",
        "Time from submission to approval or rejection",
        labels=["outcome", "decided_by"],
    )
    found = {(row["to_status"], row["decided_by"]): row for row in rows}
    for outcome in (RequestStatus.APPROVED, RequestStatus.REJECTED):
        for decided_by in ("person", "policy"):
            row = found.get((outcome.value, decided_by))
            if row is None and decided_by == "policy":
                continue  # the policy never rejects; an empty auto-approval series only appears once one exists
            row = row or {"count": 0, "total": None, **{key: 0 for key in buckets}}
            points = [(str(float(bound)), row[f"le_{i}"]) for i, bound in enumerate(APPROVAL_LATENCY_BUCKETS)]
            points.append(("+Inf", row["count"]))
            total = row["total"].total_seconds() if row["total"] is not None else 0.0
            family.add_metric([outcome.value, decided_by], points, sum_value=total)
    yield family


def pending_and_stalled() -> Iterable[Metric]:
    """The oldest request waiting for approval, and gangs that started partially and stalled, by team."""
    now = timezone.now()
    oldest = GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).aggregate(at=Min("created_at"))["at"]
    pending = GaugeMetricFamily(f"{PREFIX}oldest_pending_approval_seconds",
                                "Age of the oldest request waiting for approval (0 when none waits)")
    pending.add_metric([], (now - oldest).total_seconds() if oldest else 0.0)
    yield pending

    stalled = GaugeMetricFamily(
        f"{PREFIX}stalled_gangs", "Gang-scheduled requests currently stalled (some members never started)",
        labels=["team"],
    )
    longest = GaugeMetricFamily(
        f"{PREFIX}stalled_gang_longest_seconds", "How long the longest-stalled gang of the team has been stalled",
        labels=["team"],
    )
    rows = (
        GpuRequest.objects.filter(status=RequestStatus.STALLED, decision__gang__isnull=False)
        .exclude(decision__gang=None)
        .order_by()
        .values("team__slug")
        .annotate(n=Count("id"), since=Min("status_changed_at"))
        .order_by("team__slug")
    )
    for row in rows:
        stalled.add_metric([row["team__slug"]], row["n"])
        longest.add_metric([row["team__slug"]], (now - row["since"]).total_seconds())
    yield stalled
    yield longest


COLLECTORS = {
    "intake.requests": requests_by_status,
    "intake.decisions": decisions_by_rule,
    "intake.approval_latency": approval_latency,
    "intake.pending_and_stalled": pending_and_stalled,
}
