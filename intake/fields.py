"""`DecisionField`: a request's placement decision, stored as JSON and read as `intake.decisions.Decision`.

A dict assigned to the field (a test's or a benchmark's partial decision) becomes a `Decision` when it is set, so
`gpu_request.decision` is always the type, whether the row was read, created or assigned. Lookups into the JSON
(`decision__cluster=`, `KeyTextTransform("cluster", "decision")`) work as on any JSONField; their values stay
plain JSON.
"""
from __future__ import annotations

from django import forms
from django.db import models
from django.db.models.fields.json import KeyTransform
from django.db.models.query_utils import DeferredAttribute

from .decisions import Decision


class _DecisionAttribute(DeferredAttribute):
    def __set__(self, instance, value):
        instance.__dict__[self.field.attname] = _decision(value)


def _decision(value):
    return None if value is None else Decision.from_json(value)


def _json(value):
    return value.to_json() if isinstance(value, Decision) else value


class _DecisionFormField(forms.JSONField):
    def prepare_value(self, value):
        return super().prepare_value(_json(value))

    def has_changed(self, initial, data):
        return super().has_changed(_json(initial), data)


class DecisionField(models.JSONField):
    descriptor_class = _DecisionAttribute

    def from_db_value(self, value, expression, connection):
        value = super().from_db_value(value, expression, connection)
        if isinstance(expression, KeyTransform):
            return value
        return _decision(value)

    def to_python(self, value):
        return _decision(super().to_python(value))

    def get_prep_value(self, value):
        return super().get_prep_value(_json(value))

    def validate(self, value, model_instance):
        super().validate(_json(value), model_instance)

    def value_to_string(self, obj):
        return _json(self.value_from_object(obj))

    def formfield(self, **kwargs):
        return super().formfield(**{"form_class": _DecisionFormField, **kwargs})
