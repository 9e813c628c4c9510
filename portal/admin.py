from django.contrib import admin
from django.db import models

from .admin_mixins import PlatformAdminMixin
from .models import Membership, Team
from .services import team_webhook_set

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
    # The signing secret is shown to the team and the platform team through the API only (finance reads teams here).
    exclude = ["webhook_secret"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if obj.webhook_url and not obj.webhook_secret:
            team_webhook_set(user=request.user, team=obj, url=obj.webhook_url)  # gives it a signing secret
