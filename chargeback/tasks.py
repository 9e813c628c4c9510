"""Celery entry points for chargeback. Each pass writes a UsageCollection row (status, message, counts)."""
from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="chargeback.usage_collect", ignore_result=True)
def usage_collect(cluster_name: str | None = None) -> list[int]:
    """One collection pass (beat runs it every CHARGEBACK_COLLECT_SECONDS); returns the collection row ids.
    Read failures are recorded on the rows, and the next pass reads again: no retry here."""
    return [collection.pk for collection in services.usage_collect(cluster_name=cluster_name)]
