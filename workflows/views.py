"""Server-rendered pages for engineers: the questionnaire with a live preview, their requests, a request."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from portal.errors import DomainError, NotFound, PermissionDenied
from portal.roles import primary_role
from portal.selectors import team_list_requestable, team_list_visible

from intake import lease_rules, selectors
from intake.choices import REQUEST_TERMINAL, RequestStatus
from intake.decisions import summarise
from intake.forms import CancelForm, LeaseExtendForm, RequestForm
from intake.questionnaire import QUESTIONS

from . import leases, services
from .selectors import preview_sections, request_rightsizing, request_running_facts, request_wait


@login_required
def home(request):
    """Where each persona starts: finance on the chargeback page, everyone else on their requests."""
    if primary_role(request.user) == "finance":
        return redirect("chargeback:report")
    return redirect("web:request-list")


@login_required
def approval_queue(request):
    """The platform team's approval queue: oldest first, what each would get and where, and its Review button (the
    review page, with the decision, fit, quota and budget, stays in the admin)."""
    try:
        queue = selectors.approval_queue(user=request.user)
    except PermissionDenied as exc:
        raise DjangoPermissionDenied(exc.message) from exc
    page = Paginator(queue, 50).get_page(request.GET.get("page"))
    return render(request, "intake/approval_queue.html", {"page": page, "now": timezone.now()})


@login_required
def request_list(request):
    filters = {key: request.GET.getlist(key) if key == "status" else request.GET.get(key)
               for key in ("status", "team", "workload_class") if request.GET.get(key)}
    context = {"statuses": RequestStatus.choices, "filters": filters, "teams": team_list_visible(user=request.user)}
    try:
        requests = selectors.request_list(user=request.user, filters=filters)
    except ValidationError as exc:
        # A filter the page never offers (typed into the URL): say which, rather than guess.
        return render(request, "intake/request_list.html", {**context, "filter_errors": exc.message_dict},
                      status=400)
    context["page"] = Paginator(requests, 25).get_page(request.GET.get("page"))
    return render(request, "intake/request_list.html", context)


def _prefill(request, teams) -> dict:
    """`?from=<id>` (the right-sizing re-request): that request's answers, team and name, then any answer given in
    the query (e.g. gpu_memory_gb) over them. A request the user may not see pre-fills nothing."""
    if request.method != "GET" or not request.GET.get("from"):
        return {}
    try:
        source = selectors.request_get(user=request.user, request_id=request.GET["from"])
    except NotFound:
        return {}
    keys = {q.key for q in QUESTIONS}
    initial = {k: ("\n".join(v) if isinstance(v, list) else v) for k, v in (source.answers or {}).items() if k in keys}
    initial |= {k: v for k, v in request.GET.items() if k in keys}
    if teams.filter(pk=source.team_id).exists():
        initial["team"] = source.team_id
    initial["name"] = f"{source.name}-resized"[:63]
    return initial


@login_required
def request_new(request):
    teams = team_list_requestable(user=request.user)
    if not teams.exists():
        messages.error(request, "You are not an engineer in any team, so you cannot request GPUs.")
        return redirect("web:request-list")
    form = RequestForm(request.POST or None, teams=teams, initial=_prefill(request, teams))
    if request.method == "POST" and form.is_valid():
        try:
            gpu_request = services.request_submit(
                user=request.user, team=form.cleaned_data["team"], name=form.cleaned_data["name"],
                raw_answers=form.raw_answers(),
            )
        except DomainError as exc:
            _attach_error(form, exc)
        else:
            messages.success(request, f"Request {gpu_request.name} submitted: {gpu_request.get_status_display()}.")
            return redirect("web:request-detail", pk=gpu_request.pk)
    return render(request, "intake/request_form.html", {"form": form})


def _attach_error(form, exc: DomainError) -> None:
    errors = exc.as_field_errors() if exc.field else {None: [exc.message]}
    for key, value in errors.items():
        if isinstance(value, dict):  # nested under "answers"
            for field, msgs in value.items():
                form.add_error(field if field in form.fields else None, " ".join(msgs))
        else:
            form.add_error(key if key in form.fields else None, " ".join(value))


@login_required
@require_POST
def request_preview(request):
    """htmx fragment: the decision for the answers so far, or why there is none yet."""
    form = RequestForm(request.POST, teams=team_list_requestable(user=request.user), require_name=False)
    context = {}
    if form.is_valid():
        try:
            preview = services.request_preview(
                user=request.user, team=form.cleaned_data["team"], raw_answers=form.raw_answers(),
                name=form.cleaned_data.get("name") or "preview",
            )
            context["decision"] = preview.decision
            context["summary"] = summarise(preview.decision, marked_below=True)
            context["manifest_kinds"] = preview.object_names
            context["sections"] = preview_sections(team=form.cleaned_data["team"], decision=preview.decision,
                                                   answers=preview.answers)
        except DomainError as exc:
            errors = exc.as_field_errors() if exc.field else {"request": [exc.message]}
            context["errors"] = errors.get("answers", errors)
    else:
        # An answer not given yet is still to come, not an error: the preview lists it and says nothing in red.
        given = form.raw_answers()
        questions = {q.key for q in QUESTIONS}
        context["missing"] = [key for key in form.errors if key in questions and key not in given]
        errors = {key: list(value) for key, value in form.errors.items() if key not in context["missing"]}
        if errors:
            context["errors"] = errors
    return render(request, "intake/_preview.html", context)


def _request_page(request, gpu_request) -> dict:
    """What the request page and its live part show."""
    return {
        "gpu_request": gpu_request,
        "decision": gpu_request.decision,
        "actions": selectors.request_actions(user=request.user, gpu_request=gpu_request),
        "wait": request_wait(gpu_request=gpu_request),
        "running": request_running_facts(gpu_request),
        "finished": gpu_request.status in REQUEST_TERMINAL,
    }


@login_required
def request_detail(request, pk):
    try:
        gpu_request = selectors.request_get(user=request.user, request_id=pk)
    except NotFound:
        return render(request, "404.html", status=404)
    return render(request, "intake/request_detail.html", {
        **_request_page(request, gpu_request),
        "summary": selectors.request_summary(gpu_request),
        "answer_rows": selectors.request_answer_rows(gpu_request),
        "lease_left": lease_rules.lease_time_left(gpu_request),
        "rightsizing": request_rightsizing(gpu_request),
    })


@login_required
def request_live(request, pk):
    """htmx fragment: the request page's changing parts (status, running facts, waits, stalls, provisioning,
    history), fetched every few seconds until the request ends; its actions too once the status moved on."""
    try:
        gpu_request = selectors.request_get(user=request.user, request_id=pk)
    except NotFound:
        return render(request, "404.html", status=404)
    context = _request_page(request, gpu_request)
    context["status_changed"] = request.GET.get("shown") != gpu_request.status
    return render(request, "intake/request_live.html", context)


@login_required
@require_POST
def request_lease_extend(request, pk):
    try:
        selectors.request_get(user=request.user, request_id=pk)
    except NotFound:
        return render(request, "404.html", status=404)
    form = LeaseExtendForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors.get("hours", [])))
        return redirect("web:request-detail", pk=pk)
    try:
        leases.lease_extend(user=request.user, request_id=pk, hours=form.cleaned_data["hours"])
        messages.success(request, "Lease extended.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("web:request-detail", pk=pk)


@login_required
@require_POST
def request_cancel(request, pk):
    try:
        selectors.request_get(user=request.user, request_id=pk)  # another team's request is a 404, confirmed or not
    except NotFound:
        return render(request, "404.html", status=404)
    form = CancelForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors.get("confirm", form.errors.get("comment", []))))
        return redirect("web:request-detail", pk=pk)
    try:
        services.request_cancel(user=request.user, request_id=pk, comment=form.cleaned_data["comment"])
        messages.success(request, "Request cancelled.")
    except NotFound:
        return render(request, "404.html", status=404)
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("web:request-detail", pk=pk)
