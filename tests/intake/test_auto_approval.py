"""A rule's automatic approval holds only for what the rule decided (issue: eight whole H100s without review).

Given the default policy (development is approved automatically) and the demo inventory, when engineers submit
through the API, then a strategy fallback, a request above the rule's cap, a team without a quota on the strategy,
or a team past the rule's per-team cap each send the request to the platform team, and the decision's reasons say
which, as a stable code in `review_reasons` and in words on the approval reason and the request's events.
"""
from __future__ import annotations

import pytest

from intake.decisions import Decision
from intake.models import GpuRequest, PolicyVersion, Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create, policy_version_sign_off
from provisioning.inventory import team_quota_set
from tests.factories import request_submit_via_api

pytestmark = pytest.mark.django_db

NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
            "image": "jupyter/base-notebook:latest"}
# The red team's request: 640 GB on 8 GPUs of one replica, which used to fall back to eight whole H100s.
EIGHT_H100 = {**NOTEBOOK, "gpu_memory_gb": 640, "gpus_per_replica": 8}
# No time-sliced pool holds 60 GB (the L40S has 48): the platform default falls back to a whole GPU.
BIG_NOTEBOOK = {**NOTEBOOK, "gpu_memory_gb": 60}


def approval_reason(body) -> dict:
    return next(r for r in Decision.from_json(body["decision"]).reasons if r.field == "approval")


def test_a_fallback_to_a_whole_gpu_waits_for_the_platform_team(api, engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=64)  # quota is not what stops it

    body = request_submit_via_api(api, engineer, name="big-notebook", answers=BIG_NOTEBOOK)

    assert body["status"] == "pending_approval"
    decision = Decision.from_json(body["decision"])
    assert (decision.strategy, decision.rule) == ("whole_gpu", "development-standard")
    assert decision.auto_approve is False
    assert decision.review_reasons == ("StrategyFallback",)
    assert approval_reason(body).source == "policy" and "fallback" in approval_reason(body).text
    assert "after the platform team approves it" in decision.summary
    assert [e["to_status"] for e in body["events"] if e["to_status"]] == ["pending_approval"]
    assert any(e["reason"] == "StrategyFallback" for e in body["events"])


def test_eight_whole_gpus_through_a_rules_stated_fallback_wait_too(api, engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=64)
    regulated = {**EIGHT_H100, "data_sensitivity": "regulated"}  # development-regulated: MIG, else whole GPUs

    body = request_submit_via_api(api, engineer, name="regulated-notebook", answers=regulated)

    assert (body["status"], Decision.from_json(body["decision"]).strategy, Decision.from_json(body["decision"]).gpu_equivalents) == (
        "pending_approval", "whole_gpu", 8.0)
    assert Decision.from_json(body["decision"]).review_reasons == ("StrategyFallback",)


def test_the_red_team_request_itself_is_refused_on_gpus_per_replica(api, engineer, team_a, inventory):
    response = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "big", "answers": EIGHT_H100},
                                  format="json")

    assert response.status_code == 400
    assert "gpus_per_replica" in response.json()["answers"]
    assert not GpuRequest.objects.exists()


def test_a_request_above_the_rules_per_request_cap_is_reviewed(api, engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=8)

    # 5 x 1/4 share = 1.25 > 1
    body = request_submit_via_api(api, engineer, name="wide-notebook", answers={**NOTEBOOK, "replicas": 5})

    assert body["status"] == "pending_approval"
    assert Decision.from_json(body["decision"]).review_reasons == ("OverAutoApprovalRequestCap",)
    assert "1.25 GPU equivalents is more than the 1" in approval_reason(body).text


def test_a_team_without_a_quota_on_the_strategy_is_reviewed(api, engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=8)  # a quota, but not on time-slicing

    body = request_submit_via_api(api, engineer, name="nb", answers=NOTEBOOK)

    assert body["status"] == "pending_approval"
    assert Decision.from_json(body["decision"]).review_reasons == ("NoQuota",)
    assert "team-a has no time-sliced GPU share quota" in approval_reason(body).text
    assert any(e["reason"] == "NoQuota" for e in body["events"])


