"""Chargeback in the admin: rate cards (platform and finance edit them, through the services), the metered
intervals, adjustments and collection passes (read-only), and closing a month."""
from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from portal.admin_mixins import PlatformAdminMixin, ReadOnlyAdminMixin
from portal.errors import DomainError
from portal.models import Notice
from portal.roles import is_finance, is_platform

from . import budget_services, services
from .budget_services import BUDGET_FIELDS, budget_check
from .budgets import budget_forecast
from .choices import Flag
from .models import Adjustment, Budget, ClosedPeriod, RateCard, UsageCollection, UsageInterval
from .periods import month_start


class RateCardForm(forms.ModelForm):
    class Meta:
        model = RateCard
        fields = ["gpu_model", "strategy", "price_per_equivalent_hour", "currency", "valid_from", "note"]

    def clean(self):
        data = super().clean()
        if {"gpu_model", "strategy", "valid_from"} <= data.keys():
            try:
                services.rate_card_check(gpu_model=data["gpu_model"], strategy=data["strategy"],
                                         valid_from=data["valid_from"],
                                         existing=self.instance if self.instance.pk else None)
            except DomainError as exc:
                raise ValidationError({exc.field: exc.message} if exc.field in self.fields else exc.message) from None
        return data


@admin.register(RateCard)
class RateCardAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """Effective-dated prices: a change is a new card from a date; cards of closed months are frozen."""

    finance_can_edit = True
    form = RateCardForm
    list_display = ["gpu_model", "strategy", "price_per_equivalent_hour", "currency", "valid_from", "note", "created_by"]
    list_filter = ["strategy", "gpu_model", "currency"]
    ordering = ["gpu_model", "strategy", "-valid_from"]

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in form.Meta.fields}
        if change:
            services.rate_card_update(user=request.user, rate_card=obj, **fields)
        else:
            obj.pk = services.rate_card_create(user=request.user, **fields).pk

    def delete_model(self, request, obj):
        services.rate_card_delete(user=request.user, rate_card=obj)

    def delete_queryset(self, request, queryset):
        for card in queryset:
            services.rate_card_delete(user=request.user, rate_card=card)


class FlagFilter(admin.SimpleListFilter):
    """Intervals with one flag, e.g. `found_in_cluster`: pods nothing the portal applied owns (docs/chargeback.md)."""

    title = "flag"
    parameter_name = "flag"

    def lookups(self, request, model_admin):
        return Flag.choices

    def queryset(self, request, queryset):
        return queryset.filter(flags__contains=[self.value()]) if self.value() in Flag.values else queryset


@admin.register(UsageInterval)
class UsageIntervalAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["pod_name", "team", "cluster", "strategy", "gpu_model", "mig_profile", "devices",
                    "gpu_equivalents", "started_at", "ended_at", "end_source", "category", "flags", "is_demo"]
    list_filter = [FlagFilter, "category", "strategy", "cluster", "gpu_model", "end_source", "is_demo", "team"]
    search_fields = ["pod_uid", "pod_name", "namespace", "request__name"]
    list_select_related = ["team"]
    date_hierarchy = "started_at"


@admin.register(Adjustment)
class AdjustmentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["booked_at", "closed_month", "sign", "category", "team", "strategy", "gpu_model", "started_at",
                    "ended_at", "reason"]
    list_filter = ["closed_month", "category", "strategy"]
    list_select_related = ["team"]


@admin.register(UsageCollection)
class UsageCollectionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["listed_at", "cluster", "status", "source", "pods_seen", "intervals_inserted",
                    "intervals_updated", "intervals_vanished", "adjustments", "flagged", "found_in_cluster",
                    "pods_unreadable"]
    list_filter = ["status", "cluster", "source"]


class CloseMonthForm(forms.Form):
    month = forms.DateField(input_formats=["%Y-%m", "%Y-%m-%d"], help_text="YYYY-MM")


