"""Deciding a request: approval (after the team's quota and the fit check, under the team's lock, then the apply job)
and rejection.
Who may decide is the one rule of who may do what to a request (`intake.selectors.request_action_refusal`)."""
from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from gpu.vocabulary import FITS_AFTER, NEVER_FITS
from portal.errors import Conflict, InvalidInput
from portal.models import Team

from intake.choices import RequestStatus
from intake.models import GpuRequest
from intake.selectors import APPROVE, REJECT, request_action_check, request_get
from intake.services import check_edge, check_expected, request_transition
from provisioning.selectors import request_fit
from provisioning.services import allocation_on_approved


def request_approve(*, user, request_id, comment: str = "", expected_status: str | None = None) -> GpuRequest:
    gpu_request = request_get(user=user, request_id=request_id)
    request_action_check(user=user, gpu_request=gpu_request, action=APPROVE)
    # The status is checked under the lock (_approve_checked), where a stale one answers 409, not 403.
    return _approve_checked(request_id=gpu_request.pk, actor=user, comment=comment or "Approved.",
                            expected_from=expected_status)


@dataclass(frozen=True)
class ApprovalCheck:
    """What approval would do: `refusal` (and its code) when the team's quota would be exceeded or the request can
    never fit its pool; otherwise `note`, appended to the approval event (e.g. what must finish first)."""

    fit: dict
    refusal: str = ""
    refusal_code: str = ""
    note: str = ""


def _lock_team_quota(team_id: int) -> None:
    """Serialise approvals of one team (they sum its quota). FOR NO KEY UPDATE: it excludes other approvals but not
    the FOR KEY SHARE locks that inserting a request (its foreign key to the team) takes, so a submission never
    waits on, or deadlocks with, an approval. (A plain FOR UPDATE did deadlock under load: the fault tests.)"""
    Team.objects.select_for_update(no_key=True).filter(pk=team_id).first()


def approval_check(*, gpu_request: GpuRequest) -> ApprovalCheck:
    """Quota and fit for approving this request. Takes the team's row lock, so within the caller's transaction
    no other approval for the team can sum the same quota at the same time."""
    _lock_team_quota(gpu_request.team_id)
    answer = request_fit(gpu_request=gpu_request)
    quota = answer["quota"]
    if quota["exceeded"]:
        return ApprovalCheck(fit=answer, refusal=f"Over quota: {quota['message']}", refusal_code="OverQuota")
    if answer["verdict"] == NEVER_FITS:
        return ApprovalCheck(fit=answer, refusal=f"It can never fit its pool: {answer['reason']}",
                             refusal_code="NeverFits")
    if answer["verdict"] == FITS_AFTER:
        return ApprovalCheck(fit=answer, note=f" Capacity: does not fit now. {answer['reason']}")
    return ApprovalCheck(fit=answer)


@transaction.atomic
def _approve_checked(*, request_id: int, actor, comment: str, expected_from: str | None = None) -> GpuRequest:
    """Approve after the quota and fit checks, in one transaction holding the team's and the request's locks (in
    that order), so two concurrent approvals cannot both pass a quota that fits only one."""
    team_id = GpuRequest.objects.values_list("team_id", flat=True).get(pk=request_id)
    _lock_team_quota(team_id)
    gpu_request = GpuRequest.objects.select_for_update(no_key=True, of=("self",)).select_related("team").get(pk=request_id)
    check_expected(gpu_request, expected_from)
    check_edge(gpu_request, RequestStatus.APPROVED)
    check = approval_check(gpu_request=gpu_request)
    if check.refusal:
        raise Conflict(check.refusal)
    approved = request_transition(request_id=request_id, to_status=RequestStatus.APPROVED, actor=actor,
                                  comment=comment + check.note)
    allocation_on_approved(gpu_request=approved)
    return approved


def request_reject(*, user, request_id, comment: str, expected_status: str | None = None) -> GpuRequest:
    gpu_request = request_get(user=user, request_id=request_id)
    request_action_check(user=user, gpu_request=gpu_request, action=REJECT)
    if not (comment or "").strip():
        raise InvalidInput("Say why the request is rejected; the engineer reads it.", field="comment")
    return request_transition(
        request_id=gpu_request.pk, to_status=RequestStatus.REJECTED, actor=user, comment=comment.strip(),
        expected_from=expected_status,
    )
