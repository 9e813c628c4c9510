"""Policy changes make new versions; signed-off versions are immutable; decisions record rule and version."""
import pytest

from intake.choices import PolicyStatus
from intake.models import PolicyVersion, Rule
from intake.services import policy_version_draft_create, policy_version_sign_off, request_submit
from portal.errors import Conflict, InvalidInput, PermissionDenied
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


def test_a_draft_copies_the_rules_and_signing_off_makes_it_current(platform_user, engineer, team_a, inventory):
    before = request_submit(user=engineer, team=team_a, name="before", raw_answers=VALID_ANSWERS)
    draft = policy_version_draft_create(user=platform_user, notes="inference to whole GPUs")
    assert draft.number == 2 and draft.rules.count() == 6
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})

    policy_version_sign_off(user=platform_user, version_id=draft.pk)

    assert PolicyVersion.objects.get(number=1).status == PolicyStatus.RETIRED
    assert PolicyVersion.objects.get(number=2).status == PolicyStatus.ACTIVE
    changed = Rule.objects.get(version=draft, key="inference-shared-latency")
    unchanged = Rule.objects.get(version=draft, key="training-dedicated-batch")
    assert changed.signed_off_by == "pat"
    assert unchanged.signed_off_by == "platform-team (initial policy)"  # keeps the sign-off it had
    after = request_submit(user=engineer, team=team_a, name="after", raw_answers=VALID_ANSWERS)
    assert (before.policy_version.number, before.decision["strategy"]) == (1, "mig")
    assert (after.policy_version.number, after.decision["strategy"], after.rule_key) == (2, "whole_gpu",
                                                                                        "inference-shared-latency")


def test_only_drafts_can_be_signed_off_and_only_by_the_platform_team(platform_user, engineer):
    active = PolicyVersion.objects.get(status="active")
    with pytest.raises(Conflict):
        policy_version_sign_off(user=platform_user, version_id=active.pk)
    draft = policy_version_draft_create(user=platform_user)
    with pytest.raises(PermissionDenied):
        policy_version_sign_off(user=engineer, version_id=draft.pk)


def test_a_draft_with_an_invalid_rule_cannot_be_signed_off(platform_user):
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="development-standard").update(outcome={"strategy": "magic"})
    with pytest.raises(InvalidInput):
        policy_version_sign_off(user=platform_user, version_id=draft.pk)
    assert PolicyVersion.objects.get(status="active").number == 1


def test_signed_off_versions_are_read_only_in_the_admin(platform_user):
    from django.test import Client

    client = Client()
    client.force_login(platform_user)
    active = PolicyVersion.objects.get(status="active")
    page = client.get(f"/admin/intake/policyversion/{active.pk}/change/").content.decode()
    assert 'name="rules-0-rationale"' not in page  # inline rules are not editable
    draft = policy_version_draft_create(user=platform_user)
    page = client.get(f"/admin/intake/policyversion/{draft.pk}/change/").content.decode()
    assert 'name="rules-0-rationale"' in page


def test_admin_rejects_a_rule_that_matches_an_unknown_answer(platform_user):
    from django.core.exceptions import ValidationError

    draft = policy_version_draft_create(user=platform_user)
    rule = Rule(version=draft, key="bad", kind="route", match={"colour": ["blue"]}, outcome={"strategy": "mig"},
                rationale="x", owner="y")
    with pytest.raises(ValidationError) as error:
        rule.full_clean()
    assert "match" in error.value.message_dict
