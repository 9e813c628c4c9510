"""Reads of the waits `provisioning.wait_refresh` stores: one request's last reading, and the start estimates' error."""
from __future__ import annotations

import math
import statistics

from django.db.models import Q

from intake.choices import RequestOrigin, RequestStatus
from intake.models import GpuRequest

from ..models import RequestWait
from ..wait_words import approval_wait_words
from .fit_check import request_fit
from .quota import HOLDING_STATUSES

WAITING_STATUSES = (RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.STALLED)


def approval_wait(*, gpu_request) -> dict:
    """Why a request waiting for approval waits: its place in the queue (oldest first, as the queue is shown),
    whether it fits its pool now (the fit check, naming only its own team's work) and whether it holds quota."""
    ahead = GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).filter(
        Q(created_at__lt=gpu_request.created_at) | Q(created_at=gpu_request.created_at, pk__lt=gpu_request.pk)).count()
    fit = request_fit(gpu_request=gpu_request, visible_team_ids={gpu_request.team_id})
    # Nothing of a portal request is applied before approval and the quota counts approved work only; a Workload
    # found in a Kueue queue exists already, and the portal's check answers Retry whenever Kueue reserves quota for
    # it, so it holds none while it waits (docs/admission-check.md).
    found = gpu_request.origin == RequestOrigin.CLUSTER
    holds = False if found else gpu_request.status in HOLDING_STATUSES
    words = approval_wait_words(ahead=ahead, fit_verdict=fit["verdict"], fit_reason=fit["reason"], holds_quota=holds,
                                found=found)
    return {"ahead_in_queue": ahead, "fit_verdict": fit["verdict"], "fit_reason": fit["reason"],
            "quota_held": holds, "cluster": fit["cluster"], "node_pool": fit["node_pool"], "words": words}


def request_wait(*, gpu_request) -> dict:
    """Why the request waits: for approval (`approval`), or as last read from its cluster (one query); `waiting` is
    false once it runs."""
    if gpu_request.status == RequestStatus.PENDING_APPROVAL:
        approval = approval_wait(gpu_request=gpu_request)
        return {"request_id": gpu_request.pk, "status": gpu_request.status, "waiting": True, "approval": approval,
                "checked_at": None, "blockers": [], "unblock": [approval["words"]], "missing_members": [],
                "queue_position": None, "estimated_start": None,
                "estimate_basis": "it starts only once the platform team approves it", "first_estimate": None,
                "actual_start": None, "error_seconds": None, "read_error": ""}
    record = RequestWait.objects.filter(request_id=gpu_request.pk).first()
    waiting = gpu_request.status in WAITING_STATUSES
    base = {"request_id": gpu_request.pk, "status": gpu_request.status, "waiting": waiting, "approval": None}
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
