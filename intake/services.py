"""Writes for requests and policy. Every state change goes through `request_transition`."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When
from django.utils import timezone

from portal.errors import Conflict, InvalidInput, PermissionDenied
from portal.models import Team, slug_validator
from portal.roles import is_platform
from portal.selectors import team_can_request_for
from provisioning.manifests.names import PREVIEW_MAX_ID, preview_name
from provisioning.selectors import team_quota_state

from . import events, hooks
from .answers import AnswersInvalid, normalise_answers
from .choices import REQUEST_TERMINAL, REQUEST_TRANSITIONS, PolicyStatus, RequestStatus
from .decision_inputs import decision_inputs
from .decisions import REVIEW, STRATEGY_WORDS, Answers, PlacementImpossible, decide, summarise
from .hooks import decision_gated, inventory_snapshot
from .leases import lease_start
from .models import GpuRequest, PolicyVersion, Rule
from .policy import rule_validation_errors
from .questionnaire import NormalisedAnswers
from .selectors import may_cancel, policy_current, policy_spec, request_get, team_held_under_rule


@dataclass(frozen=True)
class Evaluation:
    answers: NormalisedAnswers
    decision: dict
    policy_version: PolicyVersion


class AnswersError(InvalidInput):
    """Several answers are wrong at once; the API shows each under `answers`."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()), path=("answers",))
        self.errors = errors

    def as_field_errors(self) -> dict:
        return {"answers": self.errors}


def request_rights_denied(team_slug: str) -> PermissionDenied:
    """The one answer for a team the user may not request for and for a team that does not exist: anything that
    told them apart would let anyone list the team slugs."""
    return PermissionDenied(f"You cannot request GPUs for team {team_slug}: you are not an engineer in it.")


def _require_request_rights(*, user, team: Team) -> None:
    if not team_can_request_for(user=user, team=team):
        raise request_rights_denied(team.slug)


def request_evaluate(*, raw_answers, policy_version: PolicyVersion | None = None, inventory=None,
                     team: Team | None = None) -> Evaluation:
    """Answers -> decision under a policy version (the active one by default). Stores nothing.
    `raw_answers` may be already normalised (the API's serializer does that), keeping what was defaulted.
    With `team`, a rule's automatic approval is also held against the team's quota and the rule's per-team cap."""
    try:
        answers = raw_answers if isinstance(raw_answers, NormalisedAnswers) else normalise_answers(raw_answers)
    except AnswersInvalid as exc:
        raise AnswersError(exc.errors) from None
    if policy_version is None and inventory is None:
        current = decision_inputs()  # the usual case (preview, submit): cached per process, checked per call
        version, policy, inventory = current.policy_version, current.policy, current.inventory
    else:
        version = policy_version or policy_current()
        policy, inventory = policy_spec(version), inventory or inventory_snapshot()
    try:
        decision = decide(Answers.from_dict(answers.values, answers.defaulted), policy, inventory)
    except PlacementImpossible as exc:
        raise InvalidInput(exc.message, path=("answers", exc.field)) from None
    if team is not None:
        decision = auto_approval_team_gate(team=team, decision=decision)
        decision = decision_gated(team=team, decision=decision, answers=answers.values)
    return Evaluation(answers=answers, decision=decision, policy_version=version)


def _team_gate_refusal(*, team: Team, decision: dict) -> tuple[str, str] | None:
    """(code, text) when the team's state keeps a rule's automatic approval from holding."""
    strategy, rule, limits = decision["strategy"], decision["rule"], decision.get("auto_approve_limits") or {}
    words = STRATEGY_WORDS[strategy]
    quota = team_quota_state(team=team, strategy=strategy, requested=decision["gpu_equivalents"])
    if quota.limit is None and not limits.get("without_quota"):
        return ("NoQuota", f"Not approved automatically: team {team.slug} has no {words} quota, and rule {rule} "
                           f"does not approve work of teams without one. {REVIEW}")
    cap = limits.get("per_team")
    if cap is not None:
        held = team_held_under_rule(team=team, rule_key=rule)
        would_hold = held + Decimal(str(decision["gpu_equivalents"]))
        if would_hold > Decimal(str(cap)):
            return ("OverAutoApprovalTeamCap",
                    f"Not approved automatically: team {team.slug} would hold {_figure(would_hold)} GPU equivalents "
                    f"under rule {rule} ({_figure(held)} held), more than the {_figure(cap)} it approves without "
                    f"review at once. {REVIEW}")
    return None


