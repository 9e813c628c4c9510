"""The platform team's side of requests: the approval queue with its review page and the request list. Every action
calls the same workflows as the API (workflows.services); the routing policy's admin is intake's (intake.admin)."""
from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from intake.decisions import STRATEGY_WORDS
from intake.models import GpuRequest, PendingApproval, RequestEvent
from intake.selectors import APPROVE, REJECT, request_actions, request_answer_rows, request_summary
from portal.admin_mixins import PlatformAdminMixin
from portal.errors import DomainError
from portal.text import plural
from provisioning.selectors import request_fit

from . import services
from .selectors import review_sections


class RequestEventInline(PlatformAdminMixin, admin.TabularInline):
    model = RequestEvent
    extra = 0
    finance_can_view = True
    fields = ["at", "kind", "actor", "from_status", "to_status", "comment", "reason"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class StrategyFilter(admin.SimpleListFilter):
    """The sharing strategy in words ("whole GPU"), not its identifier."""

    title, parameter_name = "sharing strategy", "strategy"

    def lookups(self, request, model_admin):
        return list(STRATEGY_WORDS.items())

    def queryset(self, request, queryset):
        return queryset.filter(strategy=self.value()) if self.value() else queryset


@admin.register(GpuRequest)
class GpuRequestAdmin(PlatformAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["id", "name", "team", "status", "workload_class", "strategy_words", "requested_by", "created_at",
                    "policy_rule"]
    list_filter = ["status", "workload_class", StrategyFilter, "team"]
    search_fields = ["name", "team__slug", "requested_by__username"]
    list_select_related = ["team", "requested_by", "policy_version"]
    ordering = ["-created_at"]
    inlines = [RequestEventInline]

    @admin.display(description="sharing strategy", ordering="strategy")
    def strategy_words(self, obj):
        return STRATEGY_WORDS.get(obj.strategy, obj.strategy)

    @admin.display(description="decided by")
    def policy_rule(self, obj):
        return f"v{obj.policy_version.number}: {obj.rule_key or 'platform default'}"

    def has_add_permission(self, request, *args):
        return False  # requests come from engineers, through the services

    def has_delete_permission(self, request, obj=None):
        return False  # the audit trail is never deleted

    def get_urls(self):
        name = self.model._meta.model_name
        return [
            path("<int:pk>/approve/", self.admin_site.admin_view(self.approve_view), name=f"intake_{name}_approve"),
            path("<int:pk>/reject/", self.admin_site.admin_view(self.reject_view), name=f"intake_{name}_reject"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The review page: decision, reasons (defaults marked), answers, history, and the approve/reject forms."""
        if not self.has_view_permission(request):
            return super().change_view(request, object_id, form_url, extra_context)
        gpu_request = self.object_or_404(request, object_id,
                                         GpuRequest.objects.select_related("team", "requested_by"))
        events = gpu_request.events.select_related("actor").order_by("at", "id")
        actions = request_actions(user=request.user, gpu_request=gpu_request)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Review request #{gpu_request.pk}: {gpu_request.team.slug}/{gpu_request.name}",
            "gpu_request": gpu_request,
            "decision": gpu_request.decision,
            "summary": request_summary(gpu_request),
            "answer_rows": request_answer_rows(gpu_request),
            "events": events,
            # Who may decide, by the rule the request page and the services ask (nobody approves their own request).
            "can_decide": REJECT in actions,
            "can_approve": APPROVE in actions,
            "approve_url": reverse(f"admin:intake_{self.model._meta.model_name}_approve", args=[gpu_request.pk]),
            "reject_url": reverse(f"admin:intake_{self.model._meta.model_name}_reject", args=[gpu_request.pk]),
            "extra_sections": self.review_sections(request, gpu_request),
        }
        return TemplateResponse(request, "admin/intake/review.html", context)

    def review_sections(self, request, gpu_request) -> list:
        """Further read-only sections of the review page (fit, manifests...); extended by later features."""
        sections = []
        # --- the gang-fit check, projected GPU-hours and the team's quota ---
        fit = request_fit(gpu_request=gpu_request)
        sections.append({"title": "Capacity: does it fit?",
                         "html": render_to_string("admin/provisioning/_fit.html", {"fit": fit})})
        sections.extend(review_sections(gpu_request=gpu_request))  # the Kueue admission, the team's budget
        return sections

    def _decide(self, request, pk, service, verb):
        if request.method != "POST":
            return HttpResponseRedirect(reverse(f"admin:intake_{self.model._meta.model_name}_change", args=[pk]))
        try:
            service(user=request.user, request_id=pk, comment=request.POST.get("comment", ""))
        except DomainError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse(f"admin:intake_{self.model._meta.model_name}_change", args=[pk]))
        messages.success(request, f"Request #{pk} {verb}.")
        return HttpResponseRedirect(reverse("admin:intake_pendingapproval_changelist"))

    def approve_view(self, request, pk):
        return self._decide(request, pk, services.request_approve, "approved")

    def reject_view(self, request, pk):
        return self._decide(request, pk, services.request_reject, "rejected")


@admin.register(PendingApproval)
class PendingApprovalAdmin(GpuRequestAdmin):
    # The Review button right after the name, and what they would get in a line (the summary is on the review page).
    list_display = ["id", "name", "review", "team", "what", "requested_by", "created_at"]
    list_filter = ["workload_class", StrategyFilter, "team"]
    ordering = ["created_at"]  # oldest first: a queue
    actions = ["approve_selected"]

    @admin.display(description="what they would get")
    def what(self, obj):
        decision = obj.decision
        each = plural(decision.gpus_per_replica, STRATEGY_WORDS.get(decision.strategy, decision.strategy))
        profile = f" {decision.mig_profile}" if decision.mig_profile else ""
        return (f"{plural(decision.replicas, 'replica')} x {each} of {decision.gpu_model}{profile}"
                f" on {decision.cluster}/{decision.node_pool}")

    @admin.display(description="")
    def review(self, obj):
        return format_html('<a class="button" href="{}">Review</a>',
                           reverse("admin:intake_pendingapproval_change", args=[obj.pk]))

    @admin.action(description="Approve the selected requests", permissions=["change"])
    def approve_selected(self, request, queryset):
        approved = 0
        for gpu_request in queryset:
            try:
                services.request_approve(user=request.user, request_id=gpu_request.pk, comment="Approved from the queue.")
                approved += 1
            except DomainError as exc:
                messages.error(request, f"#{gpu_request.pk} {gpu_request.name}: {exc.message}")
        if approved:
            messages.success(request, f"{plural(approved, 'request')} approved.")
