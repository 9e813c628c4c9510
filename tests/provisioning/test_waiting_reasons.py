"""The pure wait explanations (provisioning.wait_reasons): each scheduler's objects, shaped as the real ones, read into
reasons with their source; the unblock words and the estimate."""
from __future__ import annotations

from datetime import UTC, datetime

from provisioning import wait_reasons

END = datetime(2026, 11, 30, 20, tzinfo=UTC)


def workload(conditions, checks=()):
    return {"metadata": {"name": "job-train-1a2b3", "namespace": "gpu-vision"},
            "status": {"conditions": conditions, "admissionChecks": list(checks)}}


def test_kueue_exceeds_max_quota_is_a_quota_wait_that_quota_must_change_for():
    [blocker] = wait_reasons.kueue_blockers(workload([{
        "type": "QuotaReserved", "status": "False", "reason": "ExceedsMaxQuota",
        "message": "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor h200, "
                   "request > maximum capacity (24 > 16)"}]))
    assert (blocker.kind, blocker.reason) == ("quota", "ExceedsMaxQuota")
    assert blocker.words == "Not admitted by Kueue: it asks for more than the team's queue can ever hold."
    assert blocker.source == "Kueue Workload gpu-vision/job-train-1a2b3: condition QuotaReserved=False"


def test_kueue_no_matching_flavor_is_capacity_and_an_admitted_workload_waits_for_nothing():
    [blocker] = wait_reasons.kueue_blockers(workload([{"type": "QuotaReserved", "status": "False",
                                                      "reason": "NoMatchingFlavor", "message": "no flavor"}]))
    assert blocker.kind == "capacity"
    assert wait_reasons.kueue_blockers(workload([{"type": "Admitted", "status": "True", "reason": "Admitted"}])) == []


def test_kueue_quota_reserved_but_a_pending_admission_check_holds_it():
    blockers = wait_reasons.kueue_blockers(workload(
        [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
         {"type": "Admitted", "status": "False", "reason": "UnsatisfiedAdmissionChecks", "message": "1 pending"}],
        [{"name": "gpu-portal-approval", "state": "Pending", "message": "waiting for the platform team"}]))
    assert [(b.kind, b.reason) for b in blockers] == [("admission", "UnsatisfiedAdmissionChecks"),
                                                      ("admission", "Pending")]
    assert blockers[1].words == "Admission check gpu-portal-approval is pending."


def test_kueue_shortage_is_read_from_its_own_message():
    blockers = wait_reasons.kueue_blockers(workload([{
        "type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota",
        "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
                   "h200, 2 more needed"}]))
    assert wait_reasons.kueue_quota_shortage(blockers) == ("nvidia.com/gpu", "h200", 2)


def test_kai_scheduling_conditions_give_one_reason_each():
    podgroup = {"metadata": {"name": "pg-train", "namespace": "gpu-vision"}, "status": {"schedulingConditions": [{
        "type": "NotEnoughResources", "nodePool": "default", "transitionID": "3", "status": "True",
        "reasons": [{"reason": "OverLimit", "message": "queue vision would exceed its limit of 16 GPUs"},
                    {"reason": "NotEnoughResources", "message": "node(s) didn't have enough resources: GPUs"}]}]}}
    blockers = wait_reasons.podgroup_blockers(podgroup, "kai")
    assert [(b.kind, b.reason) for b in blockers] == [("quota", "OverLimit"), ("capacity", "NotEnoughResources")]
    assert blockers[0].source == "KAI PodGroup gpu-vision/pg-train: scheduling condition NotEnoughResources"


def test_a_native_podgroup_not_scheduled_is_a_gang_wait():
    podgroup = {"metadata": {"name": "train", "namespace": "gpu-vision"}, "status": {"conditions": [
        {"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
         "message": "only 3 of 4 pods could be placed"}]}}
    [blocker] = wait_reasons.podgroup_blockers(podgroup, "native")
    assert blocker.kind == "gang" and blocker.source.endswith("condition PodGroupScheduled=False")


def test_quota_unblock_releases_earliest_ending_work_first():
    running = [wait_reasons.Running("#7 vision/late", 8, None, None, "no expected end"),
               wait_reasons.Running("#5 vision/sweep", 2, None, END, "its start plus its expected_hours")]
    text, estimate = wait_reasons.quota_unblock(team="vision", unit="H200 GPUs", limit=16, held=14, needed=4,
                                                running=running)
    assert text == "Team vision holds 14 of 16 H200 GPUs; 2 free up when #5 vision/sweep finishes."
    assert estimate.start == END and "#5 vision/sweep is expected to end 2026-11-30 20:00 UTC" in estimate.basis


def test_quota_unblock_without_an_expected_end_gives_no_estimate_and_says_why():
    running = [wait_reasons.Running("#7 vision/late", 8, None, None, "")]
    _, estimate = wait_reasons.quota_unblock(team="vision", unit="GPUs", limit=8, held=8, needed=8, running=running)
    assert estimate.start is None and estimate.basis.startswith("#7 vision/late gave no expected run time")


def test_fragmentation_words():
    assert wait_reasons.fragmentation_words(per_pod=8, pods=2, unit="GPU",
                                            free_by_node={"a": 4, "b": 4, "c": 4, "d": 0}) == \
        "No node has 8 free GPUs; 3 nodes have 4."