def _figure(value) -> str:
    return f"{Decimal(str(value)):.3f}".rstrip("0").rstrip(".")


def auto_approval_team_gate(*, team: Team, decision: dict) -> dict:
    """The decision, with its automatic approval withdrawn (and the reason said) if the team has no quota on the
    strategy or would pass the rule's per-team cap. Reads the team's state; call it under the team's lock where
    the answer is acted on."""
    if not decision["auto_approve"]:
        return decision
    refusal = _team_gate_refusal(team=team, decision=decision)
    if refusal is None:
        return decision
    code, text = refusal
    gated = {**decision, "auto_approve": False, "review_reasons": [*decision.get("review_reasons", ()), code],
             "reasons": [{**r, "text": text} if r["field"] == "approval" else r for r in decision["reasons"]]}
    gated["summary"] = summarise(gated, None)
    return gated


@dataclass(frozen=True)
class Preview:
    decision: dict
    manifests: list[dict]
    # "Kind name" per object, as it will be applied; the request id, unknown yet, shown as <id> (names.py).
    object_names: list[str] = field(default_factory=list)


def request_preview(*, user, team: Team, raw_answers, name: str = "preview") -> Preview:
    """What the user would get, and the objects that would be applied (named as request #0). Stores nothing.

    `object_names` are the names the objects will have: rendered for two ids, so that what depends on the id
    (it is not known yet) shows as a placeholder rather than as a made-up name."""
    from provisioning.manifests import RenderError
    from provisioning.selectors import manifests_render

    _require_request_rights(user=user, team=team)
    evaluation = request_evaluate(raw_answers=raw_answers, team=team)
    try:
        manifests = manifests_render(team=team, request_id=0, name=name, answers=evaluation.answers.values,
                                     decision=evaluation.decision)
        small, large = (manifests_render(team=team, request_id=request_id, name=name,
                                         answers=evaluation.answers.values, decision=evaluation.decision)
                        for request_id in (1, PREVIEW_MAX_ID))
    except RenderError as exc:
        raise InvalidInput(f"These answers cannot be turned into Kubernetes objects: {exc}", field="answers") from None
    object_names = []
    for a, b in zip(small, large, strict=True):
        shown = preview_name(name, with_small_id=a["metadata"]["name"], with_large_id=b["metadata"]["name"])
        object_names.append(f"{a['kind']} {shown or 'named after the request id (shortened, known on submission)'}")
    return Preview(decision=evaluation.decision, manifests=manifests, object_names=object_names)


@transaction.atomic
def request_submit(*, user, team: Team, name: str, raw_answers) -> GpuRequest:
    _require_request_rights(user=user, team=team)
    try:
        slug_validator(name)
    except Exception:
        raise InvalidInput(
            "Must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter "
            "or digit, at most 63 characters.",
            field="name",
        ) from None
    evaluation = request_evaluate(raw_answers=raw_answers)
    decision = evaluation.decision
    if decision["auto_approve"]:
        # Under the team's lock, so two submissions cannot both fit under the rule's per-team cap.
        _lock_team_quota(team.pk)
        decision = auto_approval_team_gate(team=team, decision=decision)
    # Later features' say (a budget's forecast); an automatic approval is decided under the team's lock taken above.
    decision = decision_gated(team=team, decision=decision, answers=evaluation.answers.values)
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
            rule_key=decision["rule"] or "",
            workload_class=evaluation.answers.values["workload_class"],
            strategy=decision["strategy"],
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
    if decision.get("review_reasons"):
        approval_reason = next(r["text"] for r in decision["reasons"] if r["field"] == "approval")
        events.event_note(request=gpu_request, reason=decision["review_reasons"][-1], comment=approval_reason)
    if decision["auto_approve"]:
        # --- an automatic approval passes the same quota and capacity checks ---
        check = approval_check(gpu_request=gpu_request)
        if check.refusal:
            events.event_note(request=gpu_request, reason=check.refusal_code,
                              comment=f"Not approved automatically: {check.refusal} The platform team decides.")
            return gpu_request
        request_transition(
            request_id=gpu_request.pk,
            to_status=RequestStatus.APPROVED,
            actor=None,
            comment=f"Approved automatically by rule {decision['rule']} (policy v{decision['policy_version']})."
            + check.note,
        )
        gpu_request.refresh_from_db()
    return gpu_request


