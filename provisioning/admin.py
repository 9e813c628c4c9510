from django.contrib import admin, messages
from django.db import models
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from portal.admin_empty import EmptyExplainedMixin
from portal.admin_mixins import PlatformAdminMixin, ReadOnlyAdminMixin
from portal.errors import DomainError

from .credentials import cluster_server_changed, credentials_reencrypt
from .models import (
    AppliedObject,
    Cluster,
    GpuModel,
    MigPlan,
    MigPlanStep,
    MigProfile,
    Node,
    NodePool,
    ProvisioningJob,
    TeamQuota,
)

# Lists that only a cluster's API server fills (EmptyExplainedMixin).
LIVE_CLUSTER_ONLY = "The demo's clusters have no API server (they use the GitOps applier), so this stays empty there."


class MigProfileInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = MigProfile
    extra = 0
    fields = ["name", "memory_gb", "compute_slices", "max_instances"]


@admin.register(GpuModel)
class GpuModelAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The catalogue is shipped data (gpu/data); `manage.py sync_catalogue` updates it."""

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
        "discrepancy_list",
    ]
    readonly_fields = ["discrepancy_list"]

    @admin.display(description="declared vs discovered")
    def discrepancy_list(self, obj):
        return discrepancy_html(obj.discrepancies if obj else [])


@admin.register(Cluster)
class ClusterAdmin(PlatformAdminMixin, admin.ModelAdmin):
    """Credentials are not part of this form (ClusterCredential is never registered in the admin);
    set them with `manage.py register_cluster`. Changing the API server here clears them."""

    list_display = ["name", "kubernetes_version", "scheduling_model", "gang_scheduler", "applier", "enabled",
                    "last_synced_at", "sync_state"]
    list_filter = ["scheduling_model", "gang_scheduler", "applier", "enabled"]
    fields = [
        "name",
        "description",
        ("kubernetes_version", "scheduling_model", "gang_scheduler", "gang_queue"),
        "dra_feature_gates",
        ("gang_scheduler_owns_gpu_nodes", "dra_mps_support"),
        ("feature_gates", "jobset_installed", "gang_topology_key", "gang_topology_name"),
        ("applier", "api_server", "gitops_repo"),
        ("ingress_namespace", "ingress_pod_labels"),
        ("metrics_namespace", "metrics_pod_labels"),
        "prometheus_url",
        "enabled",
        ("discovered_kubernetes_version", "dra_in_use", "gang_schedulers_seen"),
        ("last_synced_at", "last_sync_attempt_at"),
        "last_sync_error",
        "discrepancy_list",
    ]
    readonly_fields = ["discovered_kubernetes_version", "dra_in_use", "gang_schedulers_seen", "last_synced_at",
                       "last_sync_attempt_at", "last_sync_error", "discrepancy_list"]
    inlines = [NodePoolInline]
    actions = ["sync_inventory", "propose_mig_plan", "reencrypt_credentials"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # API servers speak https

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "api_server" in form.changed_data and cluster_server_changed(cluster=obj):
            self.message_user(request, f"The API server of {obj.name} changed, so its credentials were cleared: "
                                       "set them again with manage.py register_cluster.", messages.WARNING)

    @admin.action(description="Re-encrypt all stored credentials with the first key of PORTAL_CREDENTIAL_KEYS")
    def reencrypt_credentials(self, request, queryset):
        try:
            count = credentials_reencrypt(user=request.user)  # every stored secret: a key rotation is global
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        self.message_user(request, f"{count} stored secrets re-encrypted with the first key.", messages.SUCCESS)

    # --- inventory discovery and MIG planning ---

    @admin.display(description="gang schedulers installed")
    def gang_schedulers_seen(self, obj):
        return ", ".join(f"{g['backend']} ({', '.join(g['versions'])})" for g in obj.discovered_gang_schedulers) or "-"

    @admin.display(description="declared vs discovered")
    def discrepancy_list(self, obj):
        return discrepancy_html(obj.discrepancies)

    @admin.display(description="last sync")
    def sync_state(self, obj):
        return obj.last_sync_error or (f"{len(obj.discrepancies)} discrepancies" if obj.last_synced_at else "never")

    @admin.action(description="Sync the inventory of the selected clusters now", permissions=["change"])
    def sync_inventory(self, request, queryset):
        from .inventory_sync import inventory_sync_now

        for cluster in queryset:
            try:
                outcome = inventory_sync_now(user=request.user, cluster=cluster)
            except DomainError as exc:
                self.message_user(request, f"{cluster.name}: {exc.message}", messages.ERROR)
                continue
            level = messages.SUCCESS if outcome.status == "synced" else messages.WARNING
            self.message_user(request, f"Inventory of {cluster.name}: {outcome.status}. {outcome.message}", level)

    @admin.action(description="Propose MIG layout changes for the selected clusters", permissions=["change"])
    def propose_mig_plan(self, request, queryset):
        from .mig_plans import mig_plan_propose

        for cluster in queryset:
            try:
                outcome = mig_plan_propose(user=request.user, cluster=cluster)
            except DomainError as exc:
                self.message_user(request, f"{cluster.name}: {exc.message}", messages.ERROR)
                continue
            if outcome.plan is None:
                self.message_user(request, outcome.message, messages.INFO)
            else:
                url = reverse("admin:provisioning_migplan_change", args=[outcome.plan.pk])
                self.message_user(request, format_html('<a href="{}">{}</a> Review and approve it.', url,
                                                       outcome.message), messages.SUCCESS)


@admin.register(NodePool)
class NodePoolAdmin(PlatformAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "gpu_model", "sharing_mode", "mig_layout", "time_slicing_replicas", "node_count",
                    "gpus_per_node", "driver_version", "source", "nodes_seen", "discrepancy_count", "upgrade_impact"]
    list_filter = ["cluster", "sharing_mode", "gpu_model", "source"]
    list_select_related = ["cluster", "gpu_model"]
    readonly_fields = ["discovered", "discrepancy_list", "last_seen_at"]


    @admin.display(description="nodes seen")
    def nodes_seen(self, obj):
        return (obj.discovered or {}).get("node_count", "-")

    @admin.display(description="discrepancies")
    def discrepancy_count(self, obj):
        return len(obj.discrepancies or [])

    @admin.display(description="declared vs discovered")
    def discrepancy_list(self, obj):
        return discrepancy_html(obj.discrepancies)

    @admin.display(description="")
    def upgrade_impact(self, obj):
        url = reverse("admin:provisioning_nodepool_upgrade_impact", args=[obj.pk])
        return format_html('<a href="{}">driver upgrade impact</a>', url)

    def get_urls(self):
        return [
            path("<int:pk>/upgrade-impact/", self.admin_site.admin_view(self.upgrade_impact_view),
                 name="provisioning_nodepool_upgrade_impact"),
            *super().get_urls(),
        ]

    def upgrade_impact_view(self, request, pk):
        """If this pool moved to another driver: which live requests could no longer be scheduled, and whose."""
        from .selectors import driver_upgrade_impact

        if not self.has_change_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        pool = self.object_or_404(request, pk, NodePool.objects.select_related("cluster", "gpu_model"))
        version = request.GET.get("driver_version", "").strip()
        impact, error = None, ""
        if version:
            try:
                impact = driver_upgrade_impact(pool=pool, driver_version=version)
            except DomainError as exc:
                error = exc.message
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "pool": pool,
                   "title": f"Driver upgrade impact: {pool}", "driver_version": version, "impact": impact,
                   "error": error}
        return TemplateResponse(request, "admin/provisioning/upgrade_impact.html", context)


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


# --- nodes and MIG plans -------------------------------------------------


def discrepancy_html(items):
    if not items:
        return "none"
    return format_html("<ul>{}</ul>", format_html_join("", "<li><strong>{}</strong>: {}</li>",
                                                       ((d["field"], d["message"]) for d in items)))


@admin.register(Node)
class NodeAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """GPU nodes as discovery last saw them (`manage.py sync_inventory`)."""

    empty_why = ("No nodes yet: nodes are discovered by the inventory sync, which reads a cluster's API server. "
                 + LIVE_CLUSTER_ONLY)

    finance_can_view = True
    list_display = ["name", "cluster", "pool", "gpu_model", "gpu_count", "sharing_mode", "mig_config",
                    "mig_config_state", "driver_version", "scheduling_model", "unschedulable", "usable", "present",
                    "last_seen_at"]
    list_filter = ["cluster", "present", "sharing_mode", "scheduling_model", "unschedulable", "gpu_model"]
    list_select_related = ["cluster", "pool", "gpu_model"]
    search_fields = ["name", "mig_config", "driver_version", "clique"]


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
        from .mig_plans import mig_plan_approve

        for plan in queryset:
            try:
                mig_plan_approve(user=request.user, plan_id=plan.pk)
                self.message_user(request, f"MIG plan #{plan.pk} approved; its first node is being cordoned.")
            except DomainError as exc:
                self.message_user(request, f"#{plan.pk}: {exc.message}", messages.ERROR)

    @admin.action(description="Cancel the selected plans (only before they start)", permissions=["change"])
    def cancel_plans(self, request, queryset):
        from .mig_plans import mig_plan_cancel

        for plan in queryset:
            try:
                mig_plan_cancel(user=request.user, plan_id=plan.pk)
                self.message_user(request, f"MIG plan #{plan.pk} cancelled.")
            except DomainError as exc:
                self.message_user(request, f"#{plan.pk}: {exc.message}", messages.ERROR)


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
class GangStallAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No stalled gangs: status reconciliation finds them by reading the pods on a cluster's API server. "
                 + LIVE_CLUSTER_ONLY)
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
class GangNotificationAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No notifications: they are sent about stalled gangs, which only a live cluster reports. "
                 + LIVE_CLUSTER_ONLY)
    list_display = ["id", "stall", "kind", "channel", "target", "status", "attempts", "message", "sent_at"]
    list_filter = ["status", "kind", "channel"]
    list_select_related = ["stall"]


@admin.register(ClusterReconcileState)
class ClusterReconcileStateAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No reconciliation state: it is written when status reconciliation reads a cluster's API server. "
                 + LIVE_CLUSTER_ONLY)
    list_display = ["cluster", "status", "finished_at", "pods", "requests", "transitions", "events_recorded",
                    "watch_events", "cycle_ms", "message"]
    list_select_related = ["cluster"]


# --- Kueue admission check (provisioning/admission.py) ------------------------------------------------------------

from .models import AdmissionWorkload  # noqa: E402


@admin.register(AdmissionWorkload)
class AdmissionWorkloadAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No Kueue Workloads decided: the admission check controller writes a row for each Workload of a "
                 "team queue on a Kueue cluster it reaches through its API server. " + LIVE_CLUSTER_ONLY)
    list_display = ["cluster", "namespace", "owner_kind", "owner_name", "request", "state", "message",
                    "state_changed_at", "first_seen_at"]
    list_filter = ["state", "cluster"]
    list_select_related = ["cluster", "request__team"]
    search_fields = ["namespace", "owner_name", "name", "uid"]
