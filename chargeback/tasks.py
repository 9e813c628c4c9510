"""Celery entry points for chargeback. Each pass writes a UsageCollection row (status, message, counts)."""
from __future__ import annotations

from celery import shared_task

from . import services
from .budget_services import budget_thresholds_notify as notify
from .idle.services import idle_scan_all as scan_all


@shared_task(name="chargeback.usage_collect", ignore_result=True)
def usage_collect(cluster_name: str | None = None) -> list[int]:
    """One collection pass (beat runs it every CHARGEBACK_COLLECT_SECONDS); returns the collection row ids.
    Read failures are recorded on the rows, and the next pass reads again: no retry here."""
    return [collection.pk for collection in services.usage_collect(cluster_name=cluster_name)]


@shared_task(name="chargeback.budget_thresholds_notify")
def budget_thresholds_notify() -> list[list[int]]:
    """Beat: notify each budget threshold crossed this month, once (chargeback.budget_services); idempotent."""
    return [list(pair) for pair in notify()]


@shared_task(name="chargeback.idle_scan_all", ignore_result=True)
def idle_scan_all() -> list[int]:
    """One idle scan of every enabled cluster that has a prometheus_url (beat: PORTAL_IDLE_SCAN_SECONDS). Each
    scan writes an IdleScan row; a cluster whose Prometheus cannot be reached is recorded and read again next time."""
    return [scan.pk for scan in scan_all()]
