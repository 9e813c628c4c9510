"""The decision as a type: every stored shape loads, what is stored is what is read back, and a shape this portal
cannot read is refused rather than half read. (This file spells the stored keys: it pins the JSON.)"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from django.db import connection

from workflows.api.serializers import DecisionSerializer
from intake.decisions import (DECISION_VERSION, Answers, ApprovalLimits, Decision, DecisionShapeError, DriverTerms,
                              Gang, Lease, Priority, Reason, decide, summarise)
from intake.models import GpuRequest
from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS
from tests.intake.test_policy_matrix import default_policy, demo_inventory

# A decision as the first portal stored it (before `version`, `multi_node`, `lease`, `memory_limit_gb`,
# `dra_extended_resource`, `review_reasons`, `auto_approve_limits` and the driver's `branch`).
FIRST_SHAPE = {
    "strategy": "whole_gpu", "gpu_model": "H100-80GB", "gpu_product": "NVIDIA-H100-80GB-HBM3", "mig_profile": None,
    "gpus_per_replica": 8, "replicas": 2, "memory_isolation": "exclusive", "fabric_isolation": "shared",
    "gang": {"min_members": 2, "backend": "volcano"}, "driver": {"min_major": 550}, "cluster": "gpu-east",
    "node_pool": "h100-train", "scheduling_model": "device_plugin", "policy_version": 1, "rule": "training-whole",
    "guardrails": [], "auto_approve": False, "gpu_equivalents_per_replica": 8.0, "gpu_equivalents": 16.0,
    "reasons": [{"field": "strategy", "text": "Whole GPUs for training.", "source": "policy",
                 "rule": "training-whole"}],
    "summary": "2 whole H100-80GB GPUs per replica; the GPU is yours alone.",
}
# What tests and the ingestion benchmark store: only what metering reads.
PARTIAL_SHAPE = {"strategy": "mig", "gpu_model": "H200-141GB", "mig_profile": "1g.18gb", "cluster": "gpu-east",
                 "node_pool": "h200-mig", "gpus_per_replica": 1}


def test_the_first_stored_shape_loads_with_what_its_readers_assumed_of_the_keys_it_lacks():
    decision = Decision.from_json(FIRST_SHAPE)

    assert decision.gang == Gang(min_members=2, backend="volcano")
    assert decision.driver == DriverTerms(min_major=550, branch=None)
    assert (decision.multi_node, decision.lease, decision.memory_limit_gb, decision.dra_extended_resource) == (
        None, None, None, None)
    assert (decision.review_reasons, decision.auto_approve_limits, decision.budget) == ((), ApprovalLimits(), None)
    assert decision.reasons == (Reason("strategy", "Whole GPUs for training.", "policy", "training-whole"),)
    again = decision.to_json()
    assert again["version"] == DECISION_VERSION
    assert {k: v for k, v in again.items() if k in FIRST_SHAPE} == {**FIRST_SHAPE,
                                                                   "driver": {"min_major": 550, "branch": None}}


def test_a_version_1_decision_loads_without_a_priority_and_is_stored_as_version_2():
    stored = {**FIRST_SHAPE, "version": 1}

    decision = Decision.from_json(stored)

    assert decision.priority is None  # before version 2: the scheduler's defaults, inherited
    assert decision.to_json()["version"] == DECISION_VERSION == 2
    assert decision.to_json()["priority"] is None


def test_a_priority_round_trips_and_its_unknown_keys_are_refused():
    priority = Priority(tier="training", preemptible=True, grace_seconds=600, min_runtime_minutes=120,
                        min_runtime_enforced=True, rule="training-priority")
    stored = json.loads(json.dumps(Decision(priority=priority).to_json()))

    assert Decision.from_json(stored).priority == priority
    with pytest.raises(DecisionShapeError, match="priority: unknown keys"):
        Decision.from_json({**PARTIAL_SHAPE, "priority": {**priority.to_json(), "grace": 1}})


def test_a_partial_decision_loads_with_defaults():
    decision = Decision.from_json(PARTIAL_SHAPE)

    assert (decision.strategy, decision.mig_profile, decision.node_pool, decision.replicas) == (
        "mig", "1g.18gb", "h200-mig", 1)
    assert decision.gang is None and decision.reasons == () and decision.scheduling_model == ""


def test_what_decide_returns_is_stored_and_read_back_unchanged():
    decision = decide(Answers.from_dict(VALID_ANSWERS), default_policy(), demo_inventory())

    stored = json.loads(json.dumps(decision.to_json()))

    assert stored["version"] == DECISION_VERSION
    assert Decision.from_json(stored) == decision
    assert decision.summary == summarise(decision, Answers.from_dict(VALID_ANSWERS))


def test_a_rules_caps_are_stored_as_the_rule_set_them():
    limits = ApprovalLimits.from_json({"per_request": 2})

    assert limits.to_json() == {"per_request": 2}
    assert Decision(auto_approve_limits=limits).to_json()["auto_approve_limits"] == {"per_request": 2}


@pytest.mark.parametrize("shape, why", [
    ({**PARTIAL_SHAPE, "version": DECISION_VERSION + 1}, "version"),
    ({**PARTIAL_SHAPE, "node_pol": "h200-mig"}, "unknown keys ['node_pol']"),
    ({**PARTIAL_SHAPE, "auto_approve_limits": {"per_user": 1}}, "unknown keys ['per_user']"),
    ({**PARTIAL_SHAPE, "gang": {"backend": "volcano"}}, "min_members"),
    (["not", "an", "object"], "JSON object"),
])
def test_a_shape_this_portal_cannot_read_is_refused_saying_why(shape, why):
    with pytest.raises(DecisionShapeError, match=why.replace("[", r"\[").replace("]", r"\]")):
        Decision.from_json(shape)


def test_holding_for_review_withdraws_the_approval_and_says_why():
    decision = Decision(auto_approve=True, review_reasons=("StrategyFallback",), reasons=(
        Reason("strategy", "MIG.", "policy", "r1"), Reason("approval", "Approved automatically.", "policy", "r1")))

    held = decision.held_for_review(code="OverBudget", text="Over budget.")

    assert held.auto_approve is False and held.review_reasons == ("StrategyFallback", "OverBudget")
    assert held.reasons_for("approval") == (Reason("approval", "Over budget.", "policy", "r1"),)
    assert held.reasons_for("strategy") == decision.reasons_for("strategy")


def test_only_picks_fields_and_refuses_a_name_that_is_not_one():
    decision = Decision(strategy="mig", gang=Gang(2, "kai"), lease=Lease(hours=8.0))

    assert decision.to_json(only=("strategy", "gang")) == {"strategy": "mig",
                                                           "gang": {"min_members": 2, "backend": "kai"}}
    with pytest.raises(KeyError):
        decision.to_json(only=("sharing",))


def test_the_api_shows_a_decision_as_it_is_stored(db):
    decision = replace(decide(Answers.from_dict(VALID_ANSWERS), default_policy(), demo_inventory()),
                       auto_approve_limits=ApprovalLimits(per_request=2))

    shown = json.loads(json.dumps(DecisionSerializer(decision).data))
    stored = decision.to_json()

    assert set(shown) <= set(stored) - {"version"}
    assert shown == {key: stored[key] for key in shown}
    assert shown["auto_approve_limits"] == {"per_request": 2}  # the caps the rule sets, not a null for each other


def test_a_request_row_of_the_first_shape_reads_as_a_decision(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="old", raw_answers=VALID_ANSWERS)
    with connection.cursor() as cursor:  # as an old portal wrote it, past the field
        cursor.execute("UPDATE intake_gpurequest SET decision = %s::jsonb WHERE id = %s",
                       [json.dumps(FIRST_SHAPE), gpu_request.pk])

    read = GpuRequest.objects.get(pk=gpu_request.pk)
    (value,) = GpuRequest.objects.filter(pk=gpu_request.pk).values_list("decision", flat=True)
    (cluster,) = GpuRequest.objects.filter(pk=gpu_request.pk).values_list("decision__cluster", flat=True)

    assert read.decision == value == Decision.from_json(FIRST_SHAPE)
    assert cluster == "gpu-east"


def test_a_dict_set_on_a_request_becomes_a_decision_and_is_stored_whole(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="new", raw_answers=VALID_ANSWERS)

    gpu_request.decision = PARTIAL_SHAPE
    gpu_request.save(update_fields=["decision"])

    assert gpu_request.decision == Decision.from_json(PARTIAL_SHAPE)
    with connection.cursor() as cursor:
        cursor.execute("SELECT decision FROM intake_gpurequest WHERE id = %s", [gpu_request.pk])
        (raw,) = cursor.fetchone()
    stored = raw if isinstance(raw, dict) else json.loads(raw)
    assert stored == Decision.from_json(PARTIAL_SHAPE).to_json()
