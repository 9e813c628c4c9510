"""Submitting a request: who may request for a team, and the submission itself (decided, stored, and approved on
the spot when the rule's automatic approval holds)."""
from __future__ import annotations

from django.db import IntegrityError, transaction

from portal.errors import InvalidInput, PermissionDenied
from portal.models import Team, slug_validator
from portal.selectors import team_can_request_for

from intake import events
from intake.choices import RequestStatus
from intake.hooks import decision_gated
from intake.models import GpuRequest
from intake.services import auto_approval_team_gate, request_evaluate, request_transition
from provisioning.services import allocation_on_approved

from .approval import _lock_team_quota, approval_check


def request_rights_denied(team_slug: str) -> PermissionDenied:
    """The one answer for a team the user may not request for and for a team that does not exist: anything that
    told them apart would let anyone list the team slugs."""
    return PermissionDenied(f"You cannot request GPUs for team {team_slug}: you are not an engineer in it.")


def require_request_rights(*, user, team: Team) -> None:
    if not team_can_request_for(user=user, team=team):
        raise request_rights_denied(team.slug)


@transaction.atomic
def request_submit(*, user, team: Team, name: str, raw_answers) -> GpuRequest:
    require_request_rights(user=user, team=team)
    try:
        slug_validator(name)
    except Exception:
        raise InvalidInput(
            "Must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter "
            "or digit, at most 63 characters.",
            field="name",
        ) from None
    evaluation = request_evaluate(raw_answers=raw_answers, gates_for=team)
    decision = evaluation.decision
    if decision.auto_approve:
        # Under the team's lock, so two submissions cannot both fit under the rule's per-team cap.
        _lock_team_quota(team.pk)
        decision = auto_approval_team_gate(team=team, decision=decision)
    # Later features' say (a budget's forecast); an automatic approval is decided under the team's lock taken above.
    decision = decision_gated(team=team, decision=decision, answers=evaluation.answers.values,
                              read=evaluation.gate_reads)
    # No savepoint of its own (two round trips fewer): the IntegrityError is turned into an exception that leaves
    # this function's atomic block, which rolls the whole submission back.
    try:
        gpu_request = GpuRequest.objects.create(
            team=team,
            name=name,
            answers=evaluation.answers.values,
            defaulted_answers=sorted(evaluation.answers.defaulted),
            decision=decision,
            policy_version=evaluation.policy_version,
            rule_key=decision.rule or "",
            workload_class=evaluation.answers.values["workload_class"],
            strategy=decision.strategy,
            requested_by=user,
        )
    except IntegrityError:
        raise InvalidInput(
            f"Team {team.slug} already has an active request named {name!r}; pick another name or cancel that one.",
            field="name",
        ) from None
    events.event_transition(
        request=gpu_request, actor=user, from_status="", to_status=RequestStatus.PENDING_APPROVAL, comment="Submitted."
    )
    if decision.review_reasons:
        approval_reason = decision.reasons_for("approval")[0].text
        events.event_note(request=gpu_request, reason=decision.review_reasons[-1], comment=approval_reason)
    if decision.auto_approve:
        # --- an automatic approval passes the same quota and capacity checks ---
        check = approval_check(gpu_request=gpu_request)
        if check.refusal:
            events.event_note(request=gpu_request, reason=check.refusal_code,
                              comment=f"Not approved automatically: {check.refusal} The platform team decides.")
            return gpu_request
        approved = request_transition(
            request_id=gpu_request.pk,
            to_status=RequestStatus.APPROVED,
            actor=None,
            comment=f"Approved automatically by rule {decision.rule} (policy v{decision.policy_version})."
            + check.note,
        )
        allocation_on_approved(gpu_request=approved)
        gpu_request.refresh_from_db()
    return gpu_request
