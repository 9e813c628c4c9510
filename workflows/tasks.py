"""Background entry points of the request workflows: thin, each runs one service."""
from __future__ import annotations

from celery import shared_task

from . import leases


@shared_task(name="workflows.lease_sweep")
def lease_sweep() -> dict:
    """Beat: lease reminders and expiries (workflows.leases.lease_sweep); idempotent."""
    result = leases.lease_sweep()
    return {"reminded": result.reminded, "expired": result.expired}
