"""Provisioning jobs and the objects they applied, read only."""
from django.contrib import admin

from portal.admin_mixins import BackgroundJobAdminMixin, ReadOnlyAdminMixin

from ..models import AppliedObject, ProvisioningJob


@admin.register(ProvisioningJob)
class ProvisioningJobAdmin(BackgroundJobAdminMixin, admin.ModelAdmin):
    list_display = ["id", "request", "kind", "cluster", "finished_at"]
    list_filter = ["kind", "cluster"]
    list_select_related = ["request__team", "cluster"]
    search_fields = ["request__name"]


@admin.register(AppliedObject)
class AppliedObjectAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["kind", "namespace", "name", "api_version", "cluster", "request", "applied_at", "deleted_at"]
    list_filter = ["cluster", "kind"]
    list_select_related = ["cluster", "request__team"]
    search_fields = ["name", "namespace"]
