"""Metering and chargeback: GPU usage intervals per pod, effective-dated rate cards, closed months and the
adjustment lines that carry late data into the next open month.

GPU equivalents are stored as an exact fraction (`equivalents_num / equivalents_den`): a 1g slice of a 7-slice
GPU is 1/7, which no decimal column holds exactly. `gpu_equivalents` is a generated decimal for reading.
"""
from __future__ import annotations

from fractions import Fraction

from django.conf import settings
from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import ArrayField, DateTimeRangeField, RangeOperators
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Func, Q
from django.db.models.functions import Cast

from portal.models import Team
from provisioning.choices import Strategy

from .choices import DEFAULT_BUDGET_THRESHOLDS, BudgetMode, Category, CollectionStatus, EndSource

currency_validator = RegexValidator(r"^[A-Z]{3}$", "An ISO 4217 currency code such as EUR or USD.")


class TsTzRange(Func):
    """tstzrange(start, end): a NULL end is an unbounded (still open) range."""

    function = "tstzrange"
    output_field = DateTimeRangeField()


# What the report reads of an open interval (chargeback.report_sql, open_groups).
OPEN_REPORT_COLUMNS = ["team_id", "cost_center", "cluster", "strategy", "gpu_model", "mig_profile", "request_id",
                       "category", "devices", "equivalents_num", "equivalents_den"]


class UsageInterval(models.Model):
    """One pod's GPU time (or one segment of it), from its first container start to its last container finish.

    `ended_at` NULL means the pod still holds its GPUs; reports close it at their "now" without storing that.
    A pod normally has one interval; a waste window splits it into segments that never overlap (enforced by
    the exclusion constraint)."""

    # "C" collation: byte comparisons, several times cheaper than a locale's inside the GiST exclusion index.
    pod_uid = models.CharField(max_length=64, db_collation="C")
    namespace = models.CharField(max_length=63, blank=True)
    pod_name = models.CharField(max_length=253, blank=True)
    request = models.ForeignKey(
        "intake.GpuRequest", null=True, blank=True, on_delete=models.PROTECT, related_name="usage_intervals"
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.PROTECT, related_name="usage_intervals",
                             db_index=False)  # (team, started_at) below serves it
    cost_center = models.CharField(max_length=64, blank=True, help_text="the team's cost centre when ingested")
    cluster = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    gpu_model = models.CharField(max_length=40)
    mig_profile = models.CharField(max_length=40, blank=True)
    devices = models.PositiveIntegerField(help_text="GPUs, MIG devices or time-sliced replicas the pod holds")
    equivalents_num = models.PositiveBigIntegerField(validators=[MinValueValidator(1)])
    equivalents_den = models.PositiveBigIntegerField(validators=[MinValueValidator(1)])
    gpu_equivalents = models.GeneratedField(
        expression=Cast(F("equivalents_num"), models.DecimalField(max_digits=30, decimal_places=12))
        / Cast(F("equivalents_den"), models.DecimalField(max_digits=30, decimal_places=12)),
        output_field=models.DecimalField(max_digits=30, decimal_places=12),
        db_persist=True,
        help_text="equivalents_num / equivalents_den, for reading; sums use the exact fraction",
    )
    annotated_equivalents = models.CharField(max_length=40, blank=True, help_text="what the pod annotation said")
    flags = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    end_source = models.CharField(max_length=20, choices=EndSource.choices, blank=True, default=EndSource.OPEN)
    category = models.CharField(max_length=10, choices=Category.choices, default=Category.USAGE)
    is_demo = models.BooleanField(default=False, help_text="synthetic demo data (load_demo)")
    source = models.CharField(max_length=40, default="collector", help_text="what ingested it")
    first_seen_at = models.DateTimeField(help_text="when the pod list that first showed it was read")
    ingested_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["started_at", "pod_uid"]
        constraints = [
            models.UniqueConstraint(fields=["pod_uid", "started_at"], name="%(app_label)s_%(class)s_unique_pod_start"),
            ExclusionConstraint(
                name="%(app_label)s_%(class)s_no_overlap_per_pod",
                expressions=[
                    (F("pod_uid"), RangeOperators.EQUAL),
                    (TsTzRange(F("started_at"), F("ended_at")), RangeOperators.OVERLAPS),
                ],
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=F("started_at")),
                name="%(app_label)s_%(class)s_ends_after_start",
            ),
            models.CheckConstraint(
                condition=Q(devices__gte=1) & Q(equivalents_num__gte=1) & Q(equivalents_den__gte=1),
                name="%(app_label)s_%(class)s_positive_share",
            ),
            models.CheckConstraint(
                condition=Q(category__in=Category.values), name="%(app_label)s_%(class)s_category_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["cluster"], condition=Q(ended_at__isnull=True), name="chargeback_interval_open"),
            models.Index(fields=["team", "started_at"], name="chargeback_interval_team"),
            # The report reads the open intervals (rollups hold the ended ones) from this index alone.
            models.Index(fields=["started_at"], include=OPEN_REPORT_COLUMNS, condition=Q(ended_at__isnull=True),
                         name="chargeback_interval_open_cover"),
            # "Is there demo data in the period?" on every finance page: without it, a scan of every interval.
            models.Index(fields=["started_at"], condition=Q(is_demo=True), name="chargeback_interval_demo"),
            # The FOCUS export's "allocated other than approved" mark, without a scan of every interval.
            models.Index(fields=["request"], condition=Q(flags__contains=["allocation_mismatch"]),
                         name="chargeback_interval_mismatch"),
        ]

    def __str__(self) -> str:
        return f"{self.pod_name or self.pod_uid} {self.started_at:%Y-%m-%d %H:%M:%S}–{self.ended_at or 'open'}"

    @property
    def equivalents(self) -> Fraction:
        return Fraction(self.equivalents_num, self.equivalents_den)


