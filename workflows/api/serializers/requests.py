"""A request as the API shows it: the whole record (detail, create, transitions) and the list's brief form."""
from __future__ import annotations

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from portal.api.fields import CharField, DateTimeField, IntegerField
from portal.api.rows import FlatRowSerializer

from intake.choices import EventKind, RequestStatus
from intake.models import GpuRequest, RequestEvent
from .answers import AnswersSerializer
from .decision import STRATEGY_CHOICES, DecisionSerializer


# The model's times as the API's other times (portal.api.fields.DateTimeField).
_FIELD_MAPPING = {**serializers.ModelSerializer.serializer_field_mapping, models.DateTimeField: DateTimeField}


class RequestEventSerializer(serializers.ModelSerializer):
    serializer_field_mapping = _FIELD_MAPPING
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)
    kind = serializers.ChoiceField(choices=EventKind.choices, read_only=True)

    class Meta:
        model = RequestEvent
        fields = ["kind", "actor", "from_status", "to_status", "comment", "reason", "at"]


class AppliedObjectSerializer(serializers.Serializer):
    api_version = CharField()
    kind = CharField()
    namespace = CharField()
    name = CharField()
    uid = CharField()
    applied_at = DateTimeField()
    deleted_at = DateTimeField(allow_null=True)


class ProvisioningJobSerializer(serializers.Serializer):
    kind = CharField()
    cluster = CharField(source="cluster.name")
    status = CharField()
    attempts = IntegerField()
    message = CharField()
    started_at = DateTimeField(allow_null=True)
    finished_at = DateTimeField(allow_null=True)


# --- status reconciliation (reconcile) --------------------------------------------------------------------------


class PendingPodSerializer(serializers.Serializer):
    pod = CharField()
    since = DateTimeField(allow_null=True)
    reason = CharField(help_text="e.g. Unschedulable, ImagePullBackOff")
    text = CharField(help_text="why it is pending, in plain words (the scheduler's message)")


class GangStallSerializer(serializers.Serializer):
    started_at = DateTimeField(help_text="when the running pods began waiting for the pending ones")
    detected_at = DateTimeField(help_text="when the portal declared the request stalled")
    ended_at = DateTimeField(allow_null=True)
    end_reason = CharField(help_text="recovered, completed, failed, released, cancelled; empty while open")
    running_pods = IntegerField()
    pending_pods = IntegerField()
    gpu_equivalents_running = serializers.DecimalField(max_digits=12, decimal_places=6)
    burnt_gpu_equivalent_seconds = serializers.SerializerMethodField(
        help_text="GPU-equivalents of the running pods x stalled time, exact; up to now while the stall is open"
    )
    burnt_gpu_hours = serializers.SerializerMethodField()
    pending = PendingPodSerializer(source="pending_detail", many=True)
    notified_at = DateTimeField(allow_null=True)
    released_at = DateTimeField(allow_null=True)

    def _now(self):
        from django.utils import timezone

        return self.context.get("now") or timezone.now()  # one instant for the whole response

    @extend_schema_field(serializers.DecimalField(max_digits=24, decimal_places=6))
    def get_burnt_gpu_equivalent_seconds(self, obj):
        from decimal import Decimal

        return f"{obj.burnt_gpu_seconds(self._now()).quantize(Decimal('0.000001')):f}"

    @extend_schema_field(serializers.DecimalField(max_digits=24, decimal_places=6))
    def get_burnt_gpu_hours(self, obj):
        return f"{obj.burnt_gpu_hours(self._now()):f}"


