"""The routing policy: versions with their rules, the review diff, sign-off."""
from __future__ import annotations

from rest_framework import serializers

from portal.api.fields import CharField, IntegerField

from intake.choices import PolicyStatus, RuleKind
from intake.models import PolicyVersion, Rule


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
