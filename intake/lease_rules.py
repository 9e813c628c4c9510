"""The rules of a lease, without writing anything: when a decided lease ends, how much of it is left, how its hours
are said, and the event reasons. The writes (extension, reminders, expiry) are in `workflows.leases`."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from .models import GpuRequest

LEASE_EXPIRED = "LeaseExpired"
LEASE_EXTENDED = "LeaseExtended"
LEASE_REMINDED = "LeaseReminder"


def lease_hours_words(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:.1f}".rstrip("0").rstrip(".") + " h"


def lease_start(gpu_request: GpuRequest, *, now: datetime) -> bool:
    """At approval: the lease runs from now for the decided hours. Returns whether the request has one."""
    lease = gpu_request.decision.lease
    if not lease:
        return False
    gpu_request.lease_expires_at = now + timedelta(hours=lease.hours)
    return True


def lease_time_left(gpu_request: GpuRequest, *, now: datetime | None = None) -> timedelta | None:
    if gpu_request.lease_expires_at is None:
        return None
    return max(timedelta(0), gpu_request.lease_expires_at - (now or timezone.now()))
