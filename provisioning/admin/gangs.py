"""Status reconciliation and stalled gangs: policies (edited here), stalls with their notices (portal notices) and
each cluster's reconciliation state (read only)."""
from django.contrib import admin
from django.contrib.contenttypes.admin import GenericTabularInline

from portal.admin_empty import EmptyExplainedMixin
from portal.admin_mixins import PlatformAdminMixin, ReadOnlyAdminMixin
from portal.models import Notice

from ..models import ClusterReconcileState, GangPolicy, GangStall
from .common import LIVE_CLUSTER_ONLY


@admin.register(GangPolicy)
class GangPolicyAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """How long a gang may stay partial before its request is stalled (and notified), and how long stalled before
    the portal releases it. Read on every reconciliation cycle: a change applies within a minute."""

    list_display = ["workload_class", "stall_after_seconds", "release_after_seconds", "updated_at"]
    list_editable = ["stall_after_seconds", "release_after_seconds"]


class StallNoticeInline(ReadOnlyAdminMixin, GenericTabularInline):
    """The stall's notices (its key names the event: gang-stall:<stall>:stalled or :released); all of them, with
    every other notice, under Portal > Notices."""

    model = Notice
    ct_field, ct_fk_field = "about_type", "about_id"
    extra = 0
    fields = ["key", "channel", "target", "status", "attempts", "message", "sent_at"]
    ordering = ["id"]


@admin.register(GangStall)
class GangStallAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No stalled gangs: status reconciliation finds them by reading the pods on a cluster's API server. "
                 + LIVE_CLUSTER_ONLY)
    finance_can_view = True
    list_display = ["request", "cluster", "workload_class", "started_at", "ended_at", "end_reason", "pods",
                    "gpu_equivalents_running", "burnt_gpu_hours", "notified_at"]
    list_filter = ["end_reason", "workload_class", "cluster"]
    list_select_related = ["request__team", "cluster"]
    search_fields = ["request__name", "request__team__slug"]
    inlines = [StallNoticeInline]

    @admin.display(description="running / pending pods")
    def pods(self, obj):
        return f"{obj.running_pods} / {obj.pending_pods}"

    @admin.display(description="burnt GPU-hours")
    def burnt_gpu_hours(self, obj):
        return obj.burnt_gpu_hours()


@admin.register(ClusterReconcileState)
class ClusterReconcileStateAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No reconciliation state: it is written when status reconciliation reads a cluster's API server. "
                 + LIVE_CLUSTER_ONLY)
    list_display = ["cluster", "status", "finished_at", "pods", "requests", "transitions", "events_recorded",
                    "watch_events", "cycle_ms", "message"]
    list_select_related = ["cluster"]
