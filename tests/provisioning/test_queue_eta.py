"""The queue played forward (provisioning.queue_eta): run times measured with the runs still going, BestEffortFIFO
admission, rounds, arrivals, and on a simulated fleet trace (kubesim.fleet_trace) estimates closer to the actual
starts than queue depth divided by throughput. Pure: no database, no server."""
from __future__ import annotations

import datetime

import pytest

from kubesim import fleet_estimators
from kubesim import fleet_trace
from provisioning.queue_eta import (
    Admitted, Holding, Queued, RunTimes, Waiting, admission_cycle, depth_over_throughput, estimate_queue,
    queue_starts,
)

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


def minutes(n: float) -> datetime.datetime:
    return NOW + datetime.timedelta(minutes=n)


def test_runs_still_going_count_so_the_measure_is_not_only_of_the_runs_short_enough_to_have_ended():
    finished = [(1.0, 0.8), (1.0, 0.9), (1.0, 1.0)]
    going = [(1.0, 2.0)] * 3  # three runs already at twice their hours

    assert RunTimes(finished).ratios_beyond(0.0, slices=2) == (0.8, 1.0)
    with_going = RunTimes(finished, going)
    assert max(with_going.ratios_beyond(0.0)) >= 2.0  # half the runs go at least twice their hours
    # A run that has run 1.5 times its hours ends, as those that ran so long, beyond that.
    assert min(with_going.ratios_beyond(1.5)) >= 1.5
    assert RunTimes([(1.0, 1.0)]).ratios_beyond(0.0) == (1.0,)  # too few finished runs: as said


def test_best_effort_fifo_lets_a_small_workload_past_a_big_one_that_does_not_fit():
    running = [Holding(8, (minutes(10),)), Holding(8, (minutes(20),))]
    queue = [Waiting("big", 16, (1.0,)), Waiting("small", 4, (1.0,)), Waiting("never", 64, (1.0,))]

    starts = queue_starts(now=NOW, quota=20, running=running, queue=queue, samples=1)

    assert starts["small"].admitted_at == NOW  # 4 of the 20 are free now: the small one goes first
    assert starts["big"].admitted_at == minutes(20)  # 16 free only once both running runs end
    assert starts["never"].admitted_at is None and starts["never"].starts_at is None  # more than the quota


def test_a_queue_that_admits_in_rounds_takes_what_ended_between_two_rounds_at_once():
    running = [Holding(8, (minutes(1),)), Holding(8, (minutes(2),))]
    queue = [Waiting("gang", 16, (1.0,)), Waiting("pod", 8, (1.0,))]

    one_by_one = queue_starts(now=NOW, quota=16, running=running, queue=queue, samples=1)
    in_rounds = queue_starts(now=NOW, quota=16, running=running, queue=queue, samples=1,
                             cycle=datetime.timedelta(minutes=5))

    assert one_by_one["pod"].admitted_at == minutes(1)  # the first 8 freed go to the pod behind the gang
    assert in_rounds["gang"].admitted_at == minutes(5)  # both ended before the round: the gang goes first
    assert in_rounds["pod"].admitted_at > in_rounds["gang"].admitted_at
    assert admission_cycle([minutes(0), minutes(0), minutes(1), minutes(2)]) == datetime.timedelta(minutes=1)


def test_work_that_keeps_arriving_takes_quota_a_bigger_workload_ahead_cannot_use():
    running = [Holding(4, (minutes(10),)), Holding(4, (minutes(30),))]
    queue = [Waiting("gang", 8, (1.0,))]
    alone = queue_starts(now=NOW, quota=8, running=running, queue=queue, samples=1)
    crowded = queue_starts(now=NOW, quota=8, running=running, queue=queue, samples=1,
                           arrivals=[(minutes(5), Waiting("x", 4, (2.0,)))])
    assert alone["gang"].admitted_at == minutes(30)
    assert crowded["gang"].admitted_at > minutes(30)  # the pod that arrived took the 4 freed at minute 10


def test_a_team_whose_runs_go_long_waits_longer_behind_its_own_work():
    def estimate(actual: float) -> datetime.datetime:
        starts = estimate_queue(
            now=NOW, quota=8, queue=[Queued("next", "vision", 8, 1.0)],
            admitted=[Admitted("vision", 8, NOW - datetime.timedelta(minutes=30), NOW - datetime.timedelta(
                minutes=30), 1.0)],
            finished={"vision": [(1.0, actual)] * 5})
        return starts["next"].starts_at

    assert estimate(1.0) == minutes(30) and estimate(2.0) == minutes(90)


def test_depth_over_throughput():
    assert depth_over_throughput(now=NOW, position=9, admitted_per_minute=2.0) == minutes(5)
    assert depth_over_throughput(now=NOW, position=0, admitted_per_minute=0) is None


@pytest.mark.slow
def test_on_a_fleet_trace_every_estimate_is_closer_to_the_start_than_depth_over_throughput():
    trace = fleet_trace.FleetTrace(nodes=260, window_hours=1.0)
    found = fleet_trace.play(trace, {"portal": fleet_estimators.portal, "rule": fleet_estimators.depth_over_throughput},
                             every_ticks=4)
    portal, rule = (fleet_trace.errors(found["every"][name]) for name in ("portal", "rule"))
    assert len(portal) == len(rule) > 1000
    assert fleet_trace.nearest_rank(portal, 0.5) <= 0.10
    assert fleet_trace.nearest_rank(portal, 0.5) < fleet_trace.nearest_rank(rule, 0.5)
    assert fleet_trace.nearest_rank(portal, 0.9) < fleet_trace.nearest_rank(rule, 0.9)
