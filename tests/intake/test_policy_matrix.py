"""The default policy over every combination of class x tenancy x latency x sensitivity.

Given the demo inventory and the shipped default policy, when each combination is decided, then the strategy,
isolation, gang and rule are as the policy says, and exactly the expected reasons are marked `default`.
The decision function is pure, so this needs no database.
"""
from __future__ import annotations

import itertools

import pytest

from intake.decisions import Answers, ClusterSpec, Gang, Inventory, PolicySpec, PoolSpec, RuleSpec, decide
from intake.default_policy import DEFAULT_RULES
from gpu.catalogue import load_catalogue

CATALOGUE = load_catalogue()


def default_policy() -> PolicySpec:
    rules = tuple(
        RuleSpec(key=r["key"], kind=r["kind"], position=r["position"], match={k: tuple(v) for k, v in r["match"].items()},
                 outcome=r["outcome"], rationale=r["rationale"], owner="platform-team")
        for r in DEFAULT_RULES
    )
    return PolicySpec(version=1, rules=rules)


def demo_inventory(gang_scheduler: str = "volcano") -> Inventory:
    def pool(name, model, mode, **kw):
        layout = kw.pop("mig_layout", "")
        return PoolSpec(cluster="gpu-east", name=name, gpu_model=model, gpus_per_node=8, node_count=2,
                        sharing_mode=mode, mig_layout=layout,
                        mig_profiles=CATALOGUE.layout_profiles(layout, model) if layout else {}, driver_major=570, **kw)

    pools = (
        pool("h100-train", "H100-80GB", "exclusive"),
        pool("h200-mig", "H200-141GB", "mig", mig_layout="all-balanced"),
        pool("a100-mig-small", "A100-80GB", "mig", mig_layout="all-1g.10gb"),
        pool("l40s-shared", "L40S-48GB", "time_slicing", time_slicing_replicas=4),
    )
    return Inventory(
        clusters=(ClusterSpec(name="gpu-east", kubernetes_version="1.35", scheduling_model="device_plugin",
                              gang_scheduler=gang_scheduler, pools=pools),),
        catalogue=CATALOGUE,
    )


ROUTES = {
    ("training", "dedicated", "batch"): "training-dedicated-batch",
    ("inference", "multi_tenant", "latency_sensitive"): "inference-shared-latency",
}


def expected(workload_class, tenancy, latency, sensitivity):
    """The default policy, restated independently of its data file."""
    rule = ROUTES.get((workload_class, tenancy, latency))
    strategy = {"training-dedicated-batch": "whole_gpu", "inference-shared-latency": "mig"}.get(rule, "whole_gpu")
    if workload_class == "development":
        rule = f"development-{sensitivity}"
        strategy = "time_slicing" if sensitivity == "standard" else "mig"
    fabric = "tenant_exclusive" if sensitivity == "regulated" and tenancy == "multi_tenant" else "shared"
    isolation = {"whole_gpu": "exclusive", "mig": "hardware", "time_slicing": "none"}[strategy]
    gang = workload_class == "training"  # decided with 2 replicas below
    defaults = {"gpu_model", "node_pool", "scheduling_model"} if strategy != "mig" else {"node_pool", "scheduling_model"}
    if rule is None:
        defaults |= {"strategy"}
    if fabric == "shared":
        defaults.add("fabric_isolation")
    if gang and rule != "training-dedicated-batch":
        defaults.add("gang")
    if workload_class != "development":
        defaults.add("approval")
    return {"rule": rule, "strategy": strategy, "memory_isolation": isolation, "fabric_isolation": fabric,
            "gang": gang, "auto_approve": workload_class == "development", "default_fields": defaults}


COMBINATIONS = list(itertools.product(
    ["training", "inference", "development"], ["multi_tenant", "dedicated"], ["latency_sensitive", "batch"],
    ["standard", "regulated"],
))


@pytest.mark.parametrize("workload_class,tenancy,latency,sensitivity", COMBINATIONS)
def test_default_policy_matrix(workload_class, tenancy, latency, sensitivity):
    replicas = 2 if workload_class == "training" else 1
    answers = Answers(workload_class=workload_class, tenancy=tenancy, latency=latency, data_sensitivity=sensitivity,
                      gpu_memory_gb=16, gpus_per_replica=1, replicas=replicas, image="busybox:1")
    want = expected(workload_class, tenancy, latency, sensitivity)

    decision = decide(answers, default_policy(), demo_inventory())

    assert decision.rule == want["rule"]
    assert decision.strategy == want["strategy"]
    assert decision.memory_isolation == want["memory_isolation"]
    assert decision.fabric_isolation == want["fabric_isolation"]
    assert decision.auto_approve == want["auto_approve"]
    assert (decision.gang is not None) == want["gang"]
    if want["gang"]:
        assert decision.gang == Gang(min_members=2, backend="volcano")
    assert {r.field for r in decision.reasons if r.source == "default"} == want["default_fields"]
    assert decision.policy_version == 1
    # Regulated data is never time-sliced, whatever the route said.
    if sensitivity == "regulated":
        assert decision.strategy != "time_slicing"


