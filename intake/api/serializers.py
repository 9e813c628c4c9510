"""HTTP shapes of the intake API. Validation of answers is the questionnaire's (intake.answers); these
serializers only describe and carry it."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.fields import CharField, IntegerField
from rest_framework.fields import empty

from portal.models import Team, slug_validator
from gpu.vocabulary import STRATEGIES

from ..answers import AnswersInvalid, normalise_answers
from ..choices import EventKind, FabricIsolation, MemoryIsolation, PolicyStatus, ReasonSource, RequestStatus, RuleKind
from ..models import GpuRequest, PolicyVersion, RequestEvent, Rule
from ..questionnaire import QUESTIONS, Question, openapi_schema
from ..services import request_rights_denied

STRATEGY_CHOICES = list(STRATEGIES)


def _field_for(question: Question) -> serializers.Field:
    common = {"required": question.required, "help_text": question.help, "label": question.label}
    if not question.required:
        common["allow_null"] = True
    if question.kind == "choice":
        return serializers.ChoiceField(choices=[o.value for o in question.options], **common)
    if question.kind == "integer":
        return IntegerField(min_value=question.minimum, max_value=question.maximum, **common)
    if question.kind == "number":
        return serializers.FloatField(min_value=question.minimum, max_value=question.maximum, **common)
    if question.kind == "image":
        return CharField(max_length=question.max_length, **common)
    return serializers.ListField(
        child=CharField(max_length=question.max_length, allow_blank=True),
        max_length=question.max_items,
        **common,
    )


class _AnswersSerializerBase(serializers.Serializer):
    def to_internal_value(self, data):
        try:
            return normalise_answers(data)
        except AnswersInvalid as exc:
            raise serializers.ValidationError(exc.errors) from None

    def to_representation(self, instance):
        return dict(instance)


# Fields generated from the questionnaire; validation delegates to `normalise_answers`, so the API, the web
# form and the services apply one rule set. Its OpenAPI schema is the questionnaire's own (patterns, bounds).
AnswersSerializer = extend_schema_field(openapi_schema())(
    type("AnswersSerializer", (_AnswersSerializerBase,), {q.key: _field_for(q) for q in QUESTIONS})
)


class ReasonSerializer(serializers.Serializer):
    field = CharField(help_text="the decision field this reason explains")
    text = CharField()
    source = serializers.ChoiceField(
        choices=ReasonSource.values + ["answer", "cluster"],
        help_text="policy: a rule decided; answer: you asked for it; default: nothing decided, inherited; "
                  "cluster: how the platform team set the cluster up",
    )
    rule = CharField(allow_null=True)


class GangSerializer(serializers.Serializer):
    min_members = IntegerField()
    backend = CharField()


class MultiNodeSerializer(serializers.Serializer):
    restart = CharField(allow_null=True,
                                    help_text="a failed rank: jobset restarts the whole gang, fail_job fails it")
    topology = CharField(allow_null=True, help_text="node label / tier the gang is packed into")
    compute_domain = serializers.BooleanField(help_text="a ComputeDomain (IMEX) of its own, on multi-node NVLink")


class DriverSerializer(serializers.Serializer):
    min_major = IntegerField()
    branch = IntegerField(allow_null=True, default=None,
                                      help_text="the driver release branch a rule keeps the class on, e.g. 580")


class LeaseSerializer(serializers.Serializer):
    hours = serializers.FloatField(help_text="how long the grant lasts from approval")
    max_hours = serializers.FloatField(allow_null=True, help_text="the most time left an extension can reach")
    rule = CharField(allow_null=True, help_text="the rule that set the lease's terms; null: only the answer")


class BudgetImpactSerializer(serializers.Serializer):
    budget = serializers.IntegerField()
    team = CharField()
    cost_center = CharField()
    month = CharField(help_text="YYYY-MM")
    mode = serializers.ChoiceField(choices=["notify", "require_review"])
    currency = CharField()
    budget_gpu_hours = CharField(allow_null=True)
    budget_amount = CharField(allow_null=True)
    spent_gpu_hours = CharField()
    spent_cost = CharField()
    committed_gpu_hours = CharField()
    committed_cost = CharField()
    pending_gpu_hours = CharField()
    pending_cost = CharField()
    forecast_gpu_hours = CharField()
    forecast_cost = CharField()
    forecast_percent = serializers.IntegerField()
    over = serializers.BooleanField()
    words = CharField()


class AutoApproveLimitsSerializer(serializers.Serializer):
    per_request = serializers.FloatField(required=False, help_text="GPU equivalents a request")
    per_team = serializers.FloatField(required=False, help_text="GPU equivalents a team holds at once under the rule")
    without_quota = serializers.BooleanField(required=False, help_text="also for teams with no quota on the strategy")


class DecisionSerializer(serializers.Serializer):
    strategy = serializers.ChoiceField(choices=STRATEGY_CHOICES)
    gpu_model = CharField()
    gpu_product = CharField()
    mig_profile = CharField(allow_null=True)
    gpus_per_replica = IntegerField()
    replicas = IntegerField()
    memory_isolation = serializers.ChoiceField(choices=MemoryIsolation.values)
    memory_limit_gb = serializers.FloatField(
        allow_null=True, required=False, help_text="per-client device memory limit (MPS only); null otherwise")
    fabric_isolation = serializers.ChoiceField(choices=FabricIsolation.values)
    gang = GangSerializer(allow_null=True)
    multi_node = MultiNodeSerializer(allow_null=True, default=None)
    driver = DriverSerializer(allow_null=True)
    lease = LeaseSerializer(allow_null=True, default=None, help_text="the grant's lease; null: none")
    budget = BudgetImpactSerializer(allow_null=True, default=None,
                                    help_text="the team's budget forecast this month with this request approved too "
                                              "(at the time of the decision); null: no budget")
    cluster = CharField()
    node_pool = CharField()
    scheduling_model = CharField()
    policy_version = IntegerField()
    rule = CharField(allow_null=True, help_text="the route rule that decided; null = platform default")
    guardrails = serializers.ListField(child=CharField())
    auto_approve = serializers.BooleanField()
    review_reasons = serializers.ListField(
        child=CharField(), default=list,
        help_text="why a rule's automatic approval did not hold, as stable codes: StrategyFallback, "
                  "GuardrailReplacedStrategy, OverAutoApprovalRequestCap, NoQuota, OverAutoApprovalTeamCap, "
                  "OverBudget",
    )
    auto_approve_limits = AutoApproveLimitsSerializer(default=dict, help_text="the deciding rule's caps, if any")
    gpu_equivalents_per_replica = serializers.FloatField()
    gpu_equivalents = serializers.FloatField()
    reasons = ReasonSerializer(many=True)
    summary = CharField(help_text="the decision in plain words")


class RequestTeamField(serializers.SlugRelatedField):
    """A team slug; an unknown one gets the same 403 as a team the caller is not in (intake.services)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and data and "\x00" not in data:
            team = self.get_queryset().filter(slug=data).first()
            if team is None:
                raise request_rights_denied(data[:63])
            return team
        return super().to_internal_value(data)


