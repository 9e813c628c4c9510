"""Policy changes make new versions; signed-off versions are immutable; decisions record rule and version."""
import pytest

from intake.choices import PolicyStatus
from intake.models import PolicyVersion, Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create, policy_version_sign_off
from workflows.services import request_submit
from portal.errors import Conflict, InvalidInput, PermissionDenied
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


def sign_off(user, draft):
    digest = policy_version_diff(version=draft).digest
    return policy_version_sign_off(user=user, version_id=draft.pk, reviewed_digest=digest)


def test_a_draft_copies_the_rules_and_signing_off_makes_it_current(platform_user, engineer, team_a, inventory):
    before = request_submit(user=engineer, team=team_a, name="before", raw_answers=VALID_ANSWERS)
    draft = policy_version_draft_create(user=platform_user, notes="inference to whole GPUs")
    assert draft.number == 2 and draft.rules.count() == 10
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})

    sign_off(platform_user, draft)

    assert PolicyVersion.objects.get(number=1).status == PolicyStatus.RETIRED
    assert PolicyVersion.objects.get(number=2).status == PolicyStatus.ACTIVE
    changed = Rule.objects.get(version=draft, key="inference-shared-latency")
    unchanged = Rule.objects.get(version=draft, key="training-dedicated-batch")
    assert changed.signed_off_by == "pat"
    assert unchanged.signed_off_by == "platform-team (initial policy)"  # keeps the sign-off it had
    after = request_submit(user=engineer, team=team_a, name="after", raw_answers=VALID_ANSWERS)
    assert (before.policy_version.number, before.decision.strategy) == (1, "mig")
    assert (after.policy_version.number, after.decision.strategy, after.rule_key) == (2, "whole_gpu",
                                                                                        "inference-shared-latency")


def test_only_drafts_can_be_signed_off_and_only_by_the_platform_team(platform_user, engineer):
    active = PolicyVersion.objects.get(status="active")
    with pytest.raises(Conflict):
        policy_version_sign_off(user=platform_user, version_id=active.pk, reviewed_digest="x")
    draft = policy_version_draft_create(user=platform_user)
    with pytest.raises(PermissionDenied):
        sign_off(engineer, draft)


def test_a_draft_with_an_invalid_rule_cannot_be_signed_off(platform_user):
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="development-standard").update(outcome={"strategy": "magic"})
    with pytest.raises(InvalidInput):
        sign_off(platform_user, draft)
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


INFERENCE = dict(VALID_ANSWERS)
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 40,
            "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def test_the_diff_of_moving_inference_from_mig_to_whole_gpus(platform_user, engineer, team_a, inventory):
    chat = request_submit(user=engineer, team=team_a, name="chat", raw_answers=INFERENCE)
    request_submit(user=engineer, team=team_a, name="train", raw_answers=TRAINING)
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})

    diff = policy_version_diff(version=draft, days=30)

    assert (diff.version, diff.baseline_version, diff.evaluated) == (2, 1, 2)
    assert diff.by_workload_class == {"inference": {"evaluated": 1, "changed": 1},
                                      "training": {"evaluated": 1, "changed": 0}}
    [change] = diff.changed
    assert change["request"] == chat.pk
    assert change["changes"]["strategy"] == ["mig", "whole_gpu"]
    assert change["changes"]["memory_isolation"] == ["hardware", "exclusive"]
    assert change["changes"]["mig_profile"] == ["1g.18gb", None]
    assert [r["rule"] for r in diff.rules_changed] == ["inference-shared-latency"]


def test_sign_off_records_the_reviewed_diff_and_refuses_a_stale_one(platform_user, engineer, team_a, inventory):
    request_submit(user=engineer, team=team_a, name="chat", raw_answers=INFERENCE)
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})
    seen = policy_version_diff(version=draft).digest
    # Edited after the review: the sign-off must not go through on the old diff.
    Rule.objects.filter(version=draft, key="development-standard").update(rationale="changed after review")
    with pytest.raises(InvalidInput) as stale:
        policy_version_sign_off(user=platform_user, version_id=draft.pk, reviewed_digest=seen)
    assert stale.value.field == "digest"

    signed = sign_off(platform_user, draft)

    assert signed.review["changed_count"] == 1 and signed.review["reviewed_by"] == "pat"
    assert signed.review["by_workload_class"]["inference"] == {"evaluated": 1, "changed": 1}


def test_policy_versions_api(api, platform_user, engineer, finance_user, team_a, inventory):
    request_submit(user=engineer, team=team_a, name="chat", raw_answers=INFERENCE)
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})
    platform = api(platform_user)

    assert [v["number"] for v in platform.get("/api/v1/policy/versions/").json()["results"]] == [2, 1]
    assert [v["number"] for v in api(engineer).get("/api/v1/policy/versions/").json()["results"]] == [1]
    assert api(engineer).get("/api/v1/policy/versions/2/").status_code == 404
    assert api().get("/api/v1/policy/versions/").status_code == 401

    diff = platform.get("/api/v1/policy/versions/2/diff/?days=30").json()
    assert diff["changed_count"] == 1 and diff["by_workload_class"]["inference"]["changed"] == 1
    assert platform.get("/api/v1/policy/versions/2/diff/?days=0").status_code == 400
    assert api(finance_user).get("/api/v1/policy/versions/1/diff/").status_code == 403
    assert api(engineer).get("/api/v1/policy/versions/1/diff/").status_code == 403

    assert platform.post("/api/v1/policy/versions/2/sign-off/", {}, format="json").json().keys() == {"digest"}
    assert platform.post("/api/v1/policy/versions/2/sign-off/", {"digest": "0" * 64},
                         format="json").status_code == 400
    assert api(engineer).post("/api/v1/policy/versions/2/sign-off/", {"digest": diff["digest"]},
                              format="json").status_code == 404
    signed = platform.post("/api/v1/policy/versions/2/sign-off/", {"digest": diff["digest"]}, format="json")
    assert signed.status_code == 200 and signed.json()["status"] == "active"
    assert signed.json()["review"]["changed_requests"] and api(engineer).get("/api/v1/policy/").json()["number"] == 2
    assert platform.post("/api/v1/policy/versions/2/sign-off/", {"digest": diff["digest"]},
                         format="json").status_code == 409


def test_admin_review_page_shows_the_diff_and_signs_off(platform_user, engineer, team_a, inventory):
    from django.test import Client

    request_submit(user=engineer, team=team_a, name="chat", raw_answers=INFERENCE)
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})
    client = Client()
    client.force_login(platform_user)
    page = client.get(f"/admin/intake/policyversion/{draft.pk}/review/")
    assert "<strong>1</strong> of 1 requests" in page.content.decode()
    client.post(f"/admin/intake/policyversion/{draft.pk}/review/", {"digest": page.context["diff"].digest, "days": 30})
    assert PolicyVersion.objects.get(pk=draft.pk).status == "active"
