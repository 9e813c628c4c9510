"""HTTP shapes of the chargeback API."""
from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.fields import CharField, IntegerField

from provisioning.choices import Strategy

from portal.models import Team

from ..budgets import budget_forecast
from ..choices import GROUP_BY_CHOICES, REPORT_CATEGORIES, BudgetMode
from ..periods import month_error, period_error
from ..models import Adjustment, Budget, ClosedPeriod, HardwareCredit, RateCard, UsageCollection, UsageInterval

DEFAULT_GROUP_BY = "team,strategy,gpu_model"


class ReportQueryInputSerializer(serializers.Serializer):
    start = serializers.DateField(input_formats=["%Y-%m-%d"], help_text="first day, YYYY-MM-DD (00:00 UTC, included)")
    end = serializers.DateField(input_formats=["%Y-%m-%d"], help_text="day after the last, YYYY-MM-DD (excluded)")
    group_by = CharField(
        required=False, allow_blank=True, default=DEFAULT_GROUP_BY,
        help_text=f"comma-separated subset of: {', '.join(GROUP_BY_CHOICES)}; blank = totals",
    )
    team = CharField(required=False, help_text="only this team (slug)")
    cost_center = CharField(required=False)
    cluster = CharField(required=False)
    strategy = serializers.ChoiceField(choices=Strategy.values, required=False)
    gpu_model = CharField(required=False)
    request = IntegerField(required=False, min_value=1)
    format = serializers.ChoiceField(choices=["json", "csv"], required=False, default="json")

    def validate_group_by(self, value: str) -> list[str]:
        names = [name.strip() for name in value.split(",") if name.strip()]
        unknown = [name for name in names if name not in GROUP_BY_CHOICES]
        if unknown:
            raise serializers.ValidationError(
                f"Unknown grouping {', '.join(unknown)}; choose from {', '.join(GROUP_BY_CHOICES)}."
            )
        return names

    def validate(self, data):
        error = period_error(data["start"], data["end"], max_days=settings.CHARGEBACK_MAX_REPORT_DAYS)
        if error:
            raise serializers.ValidationError({"end": [error]})
        return data

    def filters(self) -> dict:
        return {k: self.validated_data[k] for k in ("team", "cost_center", "cluster", "strategy", "gpu_model", "request")
                if k in self.validated_data}


class ReportRowSerializer(serializers.Serializer):
    """One report line. Group columns appear only when grouped by them."""

    # Output only; a missing group column is left out (required=False), a None value is written as null.
    team = CharField(required=False)
    cost_center = CharField(required=False)
    cluster = CharField(required=False)
    strategy = CharField(required=False)
    gpu_model = CharField(required=False)
    mig_profile = CharField(required=False)
    request = IntegerField(required=False)
    request_name = CharField(required=False)
    month = CharField(required=False, help_text="YYYY-MM")
    day = CharField(required=False, help_text="YYYY-MM-DD")
    category = CharField(help_text=f"one of: {', '.join(REPORT_CATEGORIES)}")
    device_hours = serializers.DecimalField(max_digits=30, decimal_places=6)
    gpu_equivalent_hours = serializers.DecimalField(max_digits=30, decimal_places=6)
    cost = serializers.DecimalField(max_digits=30, decimal_places=2, allow_null=True,
                                    help_text="null when no rate card priced this time")
    currency = CharField(help_text="empty when unpriced")


class ReportCostSerializer(serializers.Serializer):
    currency = CharField()
    cost = serializers.DecimalField(max_digits=30, decimal_places=2)


class ReportTotalSerializer(serializers.Serializer):
    """The grand total of the rows: what a spreadsheet's sum of the CSV gives, to the cent."""

    device_hours = serializers.DecimalField(max_digits=30, decimal_places=6)
    gpu_equivalent_hours = serializers.DecimalField(max_digits=30, decimal_places=6)
    costs = ReportCostSerializer(many=True, help_text="one total per currency")
    unpriced_gpu_equivalent_hours = serializers.DecimalField(
        max_digits=30, decimal_places=6, help_text="the part of gpu_equivalent_hours no rate card priced")


