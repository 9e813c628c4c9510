"""The answers object: fields generated from the questionnaire, validated by intake.answers."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.fields import CharField, FloatField, IntegerField

from intake.answers import AnswersInvalid, normalise_answers
from intake.questionnaire import QUESTIONS, Question, openapi_schema


def _field_for(question: Question) -> serializers.Field:
    common = {"required": question.required, "help_text": question.help, "label": question.label}
    if not question.required:
        common["allow_null"] = True
    if question.kind == "choice":
        return serializers.ChoiceField(choices=[o.value for o in question.options], **common)
    if question.kind == "integer":
        return IntegerField(min_value=question.minimum, max_value=question.maximum, **common)
    if question.kind == "number":
        return FloatField(min_value=question.minimum, max_value=question.maximum, **common)
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