@transaction.atomic
def request_transition(
    *, request_id: int, to_status: str, actor, comment: str = "", reason: str = "", expected_from: str | None = None
) -> GpuRequest:
    """The one place a request changes status: lock the row, check the edge, save, record the event, and
    schedule follow-up work after commit. `reason` is the machine-readable cause (e.g. GangStalled).
    `expected_from`: the status the caller saw; if the request has moved on since, nothing happens (Conflict), so
    of many people acting on what they saw, exactly one wins."""
    gpu_request = GpuRequest.objects.select_for_update(no_key=True).get(pk=request_id)
    from_status = gpu_request.status
    _check_expected(gpu_request, expected_from)
    _check_edge(gpu_request, to_status)
    gpu_request.status = to_status
    gpu_request.status_changed_at = timezone.now()
    fields = ["status", "status_changed_at", "updated_at"]
    if to_status == RequestStatus.APPROVED and lease_start(gpu_request, now=gpu_request.status_changed_at):
        fields.append("lease_expires_at")
    gpu_request.save(update_fields=fields)
    events.event_transition(
        request=gpu_request, actor=actor, from_status=from_status, to_status=to_status, comment=comment, reason=reason
    )
    _schedule_follow_up(gpu_request, from_status=from_status, to_status=to_status)
    return gpu_request


@dataclass(frozen=True)
class TransitionChange:
    request_id: int
    to_status: str
    comment: str = ""
    reason: str = ""


@transaction.atomic
def request_transition_many(*, changes: list[TransitionChange], actor=None) -> tuple[list[int], dict[int, str]]:
    """Many transitions in a handful of statements, checked exactly as `request_transition` checks one: the rows
    are locked (in id order, so concurrent batches cannot deadlock), each edge is checked, the allowed ones are
    saved with one UPDATE and one event insert, and their follow-up work is scheduled. A request whose edge is
    not allowed any more (cancelled meanwhile, say) is left alone. Returns (ids changed, {id: why not})."""
    wanted = {change.request_id: change for change in changes}
    locked = GpuRequest.objects.select_for_update(no_key=True).filter(pk__in=wanted).order_by("pk")
    allowed, refused = [], {}
    for gpu_request in locked:
        change = wanted[gpu_request.pk]
        try:
            _check_edge(gpu_request, change.to_status)
        except Conflict as exc:
            refused[gpu_request.pk] = exc.message
            continue
        allowed.append((gpu_request, gpu_request.status, change))
    if not allowed:
        return [], refused
    now = timezone.now()
    GpuRequest.objects.filter(pk__in=[r.pk for r, _, _ in allowed]).update(
        status=Case(*(When(pk=r.pk, then=Value(c.to_status)) for r, _, c in allowed)),
        status_changed_at=now,
        updated_at=now,
    )
    events.events_transition_many(
        rows=[(r, actor, from_status, c.to_status, c.comment, c.reason) for r, from_status, c in allowed]
    )
    for gpu_request, from_status, change in allowed:
        gpu_request.status, gpu_request.status_changed_at = change.to_status, now
        _schedule_follow_up(gpu_request, from_status=from_status, to_status=change.to_status)
    return [r.pk for r, _, _ in allowed], refused


def _check_expected(gpu_request: GpuRequest, expected_from: str | None) -> None:
    """Checked under the row lock: the request is still in the status the caller acted on."""
    if expected_from is not None and gpu_request.status != expected_from:
        raise Conflict(
            f"Request #{gpu_request.pk} is {gpu_request.status.replace('_', ' ')}, not "
            f"{expected_from.replace('_', ' ')}; someone acted on it first. Reload it and decide again."
        )


