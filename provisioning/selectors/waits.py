"""Reads of the waits `provisioning.waits` stores: one request's last reading, and the start estimates' error."""
from __future__ import annotations

import math
import statistics

from intake.choices import RequestStatus

from ..models import RequestWait

WAITING_STATUSES = (RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.STALLED)


def request_wait(*, gpu_request) -> dict:
    """Why the request waits, as last read from its cluster (one query); `waiting` is false once it runs."""
    record = RequestWait.objects.filter(request_id=gpu_request.pk).first()
    waiting = gpu_request.status in WAITING_STATUSES
    base = {"request_id": gpu_request.pk, "status": gpu_request.status, "waiting": waiting}
    if record is None:
        return {**base, "checked_at": None, "blockers": [], "unblock": [], "missing_members": [],
                "queue_position": None, "estimated_start": None,
                "estimate_basis": "not read from the cluster yet" if waiting else "", "first_estimate": None,
                "actual_start": None, "error_seconds": None, "read_error": ""}
    return {**base, "checked_at": record.checked_at, "blockers": record.blockers, "unblock": record.unblock,
            "missing_members": record.missing_members, "queue_position": record.queue_position,
            "estimated_start": record.estimated_start if waiting else None, "estimate_basis": record.estimate_basis,
            "first_estimate": record.first_estimate, "actual_start": record.actual_start,
            "error_seconds": record.error_seconds, "read_error": record.read_error}


def wait_estimate_error() -> dict:
    """The median (and 90th percentile, nearest rank) absolute error of the first start estimates over the requests
    that have started since, and the median signed error (positive: later than estimated)."""
    errors = list(RequestWait.objects.filter(error_seconds__isnull=False).values_list("error_seconds", flat=True))
    absolute = sorted(abs(e) for e in errors)
    return {"requests": len(errors),
            "median_abs_error_minutes": round(statistics.median(absolute) / 60, 1) if errors else None,
            "p90_abs_error_minutes": round(absolute[math.ceil(0.9 * len(absolute)) - 1] / 60, 1) if errors else None,
            "median_error_minutes": round(statistics.median(errors) / 60, 1) if errors else None}
