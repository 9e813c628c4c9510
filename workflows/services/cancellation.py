"""Cancelling a request: its team or the platform team withdraws it, and what was applied is torn down (the
teardown job is queued in the cancel's transaction and sent after commit)."""
from __future__ import annotations

from django.db import transaction

from intake.choices import REQUEST_TERMINAL, RequestStatus
from intake.models import GpuRequest
from intake.selectors import CANCEL, request_action_check, request_get
from intake.services import request_transition
from portal.errors import Conflict
from provisioning.services import allocation_on_cancelled


@transaction.atomic
def request_cancel(*, user, request_id, comment: str = "", expected_status: str | None = None) -> GpuRequest:
    gpu_request = request_get(user=user, request_id=request_id)
    if gpu_request.status in REQUEST_TERMINAL:
        raise Conflict(f"Request #{gpu_request.pk} is already {gpu_request.status}; there is nothing to cancel.")
    request_action_check(user=user, gpu_request=gpu_request, action=CANCEL)
    cancelled = request_transition(
        request_id=gpu_request.pk, to_status=RequestStatus.CANCELLED, actor=user, comment=comment or "Cancelled.",
        expected_from=expected_status,
    )
    allocation_on_cancelled(gpu_request=cancelled)
    return cancelled
