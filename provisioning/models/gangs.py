"""Status reconciliation and stalled gangs: gang policies, stalls (their notices are portal notices) and each
cluster's reconciliation state. provisioning/reconcile/ holds the rules (pure) and the services that apply them."""
from __future__ import annotations

from decimal import Decimal

from django.contrib.contenttypes.fields import GenericRelation
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q

from intake.choices import WorkloadClass
from ..choices import NotificationKind, ReconcileStatus, StallEnd
from .clusters import Cluster


class GangPolicy(models.Model):
    """How long a gang of one workload class may stay partial (some pods running, others Pending) before its request
    is `stalled`, and how long it may stay stalled before the portal releases it. Edited by the platform team."""

    workload_class = models.CharField(max_length=20, choices=WorkloadClass.choices, unique=True)
    stall_after_seconds = models.PositiveIntegerField(
        validators=[MinValueValidator(60)], help_text="partial gang for this long -> stalled (and notified)"
    )
    release_after_seconds = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(60)],
        help_text="stalled for this long -> objects deleted and request failed; blank: never",
    )  # fmt: skip
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workload_class"]
        verbose_name_plural = "gang policies"

    def __str__(self) -> str:
        return f"{self.workload_class}: stall after {self.stall_after_seconds}s"


def stall_notice_key(stall_id: int, kind: str) -> str:
    """The portal notice key of one stall event (`NotificationKind`): each is queued once per channel."""
    return f"gang-stall:{stall_id}:{kind}"


class GangStallQuerySet(models.QuerySet):
    def with_burnt(self, at):
        """Annotate `burnt_gpu_seconds`: GPU-equivalent-seconds burnt by the running pods while stalled, up to the
        stall's end or `at` for stalls still open. Exact (numeric), in SQL, for reports."""
        from django.db.models import DecimalField, ExpressionWrapper, F, Value
        from django.db.models.functions import Coalesce, Extract

        seconds = Extract(Coalesce(F("ended_at"), Value(at)) - F("segment_started_at"), "epoch")
        burnt = F("burnt_before_segment") + F("gpu_equivalents_running") * seconds
        return self.annotate(burnt_gpu_seconds=ExpressionWrapper(
            burnt, output_field=DecimalField(max_digits=24, decimal_places=6)))


class GangStall(models.Model):
    """One stall of a request's gang: from when its running pods began waiting for the pending ones to when the
    gang ran whole, finished, failed or was released.

    Burnt GPU-equivalent-seconds = `burnt_before_segment` + `gpu_equivalents_running` x (end - `segment_started_at`).
    A new segment starts whenever the set of running pods changes during the stall, so the figure is exact:
    each stretch is priced with the equivalents that were running during it."""

    request = models.ForeignKey("intake.GpuRequest", on_delete=models.CASCADE, related_name="gang_stalls")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="gang_stalls")
    workload_class = models.CharField(max_length=20)
    started_at = models.DateTimeField(help_text="when the running pods began waiting for the pending ones")
    detected_at = models.DateTimeField(help_text="when the portal declared the request stalled")
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=20, choices=StallEnd.choices, blank=True)
    running_pods = models.PositiveIntegerField()
    pending_pods = models.PositiveIntegerField()
    gpu_equivalents_running = models.DecimalField(max_digits=12, decimal_places=6)
    segment_started_at = models.DateTimeField()
    burnt_before_segment = models.DecimalField(
        max_digits=24, decimal_places=6, default=0, help_text="GPU-equivalent-seconds of the earlier segments"
    )
    pending_detail = models.JSONField(default=list, blank=True, help_text="the pending pods and why, last seen")
    notified_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Its notices (stalled, released), each by e-mail and webhook: portal notices about this stall.
    notices = GenericRelation("portal.Notice", content_type_field="about_type", object_id_field="about_id",
                              related_query_name="gang_stall")

    objects = GangStallQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request"], condition=Q(ended_at__isnull=True), name="%(app_label)s_%(class)s_one_open"
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=F("segment_started_at")),
                name="%(app_label)s_%(class)s_ends_after_start",
            ),
        ]
        indexes = [models.Index(fields=["cluster", "ended_at"])]

    def __str__(self) -> str:
        return f"stall of #{self.request_id} from {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def is_open(self) -> bool:
        return self.ended_at is None

    def burnt_gpu_seconds(self, at=None) -> Decimal:
        """The same figure as `with_burnt()`, in Python (exact: Decimal seconds with microseconds)."""
        from django.utils import timezone

        end = self.ended_at or at or timezone.now()
        delta = end - self.segment_started_at
        seconds = Decimal(delta.days * 86400 + delta.seconds) + Decimal(delta.microseconds) / Decimal(1_000_000)
        return Decimal(self.burnt_before_segment) + Decimal(self.gpu_equivalents_running) * seconds

    def burnt_gpu_hours(self, at=None) -> Decimal:
        return (self.burnt_gpu_seconds(at) / Decimal(3600)).quantize(Decimal("0.000001"))

    @property
    def stalled_notices(self) -> list:
        """The notices that it stalled, in the order they were queued (from `notices`, prefetched where a request is
        shown)."""
        key = stall_notice_key(self.pk, NotificationKind.STALLED)
        return sorted((notice for notice in self.notices.all() if notice.key == key), key=lambda notice: notice.pk)

    @property
    def burnt_gpu_seconds_now(self) -> Decimal:
        return self.burnt_gpu_seconds()

    @property
    def burnt_gpu_hours_now(self) -> Decimal:
        return self.burnt_gpu_hours()


class ClusterReconcileState(models.Model):
    """The status reconciliation of one cluster: where its pod watch stands and how the last run went."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="reconcile_state")
    status = models.CharField(max_length=10, choices=ReconcileStatus.choices, blank=True)
    message = models.TextField(blank=True)
    resource_version = models.CharField(max_length=64, blank=True, help_text="where the next watch resumes")
    listed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pods = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    transitions = models.PositiveIntegerField(default=0, help_text="status changes in the last run")
    events_recorded = models.PositiveIntegerField(default=0, help_text="new request events in the last run")
    watch_events = models.PositiveIntegerField(default=0)
    cycle_ms = models.PositiveIntegerField(default=0, help_text="the last full cycle, in milliseconds")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster__name"]

    def __str__(self) -> str:
        return f"reconciliation of {self.cluster}: {self.status or 'never run'}"