def test_the_platform_team_can_say_explicitly_that_teams_without_quota_are_approved(
    api, engineer, platform_user, team_a, inventory
):
    draft = policy_version_draft_create(user=platform_user, notes="notebooks for everyone")
    rule = Rule.objects.get(version=draft, key="development-standard")
    rule.outcome = {**rule.outcome, "auto_approve_limits": {"per_request": 1, "per_team": 2, "without_quota": True}}
    rule.save()
    policy_version_sign_off(user=platform_user, version_id=draft.pk,
                            reviewed_digest=policy_version_diff(version=draft).digest)

    body = request_submit_via_api(api, engineer, name="nb", answers=NOTEBOOK)

    assert body["status"] == "approved" and Decision.from_json(body["decision"]).policy_version == draft.number


def test_a_team_past_the_rules_per_team_cap_is_reviewed(api, engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=16)
    four_shares = {**NOTEBOOK, "replicas": 4}  # one GPU equivalent each; the rule allows two a team at once

    first = request_submit_via_api(api, engineer, name="nb-1", answers=four_shares)
    second = request_submit_via_api(api, engineer, name="nb-2", answers=four_shares)
    third = request_submit_via_api(api, engineer, name="nb-3", answers=four_shares)

    assert [first["status"], second["status"], third["status"]] == ["approved", "approved", "pending_approval"]
    assert Decision.from_json(third["decision"]).review_reasons == ("OverAutoApprovalTeamCap",)
    assert "would hold 3 GPU equivalents under rule development-standard (2 held)" in approval_reason(third).text


def test_a_cancelled_grant_frees_the_per_team_cap(api, engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=16)
    four_shares = {**NOTEBOOK, "replicas": 4}
    first = request_submit_via_api(api, engineer, name="nb-1", answers=four_shares)
    request_submit_via_api(api, engineer, name="nb-2", answers=four_shares)
    assert api(engineer).post(f"/api/v1/requests/{first['id']}/cancel/", {}, format="json").status_code == 200

    assert request_submit_via_api(api, engineer, name="nb-3", answers=four_shares)["status"] == "approved"


def test_the_preview_says_it_would_be_reviewed_and_why(api, engineer, team_a, inventory):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": BIG_NOTEBOOK}, format="json")

    assert response.status_code == 200, response.json()
    decision = Decision.from_json(response.json()["decision"])
    assert decision.auto_approve is False and decision.review_reasons == ("StrategyFallback",)


def test_the_preview_sees_the_team_state_too(api, engineer, team_a, inventory):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": NOTEBOOK}, format="json")

    assert Decision.from_json(response.json()["decision"]).review_reasons == ("NoQuota",)


def test_a_guardrail_that_replaces_the_rules_strategy_sends_it_to_review(api, engineer, platform_user, team_a,
                                                                          inventory):
    team_quota_set(team=team_a, strategy="mig", gpu_equivalents=4)
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=4)
    draft = policy_version_draft_create(user=platform_user, notes="no time-slicing for multi-tenant notebooks")
    Rule.objects.create(version=draft, key="no-shared-notebooks", kind="guardrail", position=120,
                        match={"tenancy": ["multi_tenant"], "workload_class": ["development"]},
                        outcome={"forbid_strategies": ["time_slicing"], "replace_with": "mig"},
                        rationale="shared notebooks get isolated memory.", owner="platform-team")
    policy_version_sign_off(user=platform_user, version_id=draft.pk,
                            reviewed_digest=policy_version_diff(version=draft).digest)

    body = request_submit_via_api(api, engineer, name="nb", answers=NOTEBOOK)

    assert Decision.from_json(body["decision"]).strategy == "mig" and body["status"] == "pending_approval"
    assert Decision.from_json(body["decision"]).review_reasons == ("GuardrailReplacedStrategy",)


@pytest.mark.parametrize("limits", [
    {"per_request": 0}, {"per_request": "one"}, {"per_team": True}, {"without_quota": "yes"}, {"everything": 1}, [1],
])
def test_invalid_auto_approval_limits_are_refused_at_sign_off(platform_user, limits):
    from portal.errors import InvalidInput

    draft = policy_version_draft_create(user=platform_user)
    rule = Rule.objects.get(version=draft, key="development-standard")
    Rule.objects.filter(pk=rule.pk).update(outcome={**rule.outcome, "auto_approve_limits": limits})

    with pytest.raises(InvalidInput, match="auto_approve_limits"):
        policy_version_sign_off(user=platform_user, version_id=draft.pk,
                                reviewed_digest=policy_version_diff(version=draft).digest)
    assert PolicyVersion.objects.get(status="active").number == 1
