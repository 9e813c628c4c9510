"""Clusters and their declared node pools (inline). Writes go through provisioning.cluster_services, so the admin
applies the rules the REST API applies; the form has already shown any rule a value breaks as a field error."""
from django.contrib import admin, messages
from django.db import models
from django.urls import reverse
from django.utils.html import format_html

from portal.admin_mixins import PlatformAdminMixin
from portal.errors import DomainError
from portal.text import plural

from ..cluster_services import cluster_delete, cluster_save, node_pool_delete, node_pool_save
from ..credentials import credentials_reencrypt
from ..inventory_sync import inventory_sync_request
from ..mig_plans import mig_plan_propose
from ..models import Cluster, NodePool
from .common import discrepancy_html


class NodePoolInline(PlatformAdminMixin, admin.StackedInline):
    model = NodePool
    extra = 0
    fields = [
        ("name", "gpu_model", "source"),
        ("node_count", "gpus_per_node"),
        ("sharing_mode", "mig_strategy", "mig_layout", "mig_readiness_label"),
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
        _, cleared = cluster_save(user=request.user, cluster=obj)
        if cleared:
            self.message_user(request, f"The API server of {obj.name} changed, so its credentials were cleared: "
                                       "set them again with manage.py register_cluster.", messages.WARNING)

    def save_formset(self, request, form, formset, change):
        """The inline pools, through the pool services (one transaction with the cluster: the admin's view)."""
        pools = formset.save(commit=False)
        for pool in formset.deleted_objects:
            node_pool_delete(user=request.user, pool=pool)
        for pool in pools:
            node_pool_save(user=request.user, pool=pool)
        formset.save_m2m()

    def delete_model(self, request, obj):
        cluster_delete(user=request.user, cluster=obj)

    def delete_queryset(self, request, queryset):
        for cluster in queryset:
            cluster_delete(user=request.user, cluster=cluster)

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
        return obj.last_sync_error or (plural(len(obj.discrepancies), "discrepancy", "discrepancies")
                                       if obj.last_synced_at else "never")

    @admin.action(description="Sync the inventory of the selected clusters now", permissions=["change"])
    def sync_inventory(self, request, queryset):
        # A worker runs it: the web pods hold no credentials for the Kubernetes API (docs/deployment.md).
        for cluster in queryset:
            try:
                note = inventory_sync_request(user=request.user, cluster=cluster)
            except DomainError as exc:
                self.message_user(request, f"{cluster.name}: {exc.message}", messages.ERROR)
                continue
            self.message_user(request, note, messages.INFO)

    @admin.action(description="Propose MIG layout changes for the selected clusters", permissions=["change"])
    def propose_mig_plan(self, request, queryset):
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