class RateCard(models.Model):
    """Price of one GPU-equivalent-hour for a GPU model and sharing strategy, from `valid_from` (00:00 UTC)
    until the next card of the same model and strategy."""

    gpu_model = models.CharField(max_length=40, help_text="catalogue key, e.g. H200-141GB")
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    price_per_equivalent_hour = models.DecimalField(
        max_digits=12, decimal_places=4, validators=[MinValueValidator(0)]
    )
    currency = models.CharField(max_length=3, validators=[currency_validator], default="EUR")
    valid_from = models.DateField(help_text="in force from 00:00 UTC on this day until the next card")
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["gpu_model", "strategy", "valid_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["gpu_model", "strategy", "valid_from"], name="%(app_label)s_%(class)s_unique_model_strategy_from"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_model} {self.strategy} {self.price_per_equivalent_hour} {self.currency} from {self.valid_from}"


class ClosedPeriod(models.Model):
    """A closed month: its report lines are frozen. Months close in order; `totals` is what they were."""

    month = models.DateField(unique=True, help_text="first day of the month")
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    closed_at = models.DateTimeField(auto_now_add=True)
    totals = models.JSONField(default=list, blank=True, help_text="per currency and category, when closed")
    lines_frozen = models.BooleanField(default=False, help_text="its report lines are stored (ClosedLine)")

    class Meta:
        ordering = ["-month"]
        constraints = [
            models.CheckConstraint(
                condition=Q(month__day=1), name="%(app_label)s_%(class)s_first_of_month"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} (closed)"


class Adjustment(models.Model):
    """Late data for a closed month. The stretch [started_at, ended_at) of the closed month gained (sign +1)
    or lost (sign -1) GPU time after the month closed. Reports cancel it inside the closed month, so that month
    never changes, and book it as an adjustment line at `booked_at`, the start of the next open month."""

    interval = models.ForeignKey(UsageInterval, on_delete=models.PROTECT, related_name="adjustments")
    pod_uid = models.CharField(max_length=64)
    request = models.ForeignKey(
        "intake.GpuRequest", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    cost_center = models.CharField(max_length=64, blank=True)
    cluster = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    gpu_model = models.CharField(max_length=40)
    mig_profile = models.CharField(max_length=40, blank=True)
    devices = models.PositiveIntegerField()
    equivalents_num = models.PositiveBigIntegerField()
    equivalents_den = models.PositiveBigIntegerField()
    category = models.CharField(max_length=10, choices=Category.choices)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    sign = models.SmallIntegerField(choices=[(1, "added"), (-1, "removed")])
    closed_month = models.DateField(help_text="the closed month this corrects")
    booked_at = models.DateTimeField(help_text="start of the open month the adjustment line is booked in")
    reason = models.CharField(max_length=200)
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["booked_at", "started_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(ended_at__gt=F("started_at")), name="%(app_label)s_%(class)s_non_empty"),
            models.CheckConstraint(condition=Q(sign__in=[1, -1]), name="%(app_label)s_%(class)s_sign_valid"),
            models.CheckConstraint(condition=Q(booked_at__gte=F("ended_at")), name="%(app_label)s_%(class)s_booked_later"),
        ]
        indexes = [models.Index(fields=["booked_at"], name="chargeback_adjustment_booked")]

    def __str__(self) -> str:
        return f"{'+' if self.sign > 0 else '-'}{self.pod_uid} {self.started_at}–{self.ended_at} -> {self.booked_at:%Y-%m}"


class UsageCollection(models.Model):
    """One ingestion pass over one cluster's pods: when the list was read and what it changed."""

    cluster = models.CharField(max_length=40)
    listed_at = models.DateTimeField(help_text="when the pod list was read ('now' of the pass)")
    complete = models.BooleanField(default=True, help_text="the list held every portal pod of the cluster")
    status = models.CharField(max_length=10, choices=CollectionStatus.choices, default=CollectionStatus.OK)
    message = models.TextField(blank=True)
    source = models.CharField(max_length=40, default="collector")
    pods_seen = models.PositiveIntegerField(default=0)
    intervals_inserted = models.PositiveIntegerField(default=0)
    intervals_updated = models.PositiveIntegerField(default=0)
    intervals_vanished = models.PositiveIntegerField(default=0)
    adjustments = models.PositiveIntegerField(default=0)
    flagged = models.PositiveIntegerField(default=0)
    found_in_cluster = models.PositiveIntegerField(
        default=0, help_text="pods not made by an object the portal applied: billed to their namespace's team")
    pods_unreadable = models.PositiveIntegerField(
        default=0, help_text="pods skipped because they could not be read (the message says why)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-listed_at", "-id"]
        indexes = [models.Index(fields=["cluster", "listed_at"], name="chargeback_collection_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster} @ {self.listed_at:%Y-%m-%d %H:%M:%S} ({self.status})"


class StallWaste(models.Model):
    """A stalled gang's burnt time, turned into `waste` lines once the stall is over and the usage collection has
    read the cluster after it (so the running pods' intervals are known)."""

    stall = models.OneToOneField("provisioning.GangStall", on_delete=models.CASCADE, related_name="waste")
    intervals_split = models.PositiveIntegerField(default=0)
    marked_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"waste of stall {self.stall_id}"


class UsageRollup(models.Model):
    """Ended intervals summed per line of the report (every groupable dimension x UTC day x category) and GPU
    equivalents denominator, in exact integers: microseconds x devices and microseconds x equivalents_num.
    Kept by the database (statement triggers on chargeback_usageinterval, migration 0005) in the same
    transaction as each interval write, so no write path can forget it. Prices are applied when read: a rate
    card starts at 00:00 UTC, so one day has one rate."""

    team_id = models.BigIntegerField(null=True)
    cost_center = models.CharField(max_length=64)
    cluster = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20)
    gpu_model = models.CharField(max_length=40)
    mig_profile = models.CharField(max_length=40)
    request_id = models.BigIntegerField(null=True)
    category = models.CharField(max_length=10)
    day = models.DateTimeField(help_text="00:00 UTC of the day")
    den = models.BigIntegerField()
    device_us = models.DecimalField(max_digits=38, decimal_places=0)
    eq_us_num = models.DecimalField(max_digits=38, decimal_places=0, help_text="divide by den for equivalent-us")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["day", "team_id", "cost_center", "cluster", "strategy", "gpu_model", "mig_profile",
                        "request_id", "category", "den"],
                nulls_distinct=False, name="%(app_label)s_%(class)s_one_per_line",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} {self.gpu_model} {self.strategy} request {self.request_id}"


class ClosedLine(models.Model):
    """A closed month's report lines as they were when it closed (see chargeback.report_sql): the report reads
    a closed month from here, never again from its intervals."""

    period = models.ForeignKey(ClosedPeriod, on_delete=models.PROTECT, related_name="lines")
    team_id = models.BigIntegerField(null=True)
    cost_center = models.CharField(max_length=64)
    cluster = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20)
    gpu_model = models.CharField(max_length=40)
    mig_profile = models.CharField(max_length=40)
    request_id = models.BigIntegerField(null=True)
    day = models.DateTimeField()
    category = models.CharField(max_length=20)
    currency = models.CharField(max_length=3, blank=True)
    segment = models.DateTimeField(null=True, help_text="start of the rate card's segment (NULL: no card)")
    device_seconds = models.DecimalField(max_digits=40, decimal_places=6)
    gpu_equivalent_seconds = models.DecimalField(max_digits=60, decimal_places=24)
    cost = models.DecimalField(max_digits=30, decimal_places=2, null=True)

    class Meta:
        indexes = [models.Index(fields=["day"], name="chargeback_closedline_day")]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} {self.gpu_model} {self.category} {self.cost}"


def _default_thresholds() -> list[int]:
    return list(DEFAULT_BUDGET_THRESHOLDS)


class Budget(models.Model):
    """A team's (or one of its cost centres') spending limit for one calendar month (UTC), in GPU-equivalent-hours
    and/or money; the forecast is held against it (chargeback.budgets), and each threshold crossed is notified once."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="budgets")
    cost_center = models.CharField(max_length=64, blank=True, help_text="empty: the whole team")
    month = models.DateField(help_text="the first day of the month the budget is for")
    gpu_hours = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True,
                                    validators=[MinValueValidator(0)], help_text="GPU-equivalent-hours; empty: no limit")
    amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True,
                                 validators=[MinValueValidator(0)], help_text="money; empty: no limit")
    currency = models.CharField(max_length=3, validators=[currency_validator], default="EUR")
    thresholds = ArrayField(models.PositiveSmallIntegerField(), default=_default_thresholds,
                            help_text="percentages of the budget notified once each, e.g. 80,100")
    mode = models.CharField(max_length=20, choices=BudgetMode.choices, default=BudgetMode.NOTIFY)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-month", "team__slug", "cost_center"]
        constraints = [
            models.UniqueConstraint(fields=["team", "cost_center", "month"],
                                    name="%(app_label)s_%(class)s_unique_team_cost_center_month"),
            models.CheckConstraint(condition=Q(gpu_hours__isnull=False) | Q(amount__isnull=False),
                                   name="%(app_label)s_%(class)s_has_a_limit"),
            models.CheckConstraint(condition=Q(month__day=1), name="%(app_label)s_%(class)s_month_start"),
        ]

    def __str__(self) -> str:
        where = f"{self.team.slug}/{self.cost_center}" if self.cost_center else self.team.slug
        return f"{where} {self.month:%Y-%m}"


# Idle GPUs (chargeback/idle/): defined there, registered with the app here.
from .idle.models import GpuUtilisation, IdleAllocation, IdleEnd, IdlePolicy, IdleScan  # noqa: E402,F401
# Hardware-fault credits (chargeback/credits/): defined there, registered with the app here.
from .credits.models import HardwareCredit  # noqa: E402,F401
