"""MIG layout plans: proposed from the cluster list, approved or cancelled here, executed by beat."""
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from portal.admin_mixins import PlatformAdminMixin, ReadOnlyAdminMixin
from portal.errors import DomainError

from ..mig_plans import mig_plan_approve, mig_plan_cancel
from ..models import MigPlan, MigPlanStep


class MigPlanStepInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = MigPlanStep
    extra = 0
    fields = ["position", "node_name", "from_config", "to_config", "gpu_count", "cost", "affected", "state",
              "message", "history"]
    readonly_fields = fields

    @admin.display(description="estimated cost")
    def cost(self, obj):
        work = (f"{obj.remaining_work_seconds} s of running work" if obj.remaining_work_known
                else "running work with no expected end")
        return f"{obj.estimated_seconds_min}-{obj.estimated_seconds_max} s ({obj.gpu_count} GPUs x 30-60 s + {work})"

    @admin.display(description="interrupted workloads")
    def affected(self, obj):
        return format_html_join(
            "", "<div>{} ({} pod(s), {})</div>",
            ((w["label"], w["pods"], f"{w['remaining_seconds']} s left" if w["remaining_seconds"] is not None
              else "no expected end") for w in obj.affected_workloads),
        ) or "none"

    @admin.display(description="steps")
    def history(self, obj):
        return format_html_join("", "<div>{} {} -> {}: {}</div>",
                                ((e["at"][:19], e["from"] or "-", e["to"], e["message"]) for e in obj.log))


@admin.register(MigPlan)
class MigPlanAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """Proposed with the cluster action "Propose MIG layout changes"; approving one starts its execution."""

    finance_can_view = False
    list_display = ["id", "cluster", "status", "summary", "created_by", "approved_by", "created_at", "message"]
    list_filter = ["status", "cluster"]
    list_select_related = ["cluster", "created_by", "approved_by"]
    fields = ["cluster", "status", "summary", "demand", "unmet", "drain_timeout_seconds",
              "reconfigure_timeout_seconds", "created_by", "approved_by", "approved_at", "started_at", "finished_at",
              "message"]
    readonly_fields = ["cluster", "status", "summary", "demand", "unmet", "created_by", "approved_by", "approved_at",
                       "started_at", "finished_at", "message"]
    inlines = [MigPlanStepInline]
    actions = ["approve_plans", "cancel_plans"]

    def has_add_permission(self, request, *args):
        return False  # plans come from the planner

    def has_delete_permission(self, request, obj=None):
        return False  # the record of what was done to nodes stays

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.status != "draft":
            return [*self.readonly_fields, "drain_timeout_seconds", "reconfigure_timeout_seconds"]
        return self.readonly_fields

    @admin.action(description="Approve the selected plans (execution starts: nodes are cordoned)",
                  permissions=["change"])
    def approve_plans(self, request, queryset):
        for plan in queryset:
            try:
                mig_plan_approve(user=request.user, plan_id=plan.pk)
                self.message_user(request, f"MIG plan #{plan.pk} approved; its first node is being cordoned.")
            except DomainError as exc:
                self.message_user(request, f"#{plan.pk}: {exc.message}", messages.ERROR)

    @admin.action(description="Cancel the selected plans (only before they start)", permissions=["change"])
    def cancel_plans(self, request, queryset):
        for plan in queryset:
            try:
                mig_plan_cancel(user=request.user, plan_id=plan.pk)
                self.message_user(request, f"MIG plan #{plan.pk} cancelled.")
            except DomainError as exc:
                self.message_user(request, f"#{plan.pk}: {exc.message}", messages.ERROR)
