"""Cancelling a request: its team or the platform team withdraws it (the teardown of what was applied follows the
cancelled status, through intake.hooks)."""
from __future__ import annotations

from portal.errors import Conflict

from ..choices import REQUEST_TERMINAL, RequestStatus
from ..models import GpuRequest
from ..selectors import CANCEL, request_action_check, request_get
from .transitions import request_transition


def request_cancel(*, user, request_id, comment: str = "", expected_status: str | None = None) -> GpuRequest:
    gpu_request = request_get(user=user, request_id=request_id)
    if gpu_request.status in REQUEST_TERMINAL:
        raise Conflict(f"Request #{gpu_request.pk} is already {gpu_request.status}; there is nothing to cancel.")
    request_action_check(user=user, gpu_request=gpu_request, action=CANCEL)
    return request_transition(
        request_id=gpu_request.pk, to_status=RequestStatus.CANCELLED, actor=user, comment=comment or "Cancelled.",
        expected_from=expected_status,
    )
