"""The gang-fit check as a pure function: per node free capacity, gangs placed all at once with bin-packing, what
must finish first, and the exact reasons when a request can never fit."""
from __future__ import annotations

import datetime

from provisioning.fit import Demand, Holder, NodeSlot, check_fit, tolerated

GPU = "nvidia.com/gpu"
UTC = datetime.UTC
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def whole(pods=1, per_pod=8, gang=None, **kw):
    return Demand(resource=GPU, per_pod=per_pod, pods=pods, gang=pods > 1 if gang is None else gang,
                  gpu_model="H100-80GB", unit="GPU", **kw)


def h100(name, used=0, total=8, **kw):
    return NodeSlot(name=name, gpu_model="H100-80GB", resources={GPU: total}, used={GPU: used}, driver_major=570, **kw)


def test_a_gang_that_fits_now_is_placed_node_by_node():
    answer = check_fit(whole(pods=2), [h100("a", used=8), h100("b"), h100("c"), h100("d", used=2)])
    assert answer.verdict == "fits_now" and answer.placement == {"b": 1, "c": 1}
    assert answer.reason == "All 2 pods of 8 GPUs per pod fit now: 1 on b, 1 on c."


def test_bin_packing_uses_the_tightest_node_first():
    answer = check_fit(whole(pods=3, per_pod=2), [h100("roomy"), h100("tight", used=4)])
    assert answer.placement == {"tight": 2, "roomy": 1}


def test_never_when_no_node_has_that_many_gpus():
    answer = check_fit(whole(per_pod=8), [h100("a", total=4), h100("b", total=4)])
    assert answer.verdict == "never"
    assert answer.reason == ("8 GPUs per pod but no node has 8 free GPUs of this model (H100-80GB): the most one "
                             "schedulable node has is 4.")


def test_never_when_the_gang_is_larger_than_the_idle_pool():
    answer = check_fit(whole(pods=5), [h100(n) for n in "abcd"])
    assert answer.reason == ("The gang needs 5 pods of 8 GPUs per pod at once but the pool's schedulable nodes can "
                             "hold at most 4 even with nothing else running.")


def test_never_when_no_node_offers_the_mig_layout():
    demand = Demand(resource="nvidia.com/mig-3g.71gb", per_pod=1, pods=1, gang=False, gpu_model="H200-141GB",
                    unit="3g.71gb slice", profile="3g.71gb")
    nodes = [NodeSlot(name=f"h200-{i}", gpu_model="H200-141GB", resources={"nvidia.com/mig-1g.18gb": 56},
                      mig_devices={"1g.18gb": 56}, mig_config="all-1g.18gb") for i in (1, 2)]
    answer = check_fit(demand, nodes)
    assert answer.verdict == "never"
    assert answer.reason == ("Needs a 3g.71gb slice and no node offers that layout (the pool's nodes run "
                             "all-1g.18gb); a MIG layout change would be needed.")


def test_mig_slices_fit_per_node_and_not_summed_across_nodes():
    demand = Demand(resource="nvidia.com/mig-3g.71gb", per_pod=2, pods=1, gang=False, gpu_model="H200-141GB",
                    unit="3g.71gb slice", profile="3g.71gb")
    nodes = [NodeSlot(name=n, gpu_model="H200-141GB", resources={"nvidia.com/mig-3g.71gb": 8},
                      used={"nvidia.com/mig-3g.71gb": 7}) for n in ("x", "y")]
    answer = check_fit(demand, nodes)  # 2 free in total, but 1 on each node
    assert answer.verdict == "fits_after" and answer.pods_fitting_now == 0


def test_mig_single_nodes_must_carry_the_profile():
    demand = Demand(resource=GPU, per_pod=1, pods=1, gang=False, gpu_model="H200-141GB", unit="1g.18gb slice",
                    profile="1g.18gb")
    other = NodeSlot(name="s1", gpu_model="H200-141GB", resources={GPU: 16}, mig_devices={"2g.35gb": 16},
                     mig_config="all-2g.35gb")
    right = NodeSlot(name="s2", gpu_model="H200-141GB", resources={GPU: 56}, mig_devices={"1g.18gb": 56},
                     mig_config="all-1g.18gb")
    assert check_fit(demand, [other]).verdict == "never"
    assert check_fit(demand, [other, right]).placement == {"s2": 1}


