"""Where the platform team records the decisions the register cannot compute (scheduling model, gang backend, who
owns driver upgrades) and signs them off, and plans driver upgrades. Every write goes through the services."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from portal.admin_mixins import PlatformAdminMixin
from portal.errors import DomainError
from provisioning.choices import GangScheduler, SchedulingModel

from . import services
from .choices import DECISION_VALUE_KEYS, DecisionArea
from .models import DriverUpgradePlan, PlatformDecision, decision_value_errors


class PlatformDecisionForm(forms.ModelForm):
    """The decided value as a choice per area instead of raw JSON."""

    scheduling_model = forms.ChoiceField(choices=[("", "—"), *SchedulingModel.choices], required=False,
                                         help_text="for a scheduling model decision")
    gang_backend = forms.ChoiceField(choices=[("", "—"), *GangScheduler.choices], required=False,
                                     help_text="for a gang backend decision (per cluster: leave the pool empty)")

    class Meta:
        model = PlatformDecision
        fields = ["area", "cluster", "pool", "scheduling_model", "gang_backend", "owner", "rationale"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key, value in (self.instance.value or {}).items():
            if key in self.fields:
                self.fields[key].initial = value

    def clean(self):
        cleaned = super().clean()
        area = cleaned.get("area")
        key = DECISION_VALUE_KEYS.get(area)
        value = {key: cleaned.get(key)} if key and cleaned.get(key) else {}
        pool = cleaned.get("pool")
        for field, messages_ in decision_value_errors(area=area, value=value,
                                                      pool_id=pool.pk if pool else None).items():
            self.add_error(key if field == "value" and key else ("pool" if field == "pool" else None),
                           " ".join(messages_))
        if pool is not None and cleaned.get("cluster") is not None and pool.cluster_id != cleaned["cluster"].pk:
            self.add_error("pool", "The pool must belong to the cluster.")
        cleaned["value"] = value
        self.instance.value = value
        return cleaned


@admin.register(PlatformDecision)
class PlatformDecisionAdmin(PlatformAdminMixin, admin.ModelAdmin):
    form = PlatformDecisionForm
    list_display = ["subject_display", "area", "decided", "owner", "signed_off_by_name", "signed_off_at"]
    list_filter = ["area", "cluster"]
    search_fields = ["owner", "rationale", "cluster__name", "pool__name"]
    list_select_related = ["cluster", "pool"]
    readonly_fields = ["signed_off_by_name", "signed_off_at", "created_by", "created_at", "updated_at",
                       "in_the_register"]
    fieldsets = [
        (None, {"fields": ["area", ("cluster", "pool"), ("scheduling_model", "gang_backend"), "owner", "rationale"],
                "description": "Changing a signed-off decision takes its sign-off away: it counts again once signed "
                               "off. A signed-off value the cluster does not (yet) follow shows as a conflict."}),
        ("Sign-off", {"fields": [("signed_off_by_name", "signed_off_at"), ("created_by", "created_at", "updated_at"),
                                 "in_the_register"]}),
    ]
    actions = ["sign_off"]

    @admin.display(description="subject", ordering="cluster__name")
    def subject_display(self, obj):
        return obj.subject

    @admin.display(description="decided value")
    def decided(self, obj):
        return obj.decided_value or ("(owner of the upgrades)" if obj.area == DecisionArea.DRIVER_LIFECYCLE else "-")

    @admin.display(description="register")
    def in_the_register(self, obj):
        return format_html('<a href="{}">See the verdict in the register</a>', reverse("register:page"))

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        saved = services.platform_decision_record(
            user=request.user, area=data["area"], cluster=data["cluster"], pool=data.get("pool"),
            value=data["value"], owner=data["owner"], rationale=data["rationale"],
            decision_id=obj.pk if change else None,
        )  # fmt: skip
        obj.pk = obj.id = saved.pk
        obj.refresh_from_db()

    @admin.action(description="Sign off the selected decisions", permissions=["change"])
    def sign_off(self, request, queryset):
        signed = 0
        for decision in queryset:
            try:
                services.platform_decision_sign_off(user=request.user, decision_id=decision.pk)
                signed += 1
            except DomainError as exc:
                messages.error(request, f"{decision}: {exc.message}")
        if signed:
            messages.success(request, f"{signed} decision(s) signed off; the register shows whether the clusters "
                                      "follow them.")


class DriverUpgradePlanForm(forms.ModelForm):
    class Meta:
        model = DriverUpgradePlan
        fields = ["cluster", "pool", "target_version", "planned_for", "status", "note"]


@admin.register(DriverUpgradePlan)
class DriverUpgradePlanAdmin(PlatformAdminMixin, admin.ModelAdmin):
    form = DriverUpgradePlanForm
    list_display = ["__str__", "status", "note", "created_by", "created_at"]
    list_filter = ["status", "cluster"]
    list_select_related = ["cluster", "pool"]
    readonly_fields = ["created_by", "created_at", "updated_at"]
    fields = ["cluster", "pool", ("target_version", "planned_for", "status"), "note",
              ("created_by", "created_at", "updated_at")]

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        saved = services.driver_upgrade_plan_record(
            user=request.user, cluster=data["cluster"], pool=data.get("pool"), target_version=data["target_version"],
            planned_for=data["planned_for"], note=data.get("note", ""), status=data["status"],
            plan_id=obj.pk if change else None,
        )  # fmt: skip
        obj.pk = obj.id = saved.pk
        obj.refresh_from_db()