class AllocationMismatchSerializer(serializers.Serializer):
    """A request the cluster allocated other devices than were approved: billed as allocated."""

    request = IntegerField()
    request_name = CharField()
    team = CharField(allow_null=True)
    approved_gpu_model = CharField()
    approved_mig_profile = CharField()
    approved_devices = IntegerField(allow_null=True)
    billed_gpu_model = CharField()
    billed_mig_profile = CharField()
    billed_devices = IntegerField()
    pods = IntegerField()


class ReportSerializer(serializers.Serializer):
    start = serializers.DateField()
    end = serializers.DateField()
    group_by = serializers.ListField(child=CharField())
    generated_at = serializers.DateTimeField()
    rows = ReportRowSerializer(many=True)
    total = ReportTotalSerializer(help_text="the grand total of the rows")
    allocation_mismatches = AllocationMismatchSerializer(many=True, help_text=(
        "requests whose pods the cluster allocated other devices than were approved in the period (DRA claims): "
        "their rows are billed as allocated"))


# The same choice set as the intake API's decisions, so the schema has one StrategyEnum.
STRATEGY = serializers.ChoiceField(choices=Strategy.values, read_only=True)


class RateCardSerializer(serializers.ModelSerializer):
    strategy = STRATEGY
    class Meta:
        model = RateCard
        fields = ["id", "gpu_model", "strategy", "price_per_equivalent_hour", "currency", "valid_from", "note"]
        read_only_fields = fields


class UsageIntervalSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    strategy = STRATEGY
    gpu_equivalents = serializers.SerializerMethodField(help_text="exact fraction, e.g. 1/7")
    flags = serializers.ListField(child=CharField(), read_only=True)

    class Meta:
        model = UsageInterval
        fields = ["id", "pod_uid", "namespace", "pod_name", "request", "team", "cost_center", "cluster", "strategy",
                  "gpu_model", "mig_profile", "devices", "gpu_equivalents", "annotated_equivalents", "flags",
                  "started_at", "ended_at", "end_source", "category", "is_demo", "source", "first_seen_at"]
        read_only_fields = fields

    def get_gpu_equivalents(self, obj) -> str:
        return str(obj.equivalents)


class ClosedPeriodSerializer(serializers.ModelSerializer):
    month = serializers.DateField(format="%Y-%m")
    closed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ClosedPeriod
        fields = ["month", "closed_by", "closed_at", "totals"]
        read_only_fields = fields


class ClosePeriodInputSerializer(serializers.Serializer):
    month = serializers.DateField(input_formats=["%Y-%m", "%Y-%m-%d"], help_text="YYYY-MM")


class AdjustmentSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    strategy = STRATEGY

    class Meta:
        model = Adjustment
        fields = ["id", "pod_uid", "request", "team", "strategy", "gpu_model", "category", "started_at", "ended_at",
                  "sign", "closed_month", "booked_at", "reason"]
        read_only_fields = fields


class UsageCollectionSerializer(serializers.ModelSerializer):
    class Meta:
        model = UsageCollection
        fields = ["id", "cluster", "listed_at", "complete", "status", "message", "source", "pods_seen",
                  "intervals_inserted", "intervals_updated", "intervals_vanished", "adjustments", "flagged",
                  "found_in_cluster", "pods_unreadable"]
        read_only_fields = fields


class BudgetSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    month = serializers.DateField(format="%Y-%m")

    class Meta:
        model = Budget
        fields = ["id", "team", "cost_center", "month", "gpu_hours", "amount", "currency", "thresholds", "mode", "note",
                  "created_at", "updated_at"]
        read_only_fields = fields


class CommitmentSerializer(serializers.Serializer):
    request_id = serializers.IntegerField()
    name = CharField()
    status = CharField()
    hours = serializers.DecimalField(max_digits=14, decimal_places=4, help_text="hours still to come this month")
    gpu_equivalent_hours = serializers.DecimalField(max_digits=14, decimal_places=4)
    cost = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True,
                                    help_text="null: no rate card in the budget's currency")
    basis = serializers.ChoiceField(choices=["lease", "observed", "expected_hours", "month_end", "overrun"],
                                    help_text="where the hours come from: until the lease ends; the median run of "
                                              "the workload class (or expected_hours when longer); the month's "
                                              "end; overrun: a run past its expected end, until its lease or the "
                                              "month ends")


