from django.contrib import admin

from portal.admin_mixins import PlatformAdminMixin, ReadOnlyAdminMixin

from .models import AppliedObject, Cluster, GpuModel, MigProfile, NodePool, ProvisioningJob, TeamQuota


class MigProfileInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = MigProfile
    extra = 0
    fields = ["name", "memory_gb", "compute_slices", "max_instances"]


@admin.register(GpuModel)
class GpuModelAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The catalogue is shipped data (provisioning/data); `manage.py sync_catalogue` updates it."""

    list_display = ["key", "product", "memory_gb", "family", "mig_total_slices", "mig_min_driver"]
    inlines = [MigProfileInline]


class NodePoolInline(PlatformAdminMixin, admin.StackedInline):
    model = NodePool
    extra = 0
    fields = [
        ("name", "gpu_model", "source"),
        ("node_count", "gpus_per_node"),
        ("sharing_mode", "mig_strategy", "mig_layout"),
        ("time_slicing_replicas", "time_slicing_renamed", "device_plugin_config"),
        ("driver_version", "nvlink_domain", "scheduling_model"),
        ("node_selector", "taints"),
    ]


@admin.register(Cluster)
class ClusterAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """Credentials are not part of this form (ClusterCredential is never registered in the admin);
    set them with `manage.py register_cluster`."""

    list_display = ["name", "kubernetes_version", "scheduling_model", "gang_scheduler", "applier", "enabled"]
    list_filter = ["scheduling_model", "gang_scheduler", "applier", "enabled"]
    fields = [
        "name",
        "description",
        ("kubernetes_version", "scheduling_model", "gang_scheduler", "gang_queue"),
        ("applier", "api_server", "gitops_repo"),
        "enabled",
    ]
    inlines = [NodePoolInline]


@admin.register(NodePool)
class NodePoolAdmin(PlatformAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "gpu_model", "sharing_mode", "mig_layout", "time_slicing_replicas", "node_count",
                    "gpus_per_node", "driver_version", "source"]
    list_filter = ["cluster", "sharing_mode", "gpu_model", "source"]
    list_select_related = ["cluster", "gpu_model"]


@admin.register(ProvisioningJob)
class ProvisioningJobAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "request", "kind", "cluster", "status", "attempts", "message", "updated_at"]
    list_filter = ["status", "kind", "cluster"]
    list_select_related = ["request__team", "cluster"]
    search_fields = ["request__name", "message"]


@admin.register(AppliedObject)
class AppliedObjectAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["kind", "namespace", "name", "api_version", "cluster", "request", "applied_at", "deleted_at"]
    list_filter = ["cluster", "kind"]
    list_select_related = ["cluster", "request__team"]
    search_fields = ["name", "namespace"]


@admin.register(TeamQuota)
class TeamQuotaAdmin(PlatformAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["team", "strategy", "gpu_equivalents", "updated_at"]
    list_editable = ["gpu_equivalents"]
    list_filter = ["strategy", "team"]


# --- status reconciliation and stalled gangs (reconcile) --------------------------------------------------------

from .models import ClusterReconcileState, GangNotification, GangPolicy, GangStall  # noqa: E402


@admin.register(GangPolicy)
class GangPolicyAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """How long a gang may stay partial before its request is stalled (and notified), and how long stalled before
    the portal releases it. Read on every reconciliation cycle: a change applies within a minute."""

    list_display = ["workload_class", "stall_after_seconds", "release_after_seconds", "updated_at"]
    list_editable = ["stall_after_seconds", "release_after_seconds"]


class GangNotificationInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = GangNotification
    extra = 0
    fields = ["kind", "channel", "target", "status", "attempts", "message", "sent_at"]


@admin.register(GangStall)
class GangStallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["request", "cluster", "workload_class", "started_at", "ended_at", "end_reason", "running_pods",
                    "pending_pods", "gpu_equivalents_running", "burnt_gpu_hours", "notified_at", "released_at"]
    list_filter = ["end_reason", "workload_class", "cluster"]
    list_select_related = ["request__team", "cluster"]
    search_fields = ["request__name", "request__team__slug"]
    inlines = [GangNotificationInline]

    @admin.display(description="burnt GPU-hours")
    def burnt_gpu_hours(self, obj):
        return obj.burnt_gpu_hours()


@admin.register(GangNotification)
class GangNotificationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "stall", "kind", "channel", "target", "status", "attempts", "message", "sent_at"]
    list_filter = ["status", "kind", "channel"]
    list_select_related = ["stall"]


@admin.register(ClusterReconcileState)
class ClusterReconcileStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["cluster", "status", "finished_at", "pods", "requests", "transitions", "events_recorded",
                    "watch_events", "cycle_ms", "message"]
    list_select_related = ["cluster"]


# --- end status reconciliation ----------------------------------------------------------------------------------
