"""Idle GPUs: the policy per workload class, what the portal last measured of each running request, the idle
episodes it found and its scans. The notices about an episode are portal notices (portal.models.Notice, key
"idle:<episode id>"). Re-exported by chargeback.models."""
from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from intake.choices import WorkloadClass


class IdlePolicy(models.Model):
    """When a request of one workload class counts as idle, and whether the portal releases it then. A class
    without a row uses the defaults in chargeback.idle.rules (IDLE_DEFAULTS). Edited by the platform team."""

    workload_class = models.CharField(max_length=20, choices=WorkloadClass.choices, unique=True)
    threshold_percent = models.DecimalField(
        max_digits=5, decimal_places=2, validators=[MinValueValidator(0), MaxValueValidator(100)],
        help_text="busiest GPU of the pod below this utilisation (%) -> idle",
    )  # fmt: skip
    idle_after_seconds = models.PositiveIntegerField(
        validators=[MinValueValidator(1)], help_text="idle for this long -> flagged and the owner notified"
    )
    release_after_seconds = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="still idle this long after being flagged -> cancelled (its objects deleted); blank: never",
    )  # fmt: skip
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workload_class"]
        verbose_name_plural = "idle policies"

    def __str__(self) -> str:
        return f"{self.workload_class}: idle below {self.threshold_percent}% for {self.idle_after_seconds}s"


class GpuUtilisation(models.Model):
    """What Prometheus last said about one request's GPUs, over the window the last scan read: the busiest
    utilisation, the median, and the peak of framebuffer memory used against the memory its devices have."""

    request = models.OneToOneField("intake.GpuRequest", on_delete=models.CASCADE, related_name="gpu_utilisation")
    cluster = models.CharField(max_length=40)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    samples = models.PositiveIntegerField(help_text="evaluation steps with a value")
    peak_utilisation_percent = models.DecimalField(max_digits=6, decimal_places=2)
    median_utilisation_percent = models.DecimalField(max_digits=6, decimal_places=2)
    peak_memory_used_mib = models.PositiveIntegerField()
    memory_total_mib = models.PositiveIntegerField(help_text="FB used + FB free of one device (a MIG slice's own)")
    idle_since = models.DateTimeField(null=True, blank=True, help_text="every step since was below the threshold")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["request_id"]
        verbose_name, verbose_name_plural = "GPU utilisation", "GPU utilisations"

    def __str__(self) -> str:
        return f"#{self.request_id}: median {self.median_utilisation_percent}%, peak {self.peak_memory_used_mib} MiB"


class IdleEnd(models.TextChoices):
    ACTIVE = "active", "Busy again"
    RELEASED = "released", "Released by the portal"
    GONE = "gone", "Request ended"


class IdleAllocation(models.Model):
    """One idle episode of a request: from when its GPUs went idle until they were busy again, the portal released
    it, or it ended. `marked_until` is how far its time has been booked as `idle` in chargeback."""

    request = models.ForeignKey("intake.GpuRequest", on_delete=models.CASCADE, related_name="idle_allocations")
    cluster = models.CharField(max_length=40)
    workload_class = models.CharField(max_length=20)
    idle_since = models.DateTimeField()
    detected_at = models.DateTimeField()
    threshold_percent = models.DecimalField(max_digits=5, decimal_places=2)
    peak_utilisation_percent = models.DecimalField(max_digits=6, decimal_places=2)
    marked_until = models.DateTimeField(null=True, blank=True, help_text="idle GPU time booked up to here")
    notified_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=10, choices=IdleEnd.choices, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-idle_since", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request"], condition=Q(ended_at__isnull=True), name="%(app_label)s_%(class)s_one_open"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.request_id} idle since {self.idle_since:%Y-%m-%d %H:%M}"


class IdleScan(models.Model):
    """One scan of one cluster's running requests against its Prometheus: how it went and what it found."""

    class Status(models.TextChoices):
        OK = "ok", "Scanned"
        SKIPPED = "skipped", "Skipped (no prometheus_url)"
        FAILED = "failed", "Failed"

    cluster = models.CharField(max_length=40)
    scanned_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    message = models.TextField(blank=True)
    requests_read = models.PositiveIntegerField(default=0, help_text="running requests with GPU metrics")
    flagged = models.PositiveIntegerField(default=0)
    released = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-scanned_at", "-id"]
        indexes = [models.Index(fields=["cluster", "scanned_at"], name="chargeback_idlescan_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster} @ {self.scanned_at:%Y-%m-%d %H:%M:%S} ({self.status})"
