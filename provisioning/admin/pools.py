"""Node pools (with the driver upgrade impact page) and the GPU nodes discovery found."""
from django.contrib import admin
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from portal.admin_empty import EmptyExplainedMixin
from portal.admin_mixins import PlatformAdminMixin, ReadOnlyAdminMixin
from portal.errors import DomainError

from ..cluster_services import node_pool_delete, node_pool_save
from ..models import Node, NodePool
from ..selectors import driver_upgrade_impact
from .common import LIVE_CLUSTER_ONLY, discrepancy_html


@admin.register(NodePool)
class NodePoolAdmin(PlatformAdminMixin, admin.ModelAdmin):
    # The pool's action right after its name: it stays in sight however many columns follow.
    list_display = ["__str__", "upgrade_impact", "gpu_model", "sharing_mode", "mig_layout", "time_slicing_replicas",
                    "node_count", "gpus_per_node", "driver_version", "source", "nodes_seen", "discrepancy_count"]
    list_filter = ["cluster", "sharing_mode", "gpu_model", "source"]
    list_select_related = ["cluster", "gpu_model"]
    readonly_fields = ["discovered", "discrepancy_list", "last_seen_at"]

    def save_model(self, request, obj, form, change):
        node_pool_save(user=request.user, pool=obj)

    def delete_model(self, request, obj):
        node_pool_delete(user=request.user, pool=obj)

    def delete_queryset(self, request, queryset):
        for pool in queryset:
            node_pool_delete(user=request.user, pool=pool)

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


@admin.register(Node)
class NodeAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """GPU nodes as discovery last saw them (`manage.py sync_inventory`)."""

    empty_why = ("No nodes yet: nodes are discovered by the inventory sync, which reads a cluster's API server. "
                 + LIVE_CLUSTER_ONLY)

    finance_can_view = True
    # Few enough columns to fit 1,280 px: the MIG layout with its state, and what keeps a node from taking work.
    list_display = ["name", "cluster", "pool", "gpu_model", "gpu_count", "sharing_mode", "mig_layout",
                    "driver_version", "scheduling_model", "state", "last_seen_at"]
    list_filter = ["cluster", "present", "sharing_mode", "scheduling_model", "unschedulable", "gpu_model"]
    list_select_related = ["cluster", "pool", "gpu_model"]
    search_fields = ["name", "mig_config", "driver_version", "clique"]

    @admin.display(description="MIG layout", ordering="mig_config")
    def mig_layout(self, obj):
        if not obj.mig_config:
            return "-"
        return f"{obj.mig_config} ({obj.mig_config_state})" if obj.mig_config_state else obj.mig_config

    @admin.display(description="state")
    def state(self, obj):
        said = [word for flag, word in ((not obj.present, "gone"), (obj.unschedulable, "cordoned"),
                                        (not obj.usable, "not usable for its pool")) if flag]
        return ", ".join(said) or "ready"