class TeamAnswersInputSerializer(serializers.Serializer):
    team = RequestTeamField(slug_field="slug", queryset=Team.objects.all())
    answers = AnswersSerializer()


class RequestCreateInputSerializer(TeamAnswersInputSerializer):
    name = CharField(max_length=63, validators=[slug_validator])


class PreviewInputSerializer(TeamAnswersInputSerializer):
    name = CharField(max_length=63, validators=[slug_validator], required=False,
                                 help_text="optional; used to name the previewed objects")


class PreviewSerializer(serializers.Serializer):
    decision = DecisionSerializer()
    manifests = serializers.ListField(child=serializers.DictField(), help_text="the Kubernetes objects, in apply order")


class LeaseExtendInputSerializer(serializers.Serializer):
    hours = serializers.FloatField(min_value=0.01, max_value=8760,
                                   help_text="hours added to the lease; the time left may not pass the policy maximum")


class CommentInputSerializer(serializers.Serializer):
    comment = CharField(required=False, allow_blank=True, max_length=4000, default="")
    expected_status = serializers.ChoiceField(
        choices=RequestStatus.choices, required=False,
        help_text="The status you saw. If the request is no longer in it (someone acted first), nothing changes "
                  "and the answer is 409. Omitted: any status the transition is allowed from.",
    )


class RequestEventSerializer(serializers.ModelSerializer):
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
    applied_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)


class ProvisioningJobSerializer(serializers.Serializer):
    kind = CharField()
    cluster = CharField(source="cluster.name")
    status = CharField()
    attempts = IntegerField()
    message = CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


