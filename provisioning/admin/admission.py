"""The Kueue Workloads whose admission check the portal decided (provisioning/admission.py), read only."""
from django.contrib import admin

from portal.admin_empty import EmptyExplainedMixin
from portal.admin_mixins import ReadOnlyAdminMixin

from ..models import AdmissionWorkload
from .common import LIVE_CLUSTER_ONLY


@admin.register(AdmissionWorkload)
class AdmissionWorkloadAdmin(EmptyExplainedMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    empty_why = ("No Kueue Workloads decided: the admission check controller writes a row for each Workload of a "
                 "team queue on a Kueue cluster it reaches through its API server. " + LIVE_CLUSTER_ONLY)
    list_display = ["cluster", "namespace", "owner_kind", "owner_name", "request", "state", "message",
                    "state_changed_at", "first_seen_at"]
    list_filter = ["state", "cluster"]
    list_select_related = ["cluster", "request__team"]
    search_fields = ["namespace", "owner_name", "name", "uid"]
