"""An installation whose active policy predates the shipped priority rules gets them as a draft to review, never
activated behind the signer's back: given version 1 without them, when migration 0010 runs, then a draft based on
version 1 holds its rules plus inference-, training- and development-priority, version 1 stays in force, and a second
run adds nothing."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from intake.models import PolicyVersion, Rule

pytestmark = pytest.mark.django_db
MIGRATION = importlib.import_module("intake.migrations.0010_default_policy_priority")
PRIORITY_RULES = {"inference-priority", "training-priority", "development-priority"}


def test_an_older_policy_gets_the_priority_rules_as_a_draft_to_sign_off():
    active = PolicyVersion.objects.get(status="active")
    Rule.objects.filter(version=active, key__in=PRIORITY_RULES).delete()  # as installed before the rules shipped
    before = set(active.rules.values_list("key", flat=True))

    MIGRATION.draft(apps, None)
    MIGRATION.draft(apps, None)

    [draft] = PolicyVersion.objects.filter(status="draft")
    assert draft.based_on_id == active.pk and draft.notes.startswith("Shipped priority rules")
    assert set(draft.rules.values_list("key", flat=True)) == before | PRIORITY_RULES
    assert not draft.rules.filter(signed_off_at__isnull=False).exists()
    assert PolicyVersion.objects.get(status="active").pk == active.pk


def test_a_policy_that_already_decides_priority_is_left_alone():
    MIGRATION.draft(apps, None)

    assert not PolicyVersion.objects.filter(status="draft").exists()
