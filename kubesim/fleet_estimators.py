"""The two estimators `bench/eta.py --trace fleet` compares on the fleet trace (kubesim/fleet_trace.py), each given
an `Observation`, which holds what the portal can read at that moment and nothing more: the portal's
(`provisioning.queue_eta.estimate_queue`, fed as `provisioning.queue_waits` feeds it from a real cluster) and queue
depth divided by the admissions of the last 30 minutes. Each returns {work key: estimated start in seconds on the
trace's clock, or None}."""
from __future__ import annotations

import datetime

from kubesim import fleet_trace
from provisioning import queue_eta

EPOCH = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def at(seconds: float) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=seconds)


def seconds(moment: datetime.datetime) -> float:
    return (moment - EPOCH).total_seconds()


def portal(observation: fleet_trace.Observation) -> dict:
    """The portal's estimator, given what the portal can read at the moment (queue_waits makes the same reads)."""
    finished: dict[str, list[tuple[float, float]]] = {}
    for team, expected, actual in observation.finished:
        finished.setdefault(team, []).append((expected, actual))
    starts = queue_eta.estimate_queue(
        now=at(observation.now), quota=observation.quota,
        queue=[queue_eta.Queued(w.key, w.team, w.gpus, w.expected_hours) for w in observation.queue],
        admitted=[queue_eta.Admitted(w.team, w.gpus, at(w.admitted), at(w.started) if w.started is not None
                                     and w.started <= observation.now else None, w.expected_hours)
                  for w in observation.admitted],
        finished=finished, startup=datetime.timedelta(seconds=observation.startup_seconds),
        arrived=[queue_eta.Queued(w.key, w.team, w.gpus, w.expected_hours) for w in observation.arrived],
        cycle=queue_eta.admission_cycle(at(t) for t in observation.admission_times))
    return {key: seconds(start.starts_at) if start.starts_at else None for key, start in starts.items()}


def depth_over_throughput(observation: fleet_trace.Observation) -> dict:
    rate = observation.admitted_last_30_min / 30
    return {work.key: seconds(found) if (found := queue_eta.depth_over_throughput(
        now=at(observation.now), position=position, admitted_per_minute=rate)) else None
            for position, work in enumerate(observation.queue)}