def _check_edge(gpu_request: GpuRequest, to_status: str) -> None:
    if to_status not in REQUEST_TRANSITIONS[gpu_request.status]:
        raise Conflict(
            f"Request #{gpu_request.pk} is {gpu_request.status.replace('_', ' ')}; it cannot become "
            f"{to_status.replace('_', ' ')}."
        )


def _schedule_follow_up(gpu_request: GpuRequest, *, from_status: str, to_status: str) -> None:
    """Work a status change causes, recorded in this transaction and dispatched only after commit, by the layers
    above that subscribed to the new status (intake.hooks: provisioning enqueues its apply and teardown jobs)."""
    hooks.announce_entering(gpu_request, from_status=from_status, to_status=to_status)


def _visible_for_update(*, user, request_id) -> GpuRequest:
    return request_get(user=user, request_id=request_id)


def request_approve(*, user, request_id, comment: str = "", expected_status: str | None = None) -> GpuRequest:
    gpu_request = _visible_for_update(user=user, request_id=request_id)
    if not is_platform(user):
        raise PermissionDenied("Only the platform team approves requests.")
    if gpu_request.requested_by_id == user.pk:
        raise PermissionDenied("Nobody approves their own request; ask another member of the platform team.")
    # The status is checked under the lock (_approve_checked), where a stale one answers 409, not 403.
    return _approve_checked(request_id=gpu_request.pk, actor=user, comment=comment or "Approved.",
                            expected_from=expected_status)


# --- quota and capacity at approval ---------------------------------------------------------


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
    from provisioning.choices import FitVerdict

    _lock_team_quota(gpu_request.team_id)
    answer = hooks.request_fit(gpu_request=gpu_request)
    quota = answer["quota"]
    if quota["exceeded"]:
        return ApprovalCheck(fit=answer, refusal=f"Over quota: {quota['message']}", refusal_code="OverQuota")
    if answer["verdict"] == FitVerdict.NEVER:
        return ApprovalCheck(fit=answer, refusal=f"It can never fit its pool: {answer['reason']}",
                             refusal_code="NeverFits")
    if answer["verdict"] == FitVerdict.FITS_AFTER:
        return ApprovalCheck(fit=answer, note=f" Capacity: does not fit now. {answer['reason']}")
    return ApprovalCheck(fit=answer)


@transaction.atomic
def _approve_checked(*, request_id: int, actor, comment: str, expected_from: str | None = None) -> GpuRequest:
    """Approve after the quota and fit checks, in one transaction holding the team's and the request's locks (in
    that order), so two concurrent approvals cannot both pass a quota that fits only one."""
    team_id = GpuRequest.objects.values_list("team_id", flat=True).get(pk=request_id)
    _lock_team_quota(team_id)
    gpu_request = GpuRequest.objects.select_for_update(no_key=True, of=("self",)).select_related("team").get(pk=request_id)
    _check_expected(gpu_request, expected_from)
    _check_edge(gpu_request, RequestStatus.APPROVED)
    check = approval_check(gpu_request=gpu_request)
    if check.refusal:
        raise Conflict(check.refusal)
    return request_transition(request_id=request_id, to_status=RequestStatus.APPROVED, actor=actor,
                              comment=comment + check.note)


def request_reject(*, user, request_id, comment: str, expected_status: str | None = None) -> GpuRequest:
    gpu_request = _visible_for_update(user=user, request_id=request_id)
    if not is_platform(user):
        raise PermissionDenied("Only the platform team rejects requests.")
    if not (comment or "").strip():
        raise InvalidInput("Say why the request is rejected; the engineer reads it.", field="comment")
    return request_transition(
        request_id=gpu_request.pk, to_status=RequestStatus.REJECTED, actor=user, comment=comment.strip(),
        expected_from=expected_status,
    )