class RequestSerializer(serializers.ModelSerializer):
    serializer_field_mapping = _FIELD_MAPPING
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    status = serializers.ChoiceField(choices=RequestStatus.choices, read_only=True)
    answers = AnswersSerializer(read_only=True)
    decision = DecisionSerializer(read_only=True)
    policy_version = serializers.SlugRelatedField(slug_field="number", read_only=True)
    events = RequestEventSerializer(many=True, read_only=True)
    provisioning = ProvisioningJobSerializer(source="provisioning_jobs", many=True, read_only=True)
    objects = AppliedObjectSerializer(source="applied_objects", many=True, read_only=True)
    # --- status reconciliation (reconcile) ---
    stall = serializers.SerializerMethodField(help_text="the gang's current or most recent stall; null if none")
    burnt_gpu_hours = serializers.SerializerMethodField(
        help_text="GPU-hours burnt by running pods waiting for the rest of their gang, over all stalls"
    )
    lease_expires_at = DateTimeField(read_only=True, allow_null=True,
                                     help_text="when the grant is taken down; null: no lease (yet)")
    lease_seconds_left = serializers.SerializerMethodField(help_text="seconds until the lease ends; null: no lease")

    def _now(self):
        from django.utils import timezone

        return self.context.setdefault("now", timezone.now())  # one instant for the whole response

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_lease_seconds_left(self, obj):
        if obj.lease_expires_at is None:
            return None
        return max(0, int((obj.lease_expires_at - self._now()).total_seconds()))

    @extend_schema_field(GangStallSerializer(allow_null=True))
    def get_stall(self, obj):
        stalls = list(obj.gang_stalls.all())  # prefetched by request_list, newest first
        return GangStallSerializer(stalls[0], context={"now": self._now()}).data if stalls else None

    @extend_schema_field(serializers.DecimalField(max_digits=24, decimal_places=6))
    def get_burnt_gpu_hours(self, obj):
        from decimal import Decimal

        total = sum((stall.burnt_gpu_seconds(self._now()) for stall in obj.gang_stalls.all()), Decimal(0))
        return f"{(total / Decimal(3600)).quantize(Decimal('0.000001')):f}"

    class Meta:
        model = GpuRequest
        fields = [
            "id",
            "name",
            "team",
            "status",
            "origin",
            "workload_class",
            "strategy",
            "answers",
            "defaulted_answers",
            "decision",
            "policy_version",
            "requested_by",
            "created_at",
            "updated_at",
            "events",
            "provisioning",
            "objects",
            "stall",
            "burnt_gpu_hours",
            "lease_expires_at",
            "lease_seconds_left",
        ]
        read_only_fields = fields


# Serializes the rows of intake.selectors.request_list_rows (flat dicts, portal.api.rows).
class RequestListSerializer(FlatRowSerializer):
    """A request as a list shows it; the whole record is at its detail URL. With `?expand=decision` the list
    carries each decision too (the view passes `expand_decision`); otherwise the field is left out, not null."""

    id = IntegerField(read_only=True)
    name = CharField(read_only=True)
    team = CharField(source="team_slug", read_only=True)
    status = serializers.ChoiceField(choices=RequestStatus.choices, read_only=True)
    strategy = serializers.ChoiceField(choices=STRATEGY_CHOICES, read_only=True)
    gpu_model = CharField(read_only=True, help_text="the GPU model decided, e.g. H200-141GB")
    mig_profile = CharField(read_only=True, allow_null=True, help_text="the MIG profile; null if none")
    created_at = DateTimeField(read_only=True)
    updated_at = DateTimeField(read_only=True)
    # Not read-only, so that the schema marks it optional: it is there only with ?expand=decision.
    decision = DecisionSerializer(required=False, help_text="only with ?expand=decision")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.context.get("expand_decision"):
            self.fields.pop("decision")


class _QueryChoiceField(serializers.ChoiceField):
    """A choice in the query string where an empty value is a wrong choice: DRF reads `?x=` from a QueryDict as
    "not given", which would answer 200 to a value the schema does not allow."""

    def get_value(self, dictionary):
        return dictionary.get(self.field_name, empty)


class RequestListQuerySerializer(serializers.Serializer):
    expand = _QueryChoiceField(choices=["decision"], required=False,
                               help_text="decision: each request's decision in the list too")
