"""The GPU catalogue, read only: it is shipped data."""
from django.contrib import admin

from portal.admin_mixins import ReadOnlyAdminMixin

from ..models import GpuModel, MigProfile


class MigProfileInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = MigProfile
    extra = 0
    fields = ["name", "memory_gb", "compute_slices", "max_instances"]


@admin.register(GpuModel)
class GpuModelAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The catalogue is shipped data (gpu/data); `manage.py sync_catalogue` updates it."""

    list_display = ["key", "product", "memory_gb", "family", "mig_total_slices", "mig_min_driver"]
    inlines = [MigProfileInline]