def request_cancel(*, user, request_id, comment: str = "", expected_status: str | None = None) -> GpuRequest:
    gpu_request = _visible_for_update(user=user, request_id=request_id)
    if gpu_request.status in REQUEST_TERMINAL:
        raise Conflict(f"Request #{gpu_request.pk} is already {gpu_request.status}; there is nothing to cancel.")
    if not may_cancel(user=user, gpu_request=gpu_request):
        raise PermissionDenied("Only the request's team or the platform team can cancel it.")
    return request_transition(
        request_id=gpu_request.pk, to_status=RequestStatus.CANCELLED, actor=user, comment=comment or "Cancelled.",
        expected_from=expected_status,
    )


# --- policy -----------------------------------------------------------------------------------------------------


@transaction.atomic
def policy_version_draft_create(*, user, based_on: PolicyVersion | None = None, notes: str = "") -> PolicyVersion:
    """A new draft version holding a copy of the rules of `based_on` (the active version by default)."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team drafts routing policy.")
    if based_on is None:
        based_on = PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE).first()
    number = (PolicyVersion.objects.select_for_update(no_key=True).order_by("-number").values_list("number", flat=True).first() or 0) + 1
    draft = PolicyVersion.objects.create(number=number, based_on=based_on, created_by=user, notes=notes)
    if based_on is not None:
        Rule.objects.bulk_create(
            Rule(
                version=draft,
                key=r.key,
                kind=r.kind,
                position=r.position,
                match=r.match,
                outcome=r.outcome,
                rationale=r.rationale,
                owner=r.owner,
                signed_off_by=r.signed_off_by,
                signed_off_at=r.signed_off_at,
            )
            for r in based_on.rules.all()
        )
    return draft


def _rule_content(rule: Rule) -> tuple:
    return (rule.kind, rule.position, rule.match, rule.outcome, rule.rationale, rule.owner)


@transaction.atomic
def policy_version_sign_off(*, user, version_id: int, reviewed_digest: str, days: int = 30) -> PolicyVersion:
    """Sign off a draft after reviewing its effect: it becomes the active version, the previous one is retired.
    `reviewed_digest` is the digest of the diff the signer saw (`policy_version_diff`); if the rules or the
    version in force changed since, the sign-off is refused and the diff must be looked at again. Rules that
    are new or changed are signed off by this user now; unchanged rules keep the sign-off they had."""
    from .policy_review import policy_version_diff

    if not is_platform(user):
        raise PermissionDenied("Only the platform team signs off routing policy.")
    version = PolicyVersion.objects.select_for_update(no_key=True).get(pk=version_id)
    if version.status != PolicyStatus.DRAFT:
        raise Conflict(f"Policy v{version.number} is {version.status}; only a draft can be signed off.")
    diff = policy_version_diff(version=version, days=days)
    if reviewed_digest != diff.digest:
        raise InvalidInput(
            "The draft or the policy in force changed since this diff was reviewed; review the effect again.",
            field="digest",
        )
    rules = list(version.rules.all())
    if not any(r.kind == "route" for r in rules):
        raise InvalidInput("A policy needs at least one route rule.", field="rules")
    for rule in rules:
        errors = rule_validation_errors(kind=rule.kind, match=rule.match, outcome=rule.outcome)
        if errors:
            raise InvalidInput(f"Rule {rule.key}: {errors}", field="rules")
    previous = {}
    if version.based_on_id:
        previous = {r.key: r for r in version.based_on.rules.all()}
    now = timezone.now()
    signer = user.get_username()
    for rule in rules:
        before = previous.get(rule.key)
        if before is None or _rule_content(before) != _rule_content(rule) or not before.signed_off_at:
            rule.signed_off_by, rule.signed_off_at = signer, now
            rule.save(update_fields=["signed_off_by", "signed_off_at"])
    PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE).update(status=PolicyStatus.RETIRED)
    version.status = PolicyStatus.ACTIVE
    version.signed_off_by = user
    version.signed_off_by_name = signer
    version.signed_off_at = now
    version.activated_at = now
    version.review = {
        "digest": diff.digest, "days": diff.days, "baseline_version": diff.baseline_version,
        "evaluated": diff.evaluated, "changed_count": len(diff.changed), "by_workload_class": diff.by_workload_class,
        "changed_requests": [c["request"] for c in diff.changed], "reviewed_by": signer, "reviewed_at": now.isoformat(),
    }
    version.save()
    return version
