"""The placement decision as the API shows it (a request's, a preview's), and the preview's answer."""
from __future__ import annotations

from rest_framework import serializers

from gpu.vocabulary import STRATEGIES
from portal.api.fields import CharField, IntegerField

from intake.choices import FabricIsolation, MemoryIsolation, ReasonSource
from intake.decisions import Decision

STRATEGY_CHOICES = list(STRATEGIES)


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
    placement_may_stall = serializers.BooleanField(
        default=False, help_text="a multi-node NVLink gang with no topology-aware gang: its first pod may take a "
                                 "clique the others cannot fit in, and they wait (said in the compute_domain reason)")


class DriverSerializer(serializers.Serializer):
    min_major = IntegerField()
    branch = IntegerField(allow_null=True, default=None,
                                      help_text="the driver release branch a rule keeps the class on, e.g. 580")


class LeaseSerializer(serializers.Serializer):
    hours = serializers.FloatField(help_text="how long the grant lasts from approval")
    max_hours = serializers.FloatField(allow_null=True, help_text="the most time left an extension can reach")
    rule = CharField(allow_null=True, help_text="the rule that set the lease's terms; null: only the answer")


class PrioritySerializer(serializers.Serializer):
    tier = CharField(help_text="production-inference, training or development (highest first)")
    preemptible = serializers.BooleanField(help_text="whether higher-priority work may stop it")
    preempts = serializers.BooleanField(help_text="whether it may stop lower-priority work (false: "
                                                  "preemptionPolicy Never)")
    grace_seconds = IntegerField(help_text="seconds between SIGTERM and SIGKILL to checkpoint "
                                           "(terminationGracePeriodSeconds)")
    min_runtime_minutes = IntegerField(allow_null=True, help_text="the policy's minimum runtime before preemption")
    min_runtime_enforced = serializers.BooleanField(help_text="whether the cluster's scheduler holds that minimum")
    rule = CharField(allow_null=True, help_text="the rule that decided it")


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
        allow_null=True, required=False, help_text="per-client device memory limit (MPS on the device plugin only); null otherwise")
    fabric_isolation = serializers.ChoiceField(choices=FabricIsolation.values)
    gang = GangSerializer(allow_null=True)
    multi_node = MultiNodeSerializer(allow_null=True, default=None)
    driver = DriverSerializer(allow_null=True)
    lease = LeaseSerializer(allow_null=True, default=None, help_text="the grant's lease; null: none")
    priority = PrioritySerializer(allow_null=True, default=None,
                                  help_text="priority and preemption from the policy; null: the scheduler's defaults")
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

    def to_representation(self, instance):
        # As stored: a rule's caps that it does not set are left out, not null.
        return super().to_representation(instance.to_json() if isinstance(instance, Decision) else instance)


class PreviewSerializer(serializers.Serializer):
    decision = DecisionSerializer()
    manifests = serializers.ListField(child=serializers.DictField(), help_text="the Kubernetes objects, in apply order")