def test_the_matrix_covers_every_combination():
    assert len(COMBINATIONS) == 3 * 2 * 2 * 2


def test_mig_picks_the_smallest_profile_that_holds_the_memory():
    answers = Answers(workload_class="inference", tenancy="multi_tenant", latency="latency_sensitive",
                      gpu_memory_gb=16, image="busybox:1")
    decision = decide(answers, default_policy(), demo_inventory())
    # 1g.10gb (A100 pool) is too small; the H200 pool's balanced layout offers 1g.18gb.
    assert (decision.gpu_model, decision.mig_profile, decision.node_pool) == ("H200-141GB", "1g.18gb", "h200-mig")
    assert decision.gpu_equivalents_per_replica == pytest.approx(1 / 7, abs=1e-6)
    assert "hardware-isolated 1g.18gb slice of an H200-141GB" in decision.summary


def test_mig_falls_back_to_a_whole_gpu_with_the_reason_when_no_profile_fits():
    answers = Answers(workload_class="inference", tenancy="multi_tenant", latency="latency_sensitive",
                      gpu_memory_gb=75, image="busybox:1")
    decision = decide(answers, default_policy(), demo_inventory())
    # all-balanced on H200 offers at most 3g.71gb; nothing holds 75 GB, so the rule's fallback applies.
    assert decision.strategy == "whole_gpu"
    assert decision.memory_isolation == "exclusive"
    strategy_reasons = [r for r in decision.reasons if r.field == "strategy"]
    assert any("no pool offers a MIG profile that holds 75 GB" in r.text and r.source == "policy"
               for r in strategy_reasons)


def test_regulated_development_is_moved_off_time_slicing_by_the_guardrail():
    answers = Answers(workload_class="development", tenancy="dedicated", latency="batch",
                      data_sensitivity="regulated", gpu_memory_gb=8, image="busybox:1")
    policy = default_policy()
    # Even a route that asks for time-slicing on regulated data is overruled.
    rules = tuple(r if r.key != "development-regulated" else RuleSpec(
        key=r.key, kind="route", match=r.match, outcome={"strategy": "time_slicing"}, rationale="cheap",
        owner="x", position=r.position) for r in policy.rules)
    decision = decide(answers, PolicySpec(version=2, rules=rules), demo_inventory())
    assert decision.strategy == "mig"
    assert "regulated-never-time-sliced" in decision.guardrails


def test_multi_replica_training_without_a_gang_scheduler_is_refused_with_the_reason():
    from intake.decisions import PlacementImpossible

    answers = Answers(workload_class="training", tenancy="dedicated", latency="batch", gpu_memory_gb=40,
                      replicas=4, image="busybox:1")
    with pytest.raises(PlacementImpossible) as refused:
        decide(answers, default_policy(), demo_inventory(gang_scheduler="none"))
    assert refused.value.field == "replicas"
    assert "all-or-nothing" in refused.value.message and "no gang scheduler" in refused.value.message


def test_single_replica_training_needs_no_gang_scheduler():
    answers = Answers(workload_class="training", tenancy="dedicated", latency="batch", gpu_memory_gb=40,
                      replicas=1, image="busybox:1")
    decision = decide(answers, default_policy(), demo_inventory(gang_scheduler="none"))
    assert decision.gang is None


def test_ties_between_equally_specific_rules_go_to_the_lower_position_then_the_key():
    from intake.decisions import select_route

    answers = Answers(workload_class="training", tenancy="dedicated", latency="batch", gpu_memory_gb=1, image="a")
    make = lambda key, pos: RuleSpec(key=key, kind="route", match={"workload_class": ("training",)},  # noqa: E731
                                     outcome={"strategy": "whole_gpu"}, rationale="", owner="", position=pos)
    assert select_route(PolicySpec(1, (make("b", 5), make("a", 5), make("c", 1))), answers).key == "c"
    assert select_route(PolicySpec(1, (make("b", 5), make("a", 5))), answers).key == "a"


def test_answers_left_at_their_defaults_are_marked_as_inherited():
    answers = Answers.from_dict(
        {"workload_class": "inference", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 10,
         "image": "a", "replicas": 1, "gpus_per_replica": 1, "data_sensitivity": "standard"},
        defaulted={"replicas", "data_sensitivity"},
    )
    decision = decide(answers, default_policy(), demo_inventory())
    defaulted = {r.field for r in decision.reasons if r.source == "default"}
    assert {"replicas", "data_sensitivity"} <= defaulted
    assert "gpus_per_replica" not in defaulted