def test_fits_after_names_what_must_finish_first_earliest_end_first():
    nodes = [h100("a", used=8), h100("b", used=8), h100("c", used=6)]
    holders = [
        Holder(key="request:7", label="#7 team-b/sweep (running)", held={"a": {GPU: 8}}, request_id=7,
               team="team-b", expected_end=datetime.datetime(2026, 12, 1, 18, 0, tzinfo=UTC)),
        Holder(key="request:8", label="#8 team-c/finetune (running)", held={"b": {GPU: 8}}, request_id=8,
               team="team-c", expected_end=datetime.datetime(2026, 12, 1, 9, 30, tzinfo=UTC)),
        Holder(key="pod:x/y", label="pod x/y (not from the portal)", held={"c": {GPU: 6}}),
    ]
    answer = check_fit(whole(pods=2), nodes, holders)
    assert answer.verdict == "fits_after"
    assert [h.request_id for h in answer.must_finish] == [8, 7]
    assert answer.reason == ("Fits after #8 team-c/finetune (running) (expected to end 2026-12-01 09:30 UTC) and "
                             "#7 team-b/sweep (running) (expected to end 2026-12-01 18:00 UTC) finish. 0 of 2 "
                             "could start now; a gang waits for all.")


def test_fits_after_drops_work_whose_end_does_not_help():
    nodes = [h100("a", used=8), h100("b", used=2, total=4)]
    holders = [
        Holder(key="request:1", label="#1 early", held={"b": {GPU: 2}},
               expected_end=datetime.datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        Holder(key="request:2", label="#2 later", held={"a": {GPU: 8}},
               expected_end=datetime.datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
    ]
    answer = check_fit(whole(pods=1), nodes, holders)  # b would have 4 at most: #1 ending does not help
    assert [h.label for h in answer.must_finish] == ["#2 later"]


def test_work_without_expected_end_comes_last_and_says_so():
    nodes = [h100("a", used=8)]
    holders = [Holder(key="pod:p/q", label="pod p/q (not from the portal)", held={"a": {GPU: 8}})]
    answer = check_fit(whole(), nodes, holders)
    assert answer.reason == "Fits after pod p/q (not from the portal) (no expected end) finishes."


def test_a_non_gang_request_says_how_many_pods_could_start_now():
    answer = check_fit(whole(pods=2, gang=False), [h100("a"), h100("b", used=8)],
                       [Holder(key="pod:p/q", label="pod p/q", held={"b": {GPU: 8}})])
    assert answer.verdict == "fits_after" and answer.reason.endswith(" 1 of 2 could start now.")


def test_cordoned_and_untolerated_taints_leave_nodes_out():
    nodes = [h100("cordoned", schedulable=False), h100("gpu-taint", taints=(TAINT,)),
             h100("maintenance", taints=({"key": "maint", "value": "yes", "effect": "NoExecute"},)),
             h100("soft", used=8, taints=({"key": "x", "effect": "PreferNoSchedule"},))]
    answer = check_fit(whole(tolerations=(TAINT,)), nodes)
    assert answer.placement == {"gpu-taint": 1}
    assert answer.excluded == {"cordoned": "is cordoned",
                               "maintenance": "has taint maint=yes:NoExecute, which the request does not tolerate"}

    answer = check_fit(whole(), nodes[:3])
    assert answer.verdict == "never" and answer.reason == (
        "No node can take these pods: cordoned is cordoned; gpu-taint has taint nvidia.com/gpu=present:NoSchedule, "
        "which the request does not tolerate; maintenance has taint maint=yes:NoExecute, which the request does not "
        "tolerate.")


def test_driver_floor_and_model_leave_nodes_out():
    old = h100("old")
    new = NodeSlot(name="new", gpu_model="H100-80GB", resources={GPU: 8}, driver_major=580)
    other = NodeSlot(name="other", gpu_model="H200-141GB", resources={GPU: 8}, driver_major=580)
    answer = check_fit(whole(min_driver_major=575), [old, new, other])
    assert answer.placement == {"new": 1}
    assert answer.excluded == {"old": "runs driver 570, below the floor 575",
                               "other": "has H200-141GB GPUs, not H100-80GB"}


def test_an_empty_pool_never_fits():
    assert check_fit(whole(), []).reason == "The pool has no nodes."


def test_toleration_matching():
    assert tolerated(TAINT, [{"key": "nvidia.com/gpu", "operator": "Exists"}])
    assert tolerated(TAINT, [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    assert not tolerated(TAINT, [{"key": "nvidia.com/gpu", "value": "absent"}])
    assert not tolerated(TAINT, [{"key": "nvidia.com/gpu", "effect": "NoExecute"}])
    assert tolerated({"key": "a", "effect": "PreferNoSchedule"}, [])
