"""Reads for policy and requests. Team visibility always comes from portal.selectors."""
from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db.models import DecimalField, OuterRef, Prefetch, QuerySet, Subquery, Sum, prefetch_related_objects
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from portal.api.filters import filter_errors
from portal.errors import NotFound, PermissionDenied
from portal.models import Team
from portal.roles import is_platform
from portal.selectors import team_can_request_for, team_visible_ids

from . import hooks
from .choices import REQUEST_HOLDING, REQUEST_TERMINAL, PolicyStatus, RequestStatus
from .decisions import AWAITING_APPROVAL, PolicySpec, RuleSpec, summarise
from .events import recorded_events
from .filtersets import RequestFilterSet
from .models import GpuRequest, PolicyVersion, RequestEvent, Rule
from .questionnaire import QUESTIONS

# What a person may do to a request. One rule decides it for the request page's buttons, the admin's review page
# and the services (the API's actions): `request_action_refusal` says who may, `request_actions` who may now.
APPROVE, REJECT, CANCEL, EXTEND = "approve", "reject", "cancel", "extend"
ACTIONS = (APPROVE, REJECT, CANCEL, EXTEND)


def request_action_refusal(*, user, gpu_request: GpuRequest, action: str) -> str | None:
    """Why `user` may not take `action` on `gpu_request` whatever its status (the services answer it with 403), or
    None. The platform team approves and rejects, never its own request; the request's engineers and the platform
    team cancel (finance never); the engineer who asked extends the lease."""
    if action in (APPROVE, REJECT) and not is_platform(user):
        return f"Only the platform team {'approves' if action == APPROVE else 'rejects'} requests."
    if action == APPROVE and gpu_request.requested_by_id == user.pk:
        return "Nobody approves their own request; ask another member of the platform team."
    if action == CANCEL and not team_can_request_for(user=user, team=gpu_request.team):
        return "Only the request's team or the platform team can cancel it."
    if action == EXTEND and gpu_request.requested_by_id != user.pk:
        return "Only the engineer who requested it extends a lease."
    return None


def request_action_check(*, user, gpu_request: GpuRequest, action: str) -> None:
    """Raise PermissionDenied with the refusal when `user` may not take `action` on `gpu_request`."""
    refusal = request_action_refusal(user=user, gpu_request=gpu_request, action=action)
    if refusal:
        raise PermissionDenied(refusal)


def _status_allows(action: str, gpu_request: GpuRequest) -> bool:
    """Whether the request's status lets `action` be taken now (the services answer 409 when it does not)."""
    if action in (APPROVE, REJECT):
        return gpu_request.status == RequestStatus.PENDING_APPROVAL
    if action == EXTEND and gpu_request.lease_expires_at is None:
        return False
    return gpu_request.status not in REQUEST_TERMINAL


def request_actions(*, user, gpu_request: GpuRequest) -> frozenset[str]:
    """The actions `user` may take on `gpu_request` now."""
    return frozenset(action for action in ACTIONS if _status_allows(action, gpu_request)
                     and request_action_refusal(user=user, gpu_request=gpu_request, action=action) is None)


def policy_current() -> PolicyVersion:
    version = (
        PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE)
        .prefetch_related(Prefetch("rules", queryset=Rule.objects.order_by("kind", "position", "key")))
        .first()
    )
    if version is None:
        raise NotFound("No routing policy is active; the platform team must sign one off.")
    return version


def rule_spec(rule: Rule) -> RuleSpec:
    return RuleSpec(
        id=rule.id,
        key=rule.key,
        kind=rule.kind,
        match={k: tuple(v) for k, v in rule.match.items()},
        outcome=rule.outcome,
        rationale=rule.rationale,
        owner=rule.owner,
        position=rule.position,
    )


def policy_spec(version: PolicyVersion) -> PolicySpec:
    return PolicySpec(version=version.number, rules=tuple(rule_spec(r) for r in version.rules.all()))


def _request_prefetches(*, except_for=()) -> list[Prefetch]:
    """What a request is shown with: its events, then what the layers above registered (intake.hooks; provisioning:
    applied objects, provisioning jobs and gang stalls), in order; but the relations in `except_for`, whose
    querysets are not even built (building them costs, unused or not)."""
    shown = {"events": lambda: RequestEvent.objects.select_related("actor").order_by("at", "id"),
             **hooks.request_relations_shown()}
    return [Prefetch(relation, queryset=queryset()) for relation, queryset in shown.items()
            if relation not in except_for]


