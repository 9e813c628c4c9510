"""The MIG layout planner as a pure function: given unmet MIG demand per pool and the nodes' current layouts, when
it plans, then it proposes the cheapest node-wide `nvidia.com/mig.config` changes that meet the demand, each with its
drain cost and the workloads it interrupts, and says what it cannot meet."""
from __future__ import annotations

from gpu.catalogue import load_catalogue
from provisioning.mig_planner import MigDemand, MigNode, Workload, plan_layouts, step_cost

CATALOGUE = load_catalogue()
H200 = "H200-141GB"


def node(name, layout="all-1g.18gb", used=None, workloads=(), **kw):
    offered = {p: n * 8 for p, n in CATALOGUE.layout_profiles(layout, H200).items()}
    return MigNode(name=name, pool="h200-mig", gpu_model=H200, gpu_count=8, mig_config=layout, offered=offered,
                   used=used or {}, workloads=tuple(workloads), **kw)


def demand(profile, devices, request_id=1, pool="h200-mig"):
    return MigDemand(request_id=request_id, label=f"#{request_id}", pool=pool, gpu_model=H200, profile=profile,
                     devices=devices)


def test_demand_met_by_free_slices_needs_no_change():
    proposal = plan_layouts([demand("1g.18gb", 10)], [node("a")], CATALOGUE)
    assert proposal.steps == [] and proposal.unmet == [] and proposal.demand == []
    assert proposal.summary == "No MIG demand is waiting for slices: nothing to change."


def test_an_idle_node_is_changed_to_the_layout_that_keeps_most_of_what_it_offers():
    busy = node("a", used={"1g.18gb": 3}, workloads=[Workload("#7 team-b/chat", request_id=7, remaining_seconds=3600)])
    idle = node("b")

    proposal = plan_layouts([demand("3g.71gb", 2)], [busy, idle], CATALOGUE)

    [step] = proposal.steps
    assert (step.node, step.from_config, step.to_config) == ("b", "all-1g.18gb", "all-balanced")
    assert step.covers == {"3g.71gb": 2}
    assert step.gains == {"1g.18gb": -40, "2g.35gb": 8, "3g.71gb": 8}
    assert (step.estimated_seconds_min, step.estimated_seconds_max, step.affected) == (240, 480, [])
    assert proposal.summary == "1 node to change; unmet: 2 x 3g.71gb on h200-mig."


def test_the_cost_adds_the_longest_remaining_run_and_lists_who_is_interrupted():
    busy = node("a", used={"1g.18gb": 3}, workloads=[
        Workload("#7 team-b/chat", request_id=7, team="team-b", owner="bob", pods=3, remaining_seconds=3600),
        Workload("#8 team-c/eval", request_id=8, remaining_seconds=600),
    ])
    [step] = plan_layouts([demand("3g.71gb", 2)], [busy], CATALOGUE).steps
    assert (step.estimated_seconds_min, step.estimated_seconds_max) == (240 + 3600, 480 + 3600)
    assert step.remaining_work_known and step.affected[0] == {
        "label": "#7 team-b/chat", "request_id": 7, "team": "team-b", "owner": "bob", "pods": 3,
        "remaining_seconds": 3600}


def test_work_without_an_end_makes_a_node_the_last_choice():
    unknown = node("a", workloads=[Workload("pod x/y (not from the portal)")])
    long = node("b", workloads=[Workload("#9", request_id=9, remaining_seconds=86400)])
    [step] = plan_layouts([demand("3g.71gb", 2)], [unknown, long], CATALOGUE).steps
    assert step.node == "b"
    assert step_cost(unknown)[3] is False


def test_several_nodes_change_when_one_is_not_enough():
    nodes = [node(n) for n in ("a", "b", "c")]
    proposal = plan_layouts([demand("3g.71gb", 20)], nodes, CATALOGUE)  # all-3g.71gb gives 16 per node
    assert [(s.node, s.to_config) for s in proposal.steps] == [("a", "all-3g.71gb"), ("b", "all-balanced")]
    assert proposal.unmet == []


def test_demand_that_no_change_can_meet_is_reported_with_the_reason():
    proposal = plan_layouts([demand("3g.71gb", 40), demand("9g.999gb", 1, request_id=2)], [node("a")], CATALOGUE)
    assert [s.to_config for s in proposal.steps] == ["all-3g.71gb"]
    assert proposal.unmet == [
        {"pool": "h200-mig", "gpu_model": H200, "profile": "3g.71gb", "devices": 24,
         "reason": "Even after the proposed changes, h200-mig offers too few 3g.71gb slices."},
        {"pool": "h200-mig", "gpu_model": H200, "profile": "9g.999gb", "devices": 1,
         "reason": "H200-141GB has no MIG profile 9g.999gb."},
    ]


def test_cordoned_and_reconfiguring_nodes_and_other_pools_are_left_alone():
    nodes = [node("cordoned", schedulable=False), node("pending", config_state="pending"),
             MigNode(name="other", pool="elsewhere", gpu_model=H200, gpu_count=8, mig_config="all-1g.18gb",
                     offered={"1g.18gb": 56})]
    proposal = plan_layouts([demand("3g.71gb", 1)], nodes, CATALOGUE)
    assert proposal.steps == []
    assert proposal.unmet[0]["reason"] == ("No node of h200-mig can change layout now (cordoned, reconfiguring, or "
                                           "none left).")


def test_a_change_never_takes_away_slices_other_pending_demand_needs():
    # 50 x 1g.18gb are wanted too: turning one of two all-1g.18gb nodes into all-3g.71gb would leave 56 < 50+...
    nodes = [node("a"), node("b")]
    proposal = plan_layouts([demand("1g.18gb", 60), demand("3g.71gb", 2, request_id=2)], nodes, CATALOGUE)
    [step] = proposal.steps
    assert step.to_config == "all-balanced"  # keeps 16 x 1g.18gb: 56 + 16 >= 60
    assert proposal.unmet == []


def test_mig_single_nodes_only_take_uniform_layouts():
    single = node("s", mig_strategy="single")
    [step] = plan_layouts([demand("3g.71gb", 2)], [single], CATALOGUE).steps
    assert step.to_config == "all-3g.71gb"
