from django.contrib import admin

from .admin_mixins import PlatformAdminMixin
from .models import Membership, Team


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
