"""Why a request waits (computed by provisioning.wait_refresh from the cluster's scheduler objects; read by the request
page and API), and the Kueue Workloads whose admission check the portal decides (provisioning/admission.py)."""
from __future__ import annotations

from django.db import models

from .clusters import Cluster


class RequestWait(models.Model):
    """The last reading of why an approved request is not (fully) running, and the start estimate's record: the
    first estimate given, and the actual start once its pods run, so the estimate's error can be tracked."""

    request = models.OneToOneField("intake.GpuRequest", on_delete=models.CASCADE, related_name="wait")
    checked_at = models.DateTimeField()
    waiting = models.BooleanField(default=True)
    blockers = models.JSONField(default=list, blank=True, help_text="[{kind, source, reason, message, words}]")
    unblock = models.JSONField(default=list, blank=True, help_text="what would unblock it, in words")
    missing_members = models.JSONField(default=list, blank=True, help_text="a stalled gang's absent members")
    queue_position = models.JSONField(null=True, blank=True, help_text="Kueue visibility API positions")
    estimated_start = models.DateTimeField(null=True, blank=True)
    estimate_basis = models.TextField(blank=True)
    first_estimate = models.DateTimeField(null=True, blank=True)
    first_estimated_at = models.DateTimeField(null=True, blank=True)
    actual_start = models.DateTimeField(null=True, blank=True)
    error_seconds = models.IntegerField(null=True, blank=True, help_text="actual start minus the first estimate")
    read_error = models.TextField(blank=True, help_text="why the cluster could not be read at the last check")

    class Meta:
        ordering = ["request_id"]

    def __str__(self) -> str:
        return f"wait of request #{self.request_id}"


class AdmissionWorkload(models.Model):
    """A Kueue Workload whose `gpu-portal-approval` admission check the portal decides, keyed by its uid: a restart
    (or a second controller run) finds the row and never creates a second request or decides twice."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="admission_workloads")
    uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    owner_kind = models.CharField(max_length=63, blank=True)
    owner_name = models.CharField(max_length=253, blank=True)
    applied_owner_uid = models.CharField(
        max_length=64, blank=True, help_text="uid of the object up its owner chain the portal applied, if any")
    request = models.ForeignKey(
        "intake.GpuRequest", null=True, blank=True, on_delete=models.SET_NULL, related_name="admission_workloads",
        help_text="blank: the portal could not make a request of it (and rejected it, saying why)",
    )
    state = models.CharField(max_length=10, blank=True, help_text="the check state last written: Pending, Ready, Rejected")
    message = models.TextField(blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster", "namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "uid"], name="%(app_label)s_%(class)s_unique_uid"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}: {self.namespace}/{self.name} ({self.state or 'undecided'})"


class AdmissionBinding(models.Model):
    """What an approval admits on a Kueue cluster, bound once: the Workload (by uid) the approval was first
    admitted as, its namespace and pod sets (`provisioning.manifests.admission.workload_shape`). Another Workload
    claiming the same request -- a copy of its labels, the same request after it completed, a larger copy, one in
    another namespace -- is not admitted as it (docs/admission-check.md)."""

    request = models.OneToOneField("intake.GpuRequest", on_delete=models.CASCADE, related_name="admission_binding")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="admission_bindings")
    workload_uid = models.CharField(max_length=64)
    owner_uid = models.CharField(max_length=64, blank=True)
    namespace = models.CharField(max_length=63)
    shape = models.JSONField(default=list, help_text="[{count, devices_per_pod, claims_per_pod, images}] approved")
    bound_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["request_id"]

    def __str__(self) -> str:
        return f"request #{self.request_id} bound to Workload {self.workload_uid}"
