from django.contrib import admin

from .admin_mixins import PlatformAdminMixin
from .models import Membership, Team

admin.site.site_header = "GPU Golden Path: platform admin"
admin.site.site_title = "GPU Golden Path admin"
admin.site.index_title = "Platform operations"


class MembershipInline(PlatformAdminMixin, admin.TabularInline):
    model = Membership
    extra = 0
    finance_can_view = True


@admin.register(Team)
class TeamAdmin(PlatformAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["slug", "name", "cost_center", "notification_email"]
    search_fields = ["slug", "name", "cost_center"]
    inlines = [MembershipInline]
