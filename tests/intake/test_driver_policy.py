"""The driver is part of the workload class: rules and guardrails set a floor or a branch, merged with the answer.

Given a policy version whose rules set driver floors and branches, when engineers preview and submit through the
API, then the strictest floor wins with its reason saying whether a rule or the answer set it, a branch keeps the
work on nodes of that driver (device plugin node affinity, DRA CEL), an impossible combination is a 400 on the
answer, and the driver-upgrade impact report uses the same requirement.
"""
from __future__ import annotations

import pytest

from intake.decisions import Decision, DriverTerms
from intake.models import GpuRequest, Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create, policy_version_sign_off
from workflows.services import request_approve
from portal.errors import InvalidInput
from provisioning.models import NodePool

pytestmark = pytest.mark.django_db

# 8 GB of latency-sensitive shared inference: the smallest MIG slice that holds it is an A100 1g.10gb (driver 550).
SMALL_INFERENCE = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
                   "gpu_memory_gb": 8, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def new_policy(platform_user, *, outcomes=None, guardrails=()):
    draft = policy_version_draft_create(user=platform_user, notes="driver floors")
    for key, extra in (outcomes or {}).items():
        rule = Rule.objects.get(version=draft, key=key)
        Rule.objects.filter(pk=rule.pk).update(outcome={**rule.outcome, **extra})
    for position, (key, match, outcome, rationale) in enumerate(guardrails, start=200):
        Rule.objects.create(version=draft, key=key, kind="guardrail", position=position, match=match, outcome=outcome,
                            rationale=rationale, owner="platform-team")
    return policy_version_sign_off(user=platform_user, version_id=draft.pk,
                                   reviewed_digest=policy_version_diff(version=draft).digest)


def preview(api, user, answers):
    return api(user).post("/api/v1/intake/preview/", {"team": "team-a", "answers": answers}, format="json")


def driver_reasons(decision):
    return [r for r in decision.reasons if r.field == "driver"]


def test_a_rules_floor_moves_the_work_to_nodes_that_meet_it(api, engineer, platform_user, team_a, inventory):
    assert Decision.from_json(preview(api, engineer, SMALL_INFERENCE).json()["decision"]).node_pool == "a100-mig-small"
    new_policy(platform_user, outcomes={"inference-shared-latency": {"driver": {"min_major": 560}}})

    decision = Decision.from_json(preview(api, engineer, SMALL_INFERENCE).json()["decision"])

    assert decision.node_pool == "h200-mig" and decision.driver == DriverTerms(min_major=560, branch=None)
    [reason] = driver_reasons(decision)
    assert (reason.source, reason.rule) == ("policy", "inference-shared-latency")
    assert "rule inference-shared-latency sets this floor" in reason.text


def test_the_stricter_floor_wins_and_says_where_it_came_from(api, engineer, platform_user, team_a, inventory):
    new_policy(platform_user, outcomes={"inference-shared-latency": {"driver": {"min_major": 560}}})

    answered_higher = Decision.from_json(preview(api, engineer, {**SMALL_INFERENCE, "min_driver_major": 565}).json()["decision"])
    answered_lower = Decision.from_json(preview(api, engineer, {**SMALL_INFERENCE, "min_driver_major": 555}).json()["decision"])

    assert answered_higher.driver.min_major == 565
    assert [r.source for r in driver_reasons(answered_higher)] == ["answer"]
    assert answered_lower.driver.min_major == 560
    [reason] = driver_reasons(answered_lower)
    assert reason.source == "policy" and "stricter than the 555 you asked for" in reason.text


def test_a_guardrails_branch_is_rendered_as_node_affinity_on_device_plugin_pools(api, engineer, platform_user,
                                                                                   team_a, inventory):
    new_policy(platform_user, guardrails=[("training-on-570", {"workload_class": ["training"]},
                                           {"driver": {"branch": 570}}, "the 570 branch is certified for NCCL.")])

    response = preview(api, engineer, TRAINING)

    body = response.json()
    assert Decision.from_json(body["decision"]).driver == DriverTerms(min_major=570, branch=570)
    assert Decision.from_json(body["decision"]).node_pool == "h100-train"
    expressions = [
        expression
        for obj in body["manifests"] if obj["kind"] in ("Job", "Deployment")
        for term in obj["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for expression in term["matchExpressions"]
    ]
    assert {"key": "nvidia.com/cuda.driver-version.major", "operator": "In", "values": ["570"]} in expressions
    assert "driver 570 branch" in Decision.from_json(body["decision"]).summary


def test_a_branch_on_a_dra_pool_is_a_cel_selector_on_the_driver_version(api, engineer, platform_user, team_a,
                                                                         inventory):
    # Only gpu-west (B200 on DRA) runs the 580 branch.
    new_policy(platform_user, guardrails=[("training-on-580", {"workload_class": ["training"]},
                                           {"driver": {"branch": 580}}, "B200 needs the 580 branch.")])

    body = preview(api, engineer, TRAINING).json()

    assert Decision.from_json(body["decision"]).cluster == "gpu-west"
    selectors = [s["cel"]["expression"]
                 for obj in body["manifests"] if obj["kind"] in ("ResourceClaim", "ResourceClaimTemplate")
                 for request in (obj["spec"].get("devices") or obj["spec"]["spec"]["devices"])["requests"]
                 for s in request["exactly"].get("selectors", [])]
    assert any("driverVersion.major() == 580" in s for s in selectors), selectors


def test_a_floor_above_the_pinned_branch_is_a_400_on_the_answer(api, engineer, platform_user, team_a, inventory):
    new_policy(platform_user, guardrails=[("training-on-570", {"workload_class": ["training"]},
                                           {"driver": {"branch": 570}}, "the 570 branch is certified for NCCL.")])

    response = preview(api, engineer, {**TRAINING, "min_driver_major": 580})

    assert response.status_code == 400
    assert "570 driver branch" in response.json()["answers"]["min_driver_major"][0]


def test_the_upgrade_impact_report_uses_the_decided_branch(api, engineer, platform_user, team_a, inventory):
    new_policy(platform_user, guardrails=[("training-on-570", {"workload_class": ["training"]},
                                           {"driver": {"branch": 570}}, "the 570 branch is certified for NCCL.")])
    created = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "llm", "answers": TRAINING},
                                 format="json").json()
    request_approve(user=platform_user, request_id=created["id"])
    GpuRequest.objects.filter(pk=created["id"]).update(status="running")
    pool = NodePool.objects.get(cluster__name="gpu-east", name="h100-train")

    body = api(platform_user).get(f"/api/v1/clusters/{pool.cluster_id}/pools/{pool.pk}/upgrade-impact/",
                                  {"driver_version": "580.65.06"}).json()

    assert [(a["name"], a["reason"]) for a in body["affected"]] == [("llm", "is kept on the driver 570 branch")]


@pytest.mark.parametrize("driver", [{"min_major": 12}, {"branch": "580"}, {"floor": 570}, {}, [570], {"branch": True}])
def test_invalid_driver_requirements_are_refused_at_sign_off(platform_user, driver):
    with pytest.raises(InvalidInput, match="driver"):
        new_policy(platform_user, outcomes={"training-dedicated-batch": {"driver": driver}})
