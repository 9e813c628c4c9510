"""The platform team's routing policy: versions, their rules, drafts, review and sign-off. Every action calls the
same services as the API. (The approval queue and the request admin are the workflows', workflows.admin.)"""
from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from portal.admin_mixins import PlatformAdminMixin
from portal.errors import DomainError

from . import services
from .choices import PolicyStatus
from .models import PolicyVersion, Rule
from .policy_review import policy_version_review


class RuleInline(PlatformAdminMixin, admin.StackedInline):
    model = Rule
    extra = 0
    finance_can_view = True
    fields = [("key", "kind", "position", "owner"), ("match", "outcome"), "rationale", ("signed_off_by", "signed_off_at")]
    readonly_fields = ["signed_off_by", "signed_off_at"]

    def _editable(self, obj):
        return obj is None or obj.is_editable

    def has_add_permission(self, request, obj=None):
        return super().has_add_permission(request) and self._editable(obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request) and self._editable(obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request) and self._editable(obj)


@admin.register(PolicyVersion)
class PolicyVersionAdmin(PlatformAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["number", "status", "notes", "signed_off_by_name", "signed_off_at", "created_at"]
    list_filter = ["status"]
    fields = ["number", "status", "notes", "based_on", "created_by", "signed_off_by_name", "signed_off_at"]
    readonly_fields = ["number", "status", "based_on", "created_by", "signed_off_by_name", "signed_off_at"]
    inlines = [RuleInline]
    actions = ["new_draft", "sign_off"]

    def has_add_permission(self, request, *args):
        return False  # versions are created with the "new draft" action, so each has a parent

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request) and obj is not None and obj.status == PolicyStatus.DRAFT

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and not obj.is_editable:
            return [*self.readonly_fields, "notes"]
        return self.readonly_fields

    @admin.action(description="Create a new draft from the selected version", permissions=["change"])
    def new_draft(self, request, queryset):
        if queryset.count() != 1:
            messages.error(request, "Select exactly one version to start a draft from.")
            return None
        try:
            draft = services.policy_version_draft_create(user=request.user, based_on=queryset.get())
        except DomainError as exc:
            messages.error(request, exc.message)
            return None
        messages.success(request, f"Draft v{draft.number} created; edit its rules, then sign it off.")
        return HttpResponseRedirect(reverse("admin:intake_policyversion_change", args=[draft.pk]))

    @admin.action(description="Review the effect of the selected draft, then sign it off", permissions=["change"])
    def sign_off(self, request, queryset):
        if queryset.count() != 1 or queryset.get().status != PolicyStatus.DRAFT:
            messages.error(request, "Select exactly one draft to review.")
            return None
        return HttpResponseRedirect(reverse("admin:intake_policyversion_review", args=[queryset.get().pk]))

    def get_urls(self):
        return [
            path("<int:pk>/review/", self.admin_site.admin_view(self.review_view), name="intake_policyversion_review"),
            *super().get_urls(),
        ]

    def review_view(self, request, pk):
        """The diff a draft would make to recent requests, and the sign-off form bound to that diff."""
        version = self.object_or_404(request, pk)
        try:
            days = max(1, min(int(request.POST.get("days") or request.GET.get("days") or 30), 365))
        except ValueError:
            days = 30
        if request.method == "POST" and self.has_change_permission(request):
            try:
                services.policy_version_sign_off(user=request.user, version_id=version.pk,
                                                 reviewed_digest=request.POST.get("digest", ""), days=days)
            except DomainError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, f"Policy v{version.number} signed off and in force.")
                return HttpResponseRedirect(reverse("admin:intake_policyversion_change", args=[version.pk]))
        try:
            diff = policy_version_review(user=request.user, version=version, days=days)
        except DomainError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:intake_policyversion_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Review policy v{version.number} against v{diff.baseline_version}",
            "version": version,
            "diff": diff,
            "can_sign_off": version.status == PolicyStatus.DRAFT and self.has_change_permission(request),
        }
        return TemplateResponse(request, "admin/intake/policy_review.html", context)