# --- status reconciliation (reconcile) --------------------------------------------------------------------------


class PendingPodSerializer(serializers.Serializer):
    pod = CharField()
    since = serializers.DateTimeField(allow_null=True)
    reason = CharField(help_text="e.g. Unschedulable, ImagePullBackOff")
    text = CharField(help_text="why it is pending, in plain words (the scheduler's message)")


class GangStallSerializer(serializers.Serializer):
    started_at = serializers.DateTimeField(help_text="when the running pods began waiting for the pending ones")
    detected_at = serializers.DateTimeField(help_text="when the portal declared the request stalled")
    ended_at = serializers.DateTimeField(allow_null=True)
    end_reason = CharField(help_text="recovered, completed, failed, released, cancelled; empty while open")
    running_pods = IntegerField()
    pending_pods = IntegerField()
    gpu_equivalents_running = serializers.DecimalField(max_digits=12, decimal_places=6)
    burnt_gpu_equivalent_seconds = serializers.SerializerMethodField(
        help_text="GPU-equivalents of the running pods x stalled time, exact; up to now while the stall is open"
    )
    burnt_gpu_hours = serializers.SerializerMethodField()
    pending = PendingPodSerializer(source="pending_detail", many=True)
    notified_at = serializers.DateTimeField(allow_null=True)
    released_at = serializers.DateTimeField(allow_null=True)

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
    lease_expires_at = serializers.DateTimeField(read_only=True, allow_null=True,
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


class RequestListSerializer(serializers.Serializer):
    """A request as a list shows it; the whole record is at its detail URL. With `?expand=decision` the list
    carries each decision too (the view passes `expand_decision`); otherwise the field is left out, not null."""

    id = IntegerField(read_only=True)
    name = CharField(read_only=True)
    team = CharField(source="team.slug", read_only=True)
    status = serializers.ChoiceField(choices=RequestStatus.choices, read_only=True)
    strategy = serializers.ChoiceField(choices=STRATEGY_CHOICES, read_only=True)
    gpu_model = CharField(read_only=True, help_text="the GPU model decided, e.g. H200-141GB")
    mig_profile = CharField(read_only=True, allow_null=True, help_text="the MIG profile; null if none")
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
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


class RuleSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(choices=RuleKind.choices)

    class Meta:
        model = Rule
        fields = ["key", "kind", "position", "match", "outcome", "rationale", "owner", "signed_off_by", "signed_off_at"]
        read_only_fields = fields


class PolicyVersionSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=PolicyStatus.choices)
    signed_off_by = CharField(source="signed_off_by_name")
    based_on = serializers.SlugRelatedField(slug_field="number", read_only=True, allow_null=True)
    review = serializers.DictField(allow_null=True, help_text="the diff the signer reviewed before signing off")
    rules = RuleSerializer(many=True)

    class Meta:
        model = PolicyVersion
        fields = ["number", "status", "notes", "based_on", "signed_off_by", "signed_off_at", "activated_at",
                  "review", "rules"]
        read_only_fields = fields


class DecisionChangeSerializer(serializers.Serializer):
    request = IntegerField()
    team = CharField()
    name = CharField()
    workload_class = CharField()
    status = CharField()
    changes = serializers.DictField(child=serializers.ListField(allow_null=True),
                                    help_text="field -> [before, after]")


class ClassCountSerializer(serializers.Serializer):
    evaluated = IntegerField()
    changed = IntegerField()


class PolicyDiffSerializer(serializers.Serializer):
    version = IntegerField()
    baseline_version = IntegerField(allow_null=True)
    days = IntegerField()
    evaluated = IntegerField()
    changed_count = IntegerField()
    by_workload_class = serializers.DictField(child=ClassCountSerializer())
    rules_changed = serializers.ListField(child=serializers.DictField())
    changed = DecisionChangeSerializer(many=True)
    digest = CharField(help_text="send it back to sign off what you reviewed")


class PolicyDiffQuerySerializer(serializers.Serializer):
    days = IntegerField(min_value=1, max_value=365, default=30)


class PolicySignOffInputSerializer(serializers.Serializer):
    digest = CharField(max_length=64, help_text="the digest of the diff you reviewed")
    days = IntegerField(min_value=1, max_value=365, default=30)