class ForecastSerializer(serializers.Serializer):
    spent_gpu_hours = CharField()
    spent_cost = CharField()
    committed_gpu_hours = CharField(help_text="running work's remainder this month")
    committed_cost = CharField()
    pending_gpu_hours = CharField(help_text="requests awaiting approval")
    pending_cost = CharField()
    forecast_gpu_hours = CharField()
    forecast_cost = CharField()
    forecast_percent = serializers.IntegerField(help_text="the larger share of the budget's limits, in percent")
    over = serializers.BooleanField()
    words = CharField()
    running = CommitmentSerializer(many=True)
    pending = CommitmentSerializer(many=True)


class BudgetDetailSerializer(BudgetSerializer):
    forecast = serializers.SerializerMethodField()

    class Meta(BudgetSerializer.Meta):
        fields = [*BudgetSerializer.Meta.fields, "forecast"]
        read_only_fields = fields

    @extend_schema_field(ForecastSerializer)
    def get_forecast(self, obj):
        forecast = budget_forecast(budget=obj)
        data = {k: v for k, v in forecast.as_dict().items() if k in ForecastSerializer().fields}
        return ForecastSerializer({**data, "running": forecast.committed, "pending": forecast.pending}).data


class BudgetInputSerializer(serializers.Serializer):
    team = serializers.SlugRelatedField(slug_field="slug", queryset=Team.objects.all())
    cost_center = CharField(max_length=64, required=False, allow_blank=True, default="",
                            help_text="empty: the whole team")
    month = serializers.DateField(input_formats=["%Y-%m", "%Y-%m-%d"], help_text="YYYY-MM")
    gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=2, min_value=0, required=False,
                                         allow_null=True, help_text="GPU-equivalent-hours")
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, min_value=0, required=False, allow_null=True)
    currency = CharField(max_length=3, min_length=3, required=False, default="EUR")
    thresholds = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=1000), required=False,
                                       min_length=1, max_length=10, help_text="percentages, default [80, 100]")
    mode = serializers.ChoiceField(choices=BudgetMode.choices, required=False, default=BudgetMode.NOTIFY)
    note = CharField(max_length=200, required=False, allow_blank=True, default="")

    def validate_currency(self, value: str) -> str:
        if not value.isalpha() or not value.isupper():
            raise serializers.ValidationError("An ISO 4217 currency code such as EUR or USD.")
        return value

    def validate_month(self, value):
        error = month_error(value)
        if error:
            raise serializers.ValidationError(error)
        return value


class UtilisationObservedSerializer(serializers.Serializer):
    window_start = serializers.DateTimeField()
    window_end = serializers.DateTimeField()
    samples = serializers.IntegerField()
    peak_utilisation_percent = serializers.DecimalField(max_digits=6, decimal_places=2)
    median_utilisation_percent = serializers.DecimalField(max_digits=6, decimal_places=2)
    peak_memory_used_mib = serializers.IntegerField()
    memory_total_mib = serializers.IntegerField(help_text="of one device (a MIG slice's own memory)")


class RightsizingSerializer(serializers.Serializer):
    """A request's right-sizing suggestion from what its GPUs did (chargeback.idle.selectors.rightsizing_get)."""

    available = serializers.BooleanField(help_text="false: no measurement yet, or nothing smaller would do")
    why = serializers.CharField(required=False, help_text="why there is no suggestion")
    text = serializers.CharField(required=False, help_text='e.g. "peak 6 GB of 80 GB, median utilisation 11%: ..."')
    mig_profile = serializers.CharField(required=False)
    gpu_equivalents = serializers.CharField(required=False, help_text="of the suggested slice")
    monthly_saving = serializers.DecimalField(max_digits=14, decimal_places=0, required=False, allow_null=True,
                                              help_text="per 730-hour month at today's rate cards; null: unpriced")
    currency = serializers.CharField(required=False, allow_blank=True)
    observed = UtilisationObservedSerializer(required=False)
    rerequest_url = serializers.CharField(required=False, help_text="the questionnaire, pre-filled")


class HardwareCreditSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    strategy = STRATEGY
    reversed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = HardwareCredit
        fields = ["id", "pod_uid", "namespace", "pod_name", "request", "team", "cost_center", "cluster", "strategy",
                  "gpu_model", "mig_profile", "devices", "started_at", "ended_at", "reason", "evidence", "created_at",
                  "reversed_at", "reversed_by", "reversal_reason"]
        read_only_fields = fields