@admin.register(ClosedPeriod)
class ClosedPeriodAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Closed months. "Close a month" calls the same service as the API; nothing here edits a closed month."""

    finance_can_view = True
    list_display = ["month", "closed_by", "closed_at", "totals"]
    change_list_template = "admin/chargeback/closedperiod/change_list.html"

    def get_urls(self):
        return [path("close/", self.admin_site.admin_view(self.close_view), name="chargeback_closedperiod_close"),
                *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_close": is_finance(request.user) or is_platform(request.user),
                         "closable": services.period_closable()}
        return super().changelist_view(request, extra_context)

    def close_view(self, request):
        changelist = reverse("admin:chargeback_closedperiod_changelist")
        if not (is_finance(request.user) or is_platform(request.user)):
            messages.error(request, "Only finance and the platform team close months.")
            return HttpResponseRedirect(changelist)
        closable = services.period_closable()
        form = CloseMonthForm(request.POST or None, initial={"month": closable and f"{closable:%Y-%m}"})
        if request.method == "POST" and form.is_valid():
            try:
                period = services.period_close(month=month_start(form.cleaned_data["month"]), user=request.user)
            except DomainError as exc:
                form.add_error("month" if exc.field == "month" else None, exc.message)
            else:
                messages.success(request, f"{period.month:%Y-%m} is closed; late data now goes to the next month.")
                return HttpResponseRedirect(changelist)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
                   "title": "Close a month", "closable": closable}
        return TemplateResponse(request, "admin/chargeback/closedperiod/close.html", context)


class BudgetForm(forms.ModelForm):
    class Meta:
        model = Budget
        fields = list(BUDGET_FIELDS)

    def clean(self):
        data = super().clean()
        try:
            budget_check(gpu_hours=data.get("gpu_hours"), amount=data.get("amount"),
                         thresholds=list(data.get("thresholds") or []))
        except DomainError as exc:
            raise ValidationError({exc.field: exc.message} if exc.field in self.fields else exc.message) from None
        return data


@admin.register(Budget)
class BudgetAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """Budgets per team (or cost centre) and month: the platform team sets them, finance reads them; the list
    shows this month's forecast against each."""

    finance_can_view = True
    form = BudgetForm
    list_display = ["team", "cost_center", "month", "gpu_hours", "amount", "currency", "mode", "thresholds_shown",
                    "forecast"]
    list_filter = ["mode", "month", "currency"]
    search_fields = ["team__slug", "cost_center", "note"]
    list_select_related = ["team"]

    @admin.display(description="thresholds")
    def thresholds_shown(self, obj):
        return ", ".join(f"{t}%" for t in obj.thresholds)

    @admin.display(description="forecast")
    def forecast(self, obj):
        forecast = budget_forecast(budget=obj)
        return f"{forecast.forecast_percent}%: {forecast.words()}"

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in BUDGET_FIELDS}
        if change:
            budget_services.budget_update(user=request.user, budget=obj, **fields)
        else:
            obj.pk = budget_services.budget_create(user=request.user, **fields).pk

    def delete_model(self, request, obj):
        budget_services.budget_delete(user=request.user, budget=obj)

    def delete_queryset(self, request, queryset):
        for budget in queryset:
            budget_services.budget_delete(user=request.user, budget=budget)


# --- idle GPUs (chargeback/idle/) ---------------------------------------------------------------------------------

from .idle.services import idle_notice_key  # noqa: E402
from .models import IdleAllocation, IdlePolicy, IdleScan  # noqa: E402


@admin.register(IdlePolicy)
class IdlePolicyAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """When a workload class's GPUs count as idle and whether the portal releases them; a class without a row uses
    the defaults of chargeback.idle.rules.IDLE_DEFAULTS. Read on every scan."""

    list_display = ["workload_class", "threshold_percent", "idle_after_seconds", "release_after_seconds",
                    "updated_at"]
    list_editable = ["threshold_percent", "idle_after_seconds", "release_after_seconds"]


@admin.register(IdleAllocation)
class IdleAllocationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Idle episodes found by the scans: read-only (a scan opens and closes them)."""

    list_display = ["request", "cluster", "workload_class", "idle_since", "detected_at", "marked_until",
                    "released_at", "end_reason"]
    list_filter = ["cluster", "workload_class", "end_reason"]
    readonly_fields = ["notices"]

    @admin.display(description="notices")
    def notices(self, obj):
        """Its notices, which are portal notices: their channels and delivery status, and a link to them."""
        key = idle_notice_key(obj.pk)
        sent = Notice.objects.filter(key=key).order_by("channel")
        if not sent:
            return "none queued (nobody to notify, or not flagged yet)"
        url = f"{reverse('admin:portal_notice_changelist')}?{urlencode({'key': key})}"
        return format_html('{} (<a href="{}">{}</a>)', ", ".join(f"{n.channel}: {n.status}" for n in sent), url,
                           key)


@admin.register(IdleScan)
class IdleScanAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["cluster", "scanned_at", "status", "requests_read", "flagged", "released", "message"]
    list_filter = ["cluster", "status"]


# Hardware-fault credits (finance reverses them): their admin lives beside them.
from .credits import admin as _credits_admin  # noqa: E402,F401
