"""Team quotas; writes go through provisioning.cluster_services."""
from django.contrib import admin

from portal.admin_mixins import PlatformAdminMixin

from ..cluster_services import team_quota_delete, team_quota_save
from ..models import TeamQuota


@admin.register(TeamQuota)
class TeamQuotaAdmin(PlatformAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["team", "strategy", "gpu_equivalents", "updated_at"]
    list_editable = ["gpu_equivalents"]
    list_filter = ["strategy", "team"]

    def save_model(self, request, obj, form, change):
        team_quota_save(user=request.user, quota=obj)

    def delete_model(self, request, obj):
        team_quota_delete(user=request.user, quota=obj)

    def delete_queryset(self, request, queryset):
        for quota in queryset:
            team_quota_delete(user=request.user, quota=quota)
