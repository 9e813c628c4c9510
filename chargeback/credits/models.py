"""A hardware-fault credit: the last run of a pod that failed while one of its devices was marked unhealthy, given
back as a line of its own (category `credit`) beside the usage it credits, until finance reverses it."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from portal.models import Team
from provisioning.choices import Strategy


class HardwareCredit(models.Model):
    """The credited run [started_at, ended_at) with the shape of the interval it credits, why (`reason`, the
    evidence as read), and when it was recorded and reversed.

    Closed months stay as they were: time already frozen when the credit is recorded (before `created_horizon`)
    is booked as one line at the start of the first open month; a reversal takes the credit's lines back where
    they were still open, and books a `credit_reversal` line at the first open month (`reversed_horizon`) for
    what was already frozen (chargeback.report_sql)."""

    interval = models.ForeignKey("chargeback.UsageInterval", on_delete=models.PROTECT, related_name="credits")
    pod_uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63, blank=True)
    pod_name = models.CharField(max_length=253, blank=True)
    request = models.ForeignKey("intake.GpuRequest", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="+")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    cost_center = models.CharField(max_length=64, blank=True)
    cluster = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    gpu_model = models.CharField(max_length=40)
    mig_profile = models.CharField(max_length=40, blank=True)
    devices = models.PositiveIntegerField()
    equivalents_num = models.PositiveBigIntegerField()
    equivalents_den = models.PositiveBigIntegerField()
    started_at = models.DateTimeField(help_text="start of the pod's last run")
    ended_at = models.DateTimeField(help_text="when it failed")
    reason = models.CharField(max_length=300, help_text="why, in plain words")
    evidence = models.JSONField(default=list, blank=True, help_text="what the cluster said about the devices")
    created_horizon = models.DateTimeField(null=True, blank=True,
                                           help_text="start of the first open month when recorded (None: none closed)")
    created_at = models.DateTimeField(auto_now_add=True)
    reversed_at = models.DateTimeField(null=True, blank=True)
    reversed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+")
    reversal_reason = models.CharField(max_length=200, blank=True)
    reversed_horizon = models.DateTimeField(null=True, blank=True,
                                            help_text="start of the first open month when reversed")

    class Meta:
        ordering = ["-ended_at", "pod_uid"]
        constraints = [
            models.UniqueConstraint(fields=["pod_uid", "started_at"], name="%(app_label)s_%(class)s_one_per_run"),
            models.CheckConstraint(condition=Q(ended_at__gt=F("started_at")), name="%(app_label)s_%(class)s_non_empty"),
            models.CheckConstraint(condition=Q(reversed_at__isnull=True) | ~Q(reversal_reason=""),
                                   name="%(app_label)s_%(class)s_reversal_says_why"),
        ]
        indexes = [models.Index(fields=["started_at"], name="chargeback_credit_started"),
                   models.Index(fields=["created_horizon"], name="chargeback_credit_booked"),
                   models.Index(fields=["reversed_horizon"], name="chargeback_credit_reversal")]

    def __str__(self) -> str:
        state = " (reversed)" if self.reversed_at else ""
        return f"credit {self.pod_name or self.pod_uid} {self.started_at:%Y-%m-%d %H:%M}–{self.ended_at:%H:%M}{state}"
