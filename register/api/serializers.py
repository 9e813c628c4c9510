"""The register's API shapes (output only, plus the query's input)."""
from __future__ import annotations

from rest_framework import serializers

from portal.api.fields import CharField, IntegerField

from ..choices import Section, Verdict
from ..selectors import DEFAULT_DAYS, MAX_DAYS


class RegisterQueryInputSerializer(serializers.Serializer):
    days = IntegerField(min_value=1, max_value=MAX_DAYS, default=DEFAULT_DAYS, required=False,
                                    help_text="the look-back window for request counts, stalls and GPU-hours")
    format = serializers.ChoiceField(choices=["json", "md"], required=False,
                                     help_text="md: the register as a Markdown document")


class VerdictCountsSerializer(serializers.Serializer):
    decided = IntegerField()
    inherited = IntegerField()
    conflict = IntegerField()


class RegisterItemSerializer(serializers.Serializer):
    area = serializers.ChoiceField(choices=Section.choices, help_text="the section the item belongs to")
    subject = CharField(help_text="what the item is about: a rule, an answer combination, a cluster, "
                                              "a pool")
    state = CharField(help_text="what is configured or running now, in words")
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    owner = CharField(allow_null=True, help_text='who is accountable; "nobody" for an unowned driver '
                                                            "lifecycle; null when nothing was signed off")
    signed_off_by = CharField(allow_null=True)
    signed_off_at = serializers.DateTimeField(allow_null=True)
    rationale = CharField(allow_blank=True)
    evidence = serializers.DictField(help_text="the facts the verdict was computed from (per area)")
    notes = serializers.ListField(child=CharField(), help_text="the evidence in plain words")


class RegisterSectionSerializer(serializers.Serializer):
    area = serializers.ChoiceField(choices=Section.choices, help_text="the decision area (also its items' area)")
    title = CharField()
    counts = VerdictCountsSerializer()
    summary = serializers.DictField(help_text="section-wide facts, e.g. the policy in force and the drafts "
                                              "awaiting review with their diff counts")
    notes = serializers.ListField(child=CharField())
    items = RegisterItemSerializer(many=True)


class RegisterWindowSerializer(serializers.Serializer):
    days = IntegerField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class RegisterSerializer(serializers.Serializer):
    generated_at = serializers.DateTimeField()
    window = RegisterWindowSerializer()
    policy_version = IntegerField(allow_null=True, help_text="the policy version in force")
    counts = VerdictCountsSerializer()
    sections = RegisterSectionSerializer(many=True)
