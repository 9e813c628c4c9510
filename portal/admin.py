from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db import models
from django.template.response import TemplateResponse
from django.utils import timezone

from . import selectors, services
from .admin_empty import EmptyExplainedMixin
from .admin_mixins import BackgroundJobAdminMixin, PlatformAdminMixin, ReadOnlyAdminMixin
from .errors import DomainError
from .models import ApiToken, Membership, Notice, SignOnIdentity, Team
from .services import team_webhook_set

admin.site.site_header = "GPU Golden Path: platform admin"
admin.site.site_title = "GPU Golden Path admin"
admin.site.index_title = "Platform operations"
# No navigation sidebar on every page: at 1,280 px it took 280 px from the lists, whose last columns (their
# actions) then scrolled out of sight. The index and the breadcrumbs still lead everywhere.
admin.site.enable_nav_sidebar = False


class MembershipInline(PlatformAdminMixin, admin.TabularInline):
    model = Membership
    extra = 0
    finance_can_view = True


@admin.register(Team)
class TeamAdmin(PlatformAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["slug", "name", "cost_center", "notification_email"]
    search_fields = ["slug", "name", "cost_center"]
    inlines = [MembershipInline]
    # The signing secret is shown to the team and the platform team through the API only (finance reads teams here).
    exclude = ["webhook_secret"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if obj.webhook_url and not obj.webhook_secret:
            team_webhook_set(user=request.user, team=obj, url=obj.webhook_url)  # gives it a signing secret


class ApiTokenAddForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name", "expires_at"]

    def clean(self):
        # The rules of services.token_issue, said on the form's fields before it is called.
        data = super().clean()
        if data.get("expires_at") and data["expires_at"] <= timezone.now():
            self.add_error("expires_at", "The expiry must be in the future (or empty for a token that does not expire).")
        if data.get("user") and data.get("name") and ApiToken.objects.filter(
                user=data["user"], name=data["name"].strip(), revoked_at__isnull=True).exists():
            self.add_error("name", "This user already has an active token of that name: revoke it or pick another.")
        elif data.get("user") and selectors.token_live_count(user=data["user"]) >= settings.PORTAL_MAX_TOKENS_PER_USER:
            self.add_error("user", f"This user already holds {settings.PORTAL_MAX_TOKENS_PER_USER} working tokens, "
                                   "the most one person may: revoke one first.")
        return data


@admin.register(ApiToken)
class ApiTokenAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """Everyone's API tokens: issue one for a user (its secret is shown once), revoke. Nothing else changes."""

    list_display = ["prefix", "name", "user", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), ("expires_at", admin.EmptyFieldListFilter)]
    search_fields = ["user__username", "name", "prefix"]
    list_select_related = ["user"]
    readonly_fields = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]
    form = ApiTokenAddForm

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ApiTokenAddForm.Meta.fields

    def has_change_permission(self, request, obj=None):
        return False  # a token is issued or revoked, never edited

    def has_delete_permission(self, request, obj=None):
        return False  # revoked tokens stay, for the record

    def save_model(self, request, obj, form, change):
        issued, clear = services.token_issue(user=form.cleaned_data["user"], name=form.cleaned_data["name"],
                                             expires_at=form.cleaned_data["expires_at"])
        obj.pk, obj.prefix, obj._clear_token = issued.pk, issued.prefix, clear

    def response_add(self, request, obj, post_url_continue=None):
        # The secret goes into this page only: never into a message (a cookie) or a redirect.
        context = {**self.admin_site.each_context(request), "title": "API token issued", "token": obj,
                   "clear": obj._clear_token, "opts": self.model._meta}
        return TemplateResponse(request, "admin/portal/apitoken/issued.html", context)

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        try:
            count = services.tokens_revoke_selected(actor=request.user, token_ids=list(queryset.values_list("pk", flat=True)))
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        self.message_user(request, f"{count} token{'' if count == 1 else 's'} revoked.")


@admin.register(Notice)
class NoticeAdmin(EmptyExplainedMixin, BackgroundJobAdminMixin, admin.ModelAdmin):
    """Every notice (budget thresholds, leases, idle GPUs, preemptions, stalled gangs) with its delivery status, so a
    failed one is seen without logs."""

    empty_why = ("Notices are queued by beat: a budget threshold crossed (chargeback.budget_thresholds_notify), a "
                 "lease about to end (workflows.lease_sweep), a stalled gang (status reconciliation)..., for teams with "
                 "a notification e-mail or a webhook.")
    list_display = ["key", "team", "channel", "sent_at"]
    list_filter = ["channel"]
    search_fields = ["key", "team__slug", "target"]
    list_select_related = ["team"]


@admin.register(SignOnIdentity)
class SignOnIdentityAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Which identity of the provider signs on as which account, for the platform team to read. Rows are made by
    sign-ons and by `manage.py link_sign_on` (which also moves a link to another account)."""

    empty_why = "Identities are linked when someone signs on with single sign-on (OIDC) or by manage.py link_sign_on."
    list_display = ["user", "subject", "issuer", "linked_by", "linked_at"]
    list_filter = ["linked_by", "issuer"]
    search_fields = ["user__username", "subject", "issuer"]
    list_select_related = ["user"]
    readonly_fields = list_display