def request_list(*, user, filters: dict | None = None) -> QuerySet[GpuRequest]:
    """The requests this user may see, newest first, with what list pages show loaded up front."""
    queryset = GpuRequest.objects.select_related("team", "requested_by", "policy_version").prefetch_related(
        *_request_prefetches()
    )
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        queryset = queryset.filter(team_id__in=team_ids)
    if filters:
        filterset = RequestFilterSet(filters, queryset=queryset)
        if not filterset.is_valid():
            # An unknown status or class is the caller's mistake, not "no filter".
            raise ValidationError(filter_errors(filterset))
        queryset = filterset.qs
    return queryset.order_by("-created_at", "-id")


def _requests_visible(*, user) -> QuerySet[GpuRequest]:
    team_ids = team_visible_ids(user=user)
    requests = GpuRequest.objects.all()
    return requests if team_ids is None else requests.filter(team_id__in=team_ids)


def _decision_brief() -> dict:
    """Of the decision, what a list shows, read in SQL."""
    return {"gpu_model": KeyTextTransform("gpu_model", "decision"),
            "mig_profile": KeyTextTransform("mig_profile", "decision")}


def request_list_brief(*, user, with_decision: bool = False) -> QuerySet[GpuRequest]:
    """The requests this user may see, newest first, with only what a list shows: no answers, no events, and of
    the decision only its GPU model and MIG profile (read in SQL), unless `with_decision`. One query a page, and
    the ordering is served by the index on (created_at, id), so a page is read without sorting every row."""
    columns = ["id", "name", "status", "strategy", "created_at", "updated_at", "team__slug"]
    return (_requests_visible(user=user).select_related("team")
            .only(*columns, *(["decision"] if with_decision else [])).annotate(**_decision_brief())
            .order_by("-created_at", "-id"))


def request_list_rows(*, user, with_decision: bool = False) -> QuerySet:
    """`request_list_brief` as plain rows (dicts) for the API's list, without a model instance per request and per
    team (a third of a page's cost at 50 a page). The team's slug comes from a subquery, not a join: the page's
    count leaves an unused subquery out, where a join would be counted through for every visible row."""
    team_slug = Subquery(Team.objects.filter(pk=OuterRef("team_id")).values("slug")[:1])
    return _requests_visible(user=user).order_by("-created_at", "-id").values(
        "id", "name", "status", "strategy", "created_at", "updated_at", *(["decision"] if with_decision else []),
        **_decision_brief(), team_slug=team_slug,
    )


def request_loaded(*, gpu_request: GpuRequest) -> GpuRequest:
    """A request the caller has just submitted (so visible to them), with what `request_get` loads, without reading
    its row again. Nothing has applied or reconciled it yet (the apply task and status reconciliation run after the
    submission commits), so its objects and stalls are known to be empty; while it waits for approval it has no
    provisioning jobs either (approval enqueues the first), and its events are those the submission recorded on
    this instance (intake.events.recorded_events). Known rows are set without a query, not even a compiled one: a
    submission waiting for approval is answered without reading anything; an approved one reads its events and
    jobs."""
    known: dict[str, list] = {"applied_objects": [], "gang_stalls": []}
    if gpu_request.status == RequestStatus.PENDING_APPROVAL:
        known |= {"provisioning_jobs": [], "events": recorded_events(gpu_request)}
    for relation, rows in known.items():
        _relation_known(gpu_request, relation, rows)
    missing = _request_prefetches(except_for=known)
    if missing:
        prefetch_related_objects([gpu_request], *missing)
    return gpu_request


def _relation_known(instance, relation: str, rows: list) -> None:
    """Cache `rows` as the instance's `relation`, as prefetch_related caches what it read (Django's
    prefetch_one_level: the related manager's queryset with its results filled in), so `.all()` asks nothing.
    An empty queryset (`.none()`) would still be compiled, a few milliseconds each."""
    queryset = getattr(instance, relation).get_queryset()
    queryset._result_cache, queryset._prefetch_done = list(rows), True
    instance.__dict__.setdefault("_prefetched_objects_cache", {})[relation] = queryset


