"""Background operations on a request's Kubernetes objects, and the objects they applied."""
from __future__ import annotations

from django.db import models

from portal.jobs import BackgroundJob

from ..choices import JobKind, JobStatus
from .clusters import Cluster


class ProvisioningJob(BackgroundJob):
    """One background operation on a request's Kubernetes objects: its status, attempts and the last message,
    so the admin and the API show failures without anyone reading worker logs."""

    request = models.ForeignKey("intake.GpuRequest", on_delete=models.CASCADE, related_name="provisioning_jobs")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="jobs")
    kind = models.CharField(max_length=10, choices=JobKind.choices)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta(BackgroundJob.Meta):
        constraints = [
            # One apply job and one teardown job per request: retries and redeliveries reuse the row.
            models.UniqueConstraint(fields=["request", "kind"], name="%(app_label)s_%(class)s_one_per_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.request_id}: {self.status}"


class AppliedObject(models.Model):
    """A Kubernetes object the portal created for a request (or its team), as the applier reported it."""

    request = models.ForeignKey(
        "intake.GpuRequest", null=True, blank=True, on_delete=models.CASCADE, related_name="applied_objects"
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="applied_objects")
    api_version = models.CharField(max_length=100)
    kind = models.CharField(max_length=100)
    namespace = models.CharField(max_length=63, blank=True)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    resource_version = models.CharField(max_length=64, blank=True, help_text="or the GitOps commit")
    applied_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "api_version", "kind", "namespace", "name"],
                name="%(app_label)s_%(class)s_unique_object",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"
