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