def request_get(*, user, request_id) -> GpuRequest:
    """A request the user may see; NotFound otherwise (another team's request is not revealed to exist)."""
    try:
        return request_list(user=user).get(pk=request_id)
    except (GpuRequest.DoesNotExist, ValueError, TypeError):
        raise NotFound("No such request.") from None


def request_get_brief(*, user, request_id) -> GpuRequest:
    """As request_get, with only the list's columns (one query): for reads that need the request, not its story."""
    try:
        return request_list_brief(user=user).get(pk=request_id)
    except (GpuRequest.DoesNotExist, ValueError, TypeError):
        raise NotFound("No such request.") from None


def request_summary(gpu_request: GpuRequest) -> str:
    """The decision summary as true now: who approved (or rejected) it and when, not how approval would go.

    The stored summary was written at submission; the request's page shows this one above the reasons table,
    where the defaulted choices are marked.
    """
    events = [e for e in gpu_request.events.all() if e.kind == "transition"]
    approved = next((e for e in reversed(events) if e.to_status == RequestStatus.APPROVED), None)
    rejected = next((e for e in reversed(events) if e.to_status == RequestStatus.REJECTED), None)
    if approved is not None:
        approval = (f"approved by {approved.actor.username} on {approved.at:%Y-%m-%d}" if approved.actor
                    else f"approved automatically on {approved.at:%Y-%m-%d}")
    elif rejected is not None:
        approval = (f"rejected by {rejected.actor.username} on {rejected.at:%Y-%m-%d}" if rejected.actor
                    else f"rejected on {rejected.at:%Y-%m-%d}")
    elif gpu_request.status == RequestStatus.CANCELLED:
        approval = "cancelled before anyone approved it"
    else:
        # Still pending, also when a rule meant to approve it but the quota or capacity check held it back.
        approval = AWAITING_APPROVAL
    return summarise(gpu_request.decision, approval=approval, marked_below=True)


def request_answer_rows(gpu_request: GpuRequest) -> list[dict]:
    """The answers in questionnaire order, labelled, with the defaulted ones marked (for pages)."""
    defaulted = set(gpu_request.defaulted_answers)
    return [
        {"key": q.key, "label": q.label, "value": gpu_request.answers.get(q.key), "defaulted": q.key in defaulted}
        for q in QUESTIONS
    ]


def policy_version_list(*, user) -> QuerySet[PolicyVersion]:
    """Signed-off versions for everyone; drafts only for the platform team, who edit them."""
    queryset = PolicyVersion.objects.prefetch_related(
        Prefetch("rules", queryset=Rule.objects.order_by("kind", "position", "key"))
    ).select_related("based_on").order_by("-number")
    if not is_platform(user):
        queryset = queryset.exclude(status=PolicyStatus.DRAFT)
    return queryset


def request_catalog_list(*, user, filters=None) -> QuerySet[GpuRequest]:
    """Requests exported to the Backstage catalog: the ones the user may see, live ones only (terminal requests
    leave the catalog) unless `status` is given explicitly."""
    queryset = request_list(user=user, filters=filters)
    if not (filters and filters.get("status")):
        queryset = queryset.exclude(status__in=sorted(REQUEST_TERMINAL))
    return queryset.prefetch_related(None)


def team_held_under_rule(*, team, rule_key: str) -> Decimal:
    """GPU equivalents the team holds at once (approved to stalled) through requests decided by this rule."""
    total = GpuRequest.objects.filter(team=team, rule_key=rule_key, status__in=REQUEST_HOLDING).aggregate(
        total=Sum(Cast(KeyTextTransform("gpu_equivalents", "decision"), DecimalField(max_digits=14, decimal_places=6)))
    )["total"]
    return Decimal(total or 0)


def approval_queue(*, user) -> QuerySet[GpuRequest]:
    """The requests waiting for the platform team's approval, oldest first (a queue), with what the queue page
    shows loaded in the same query. The platform team's page: PermissionDenied for anyone else."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team works the approval queue.")
    return (GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).select_related("team", "requested_by")
            .order_by("created_at", "pk"))

