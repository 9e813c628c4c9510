"""When each workload waiting in a Kueue ClusterQueue is likely to start: the queue played forward. Pure: plain
values in, no Django, no I/O; `provisioning.wait_refresh` feeds it what it reads from the cluster and the database, and
`bench/eta.py --trace fleet` what the simulated fleet shows at the same moment.

The queue is replayed as Kueue admits with its default queueing strategy, BestEffortFIFO ("older Workloads that
can't be admitted will not block newer Workloads that fit in the available quota": kubernetes-sigs/kueue
`site/content/en/docs/concepts/cluster_queue.md`): whenever quota frees, the waiting workloads are taken in the
ClusterQueue's order and every one whose GPUs fit the unused quota is admitted, a later small one ahead of an
earlier big one. Not replayed: priorities and preemption, cohorts and borrowing (the order given is the queue's). Quota frees when running work
ends: at its start plus its expected run time, corrected by what its team's finished runs took against what they
said (`RunTimes`: a run that has already run long is expected to run as long as the finished runs that ran at
least as long), and an admitted workload starts after the admission-to-running delay observed lately. Work
submitted after the estimate is not known and not counted.

Queue depth divided by throughput (`depth_over_throughput`), the rule Kueue's maintainers sketch for the
visibility API (kubernetes-sigs/kueue KEP-168-2) and the one kubernetes-sigs/kueue#14477 measures against, is
kept here as the comparison.
"""
from __future__ import annotations

import bisect
import datetime
import heapq
import math
import random
import statistics
from collections import deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

# A team's run times are measured by its own finished runs once it has at least this many; before, everyone's.
MIN_RUNS_FOR_RATIO = 3
# How many equally likely ends each run is spread over (see `RunTimes.ratios_beyond`).
SLICES = 8
EPSILON = 1e-6
# Work expected to arrive is played this far ahead at least (and three times the queue's drain at its pace).
ARRIVALS_HORIZON = datetime.timedelta(hours=6)


@dataclass(frozen=True)
class Holding:
    """Admitted work holding quota: `gpus` of it, released in equal parts at each of `ends` (empty: nobody can say
    when, so never within the estimate)."""

    gpus: float
    ends: tuple[datetime.datetime, ...]


@dataclass(frozen=True)
class Waiting:
    """A workload in the ClusterQueue, in the queue's order: what it asks for and how long it may hold it once it
    runs (equally likely run times in hours; None: unknown, it then holds its quota to the end of the estimate)."""

    key: Hashable
    gpus: float
    hours: tuple[float, ...] | None


@dataclass(frozen=True)
class Start:
    admitted_at: datetime.datetime | None  # None: the quota can never hold it while the work ahead runs
    starts_at: datetime.datetime | None
    admitted_before: int  # how many of the queue are admitted before it (at the same moment included)


class RunTimes:
    """How a team's runs end against what they said, as the ratio actual / expected hours: the finished runs give
    theirs, the runs still going give a lower bound (they have run at least so long), and the two together give
    the Kaplan-Meier estimate of the ratio's distribution. Leaving the runs still going out would measure only
    the runs that ended early enough to have ended, and every estimate would come out early. Fewer than
    MIN_RUNS_FOR_RATIO finished runs: `fallback` (everyone's), else runs end as said."""

    def __init__(self, finished: Iterable[tuple[float, float]], running: Iterable[tuple[float, float]] = (),
                 fallback: RunTimes | None = None) -> None:
        events = [actual / expected for expected, actual in finished if expected and expected > 0 and actual >= 0]
        censored = [ran / expected for expected, ran in running if expected and expected > 0 and ran >= 0]
        if len(events) < MIN_RUNS_FOR_RATIO:
            self.values, self.survival, self.longest = (
                (fallback.values, fallback.survival, fallback.longest) if fallback else ([], [], 0.0))
        else:
            self.values, self.survival = _kaplan_meier(events, censored)
            self.longest = max(events + censored)  # the longest run seen, ended or still going

    def ratios_beyond(self, ran: float = 0.0, slices: int = SLICES) -> tuple[float, ...]:
        """The ratio of a run known to have run at least `ran` (0: any run), as `slices` equally likely values: the
        middle of each slice of its distribution given that it ran so long. A run's end is spread over these rather
        than put at its mean, because what frees quota soonest is the earliest ends of many runs, and those are
        earlier than the earliest of their means (`queue_starts` plays the queue once for each)."""
        if not self.values:
            return (max(ran, 1.0),)
        ended = bisect.bisect_right(self.values, ran)
        alive = self.survival[ended - 1] if ended else 1.0
        if alive <= EPSILON:  # longer than every run seen: a tenth more than it has run
            return (ran * 1.1,)
        found = []
        for part in range(slices):
            target = alive * (1 - (part + 0.5) / slices)
            index = ended  # the first end at or after `ran` whose survival falls to the target
            low, high = ended, len(self.values)
            while low < high:
                middle = (low + high) // 2
                if self.survival[middle] <= target:
                    high = middle
                else:
                    low = middle + 1
            index = low
            # Beyond the last run that ended (runs still going hold the rest): a tenth beyond the longest seen.
            found.append(self.values[index] if index < len(self.values) else max(self.longest, ran) * 1.1)
        return tuple(found)

    def hours(self, expected: float | None) -> tuple[float, ...] | None:
        """A run's equally likely lengths before it starts."""
        return None if expected is None else tuple(expected * ratio for ratio in self.ratios_beyond(0.0))

    def ends(self, started_at: datetime.datetime, expected: float | None,
             now: datetime.datetime) -> tuple[datetime.datetime, ...]:
        """A running run's equally likely ends, given that it has run so long (none without expected hours)."""
        if expected is None:
            return ()
        ran = max((now - started_at).total_seconds(), 0.0) / 3600 / expected
        return tuple(max(started_at + datetime.timedelta(hours=expected * ratio), now)
                     for ratio in self.ratios_beyond(ran))


def _kaplan_meier(events: list[float], censored: list[float]) -> tuple[list[float], list[float]]:
    """The Kaplan-Meier estimate: the ratios runs ended at, ascending, and the survival just after each."""
    points = sorted([(value, True) for value in events] + [(value, False) for value in censored])
    at_risk, alive, index = len(points), 1.0, 0
    values, survival = [], []
    while index < len(points):
        value, ended, gone = points[index][0], 0, 0
        while index < len(points) and points[index][0] == value:
            ended += points[index][1]
            gone += 1
            index += 1
        if ended:
            alive *= 1 - ended / at_risk
            values.append(value)
            survival.append(alive)
        at_risk -= gone
    return values, survival


def queue_starts(*, now: datetime.datetime, quota: float, running: Sequence[Holding], queue: Sequence[Waiting],
                 startup: datetime.timedelta = datetime.timedelta(0), samples: int = SLICES,
                 arrivals: Sequence[tuple[datetime.datetime, Waiting]] = (),
                 cycle: datetime.timedelta = datetime.timedelta(0)) -> dict[Hashable, Start]:
    """The admission and start of every waiting workload, playing the ClusterQueue forward from `now` (see the
    module docstring) `samples` times, each run taking one of its equally likely ends (each end in turn, from a
    fixed shuffle, so the samples cover them evenly); a workload's estimate is the median of its samples. One pass
    is O((queued + running) x distinct sizes) and answers the whole queue. `arrivals` (when, what) join the queue
    behind it as time goes on: work expected to come, which takes quota a bigger workload ahead cannot use. With a
    `cycle`, admissions happen only every `cycle` from `now`, taking what ended meanwhile at once, as a queue
    controller that admits in rounds does (what ends between two rounds may together fit a big workload)."""
    shuffle = random.Random(0)
    held = [(holding, shuffle.randrange(len(holding.ends) or 1)) for holding in running]
    waiting = [(item, shuffle.randrange(len(item.hours or ()) or 1)) for item in queue]
    coming = [(at, item, shuffle.randrange(len(item.hours or ()) or 1)) for at, item in arrivals]

    def hours(item: Waiting, turn: int, offset: int) -> float | None:
        return item.hours[(turn + offset) % len(item.hours)] if item.hours else None

    passes = [_one_pass(now, quota, [(h.gpus, h.ends[(turn + offset) % len(h.ends)] if h.ends else None)
                                     for h, offset in held],
                        [(item.key, item.gpus, hours(item, turn, offset)) for item, offset in waiting], startup,
                        [(at, (item.key, item.gpus, hours(item, turn, offset))) for at, item, offset in coming],
                        cycle)
              for turn in range(max(samples, 1))]
    starts = {}
    for item in queue:
        admitted = [run[item.key] for run in passes]
        if any(moment is None for moment, _ in admitted):  # in some futures it never fits: no estimate
            starts[item.key] = Start(None, None, max(ahead for _, ahead in admitted))
            continue
        moment = _median_moment([moment for moment, _ in admitted])
        starts[item.key] = Start(moment, moment + startup, round(statistics.median(ahead for _, ahead in admitted)))
    return starts


def _median_moment(moments: list[datetime.datetime]) -> datetime.datetime:
    ordered = sorted(moments)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else ordered[middle - 1] + (ordered[middle] - ordered[middle - 1]) / 2


def _one_pass(now: datetime.datetime, quota: float, running: list[tuple[float, datetime.datetime | None]],
              queue: list[tuple[Hashable, float, float | None]], startup: datetime.timedelta,
              arrivals: list[tuple[datetime.datetime, tuple[Hashable, float, float | None]]],
              cycle: datetime.timedelta) -> dict[Hashable, tuple[datetime.datetime | None, int]]:
    """One future: each run ends at the one end given; -> key: (admitted at, how many were admitted before), for
    the queue's workloads (not for the arrivals)."""
    free = quota - sum(gpus for gpus, _ in running)
    releases = [(end, n, gpus) for n, (gpus, end) in enumerate(running) if end is not None]
    heapq.heapify(releases)
    sequence = len(releases)
    order = {key: index for index, (key, _, _) in enumerate(queue)}
    by_size: dict[float, deque] = {}
    for item in queue:
        by_size.setdefault(item[1], deque()).append(item)
    coming = deque(sorted(arrivals, key=lambda arrival: arrival[0]))
    found: dict[Hashable, tuple[datetime.datetime | None, int]] = {}
    moment, admitted, left = now, 0, len(queue)
    while left:
        # Admit, in queue order, every workload that fits what is free now.
        while True:
            fitting = [items[0] for size, items in by_size.items() if size <= free + EPSILON]
            if not fitting:
                break
            key, gpus, hours = min(fitting, key=lambda item: order[item[0]])
            by_size[gpus].popleft()
            if not by_size[gpus]:
                del by_size[gpus]
            free -= gpus
            if order[key] < len(queue):  # one of the queue's (not an arrival)
                found[key] = (moment, admitted)
                left -= 1
            admitted += 1
            if hours is not None:
                sequence += 1
                heapq.heappush(releases, (moment + startup + datetime.timedelta(hours=hours), sequence, gpus))
        if not left or not releases:
            break
        # Nothing more fits: on to the next end of running work (with a cycle, the next round after it: all that
        # ended by then), letting in the work that arrives meanwhile.
        moment, _, gpus = heapq.heappop(releases)
        if cycle:
            moment = now + cycle * math.ceil((moment - now) / cycle)
        free += gpus
        while releases and releases[0][0] <= moment:
            free += heapq.heappop(releases)[2]
        while coming and coming[0][0] <= moment:
            _, item = coming.popleft()
            order[item[0]] = len(order)
            by_size.setdefault(item[1], deque()).append(item)
    for key, _, _ in queue:  # what never fits while the known work runs
        found.setdefault(key, (None, admitted))
    return found


@dataclass(frozen=True)
class Queued:
    """A workload waiting in the ClusterQueue, as the portal knows it."""

    key: Hashable
    team: str
    gpus: float
    expected_hours: float | None  # what the request said (or the team's median run, when it said nothing)


@dataclass(frozen=True)
class Admitted:
    """A workload holding quota: running since `started_at`, or admitted at `admitted_at` and starting."""

    team: str
    gpus: float
    admitted_at: datetime.datetime
    started_at: datetime.datetime | None
    expected_hours: float | None


def estimate_queue(*, now: datetime.datetime, quota: float, queue: Sequence[Queued], admitted: Sequence[Admitted],
                   finished: dict[str, Sequence[tuple[float, float]]],
                   startup: datetime.timedelta = datetime.timedelta(0), arrived: Sequence[Queued] = (),
                   arrived_over: datetime.timedelta = datetime.timedelta(hours=1),
                   cycle: datetime.timedelta = datetime.timedelta(0)) -> dict[Hashable, Start]:
    """The start of every workload in the queue: each team's run times measured by its finished runs (`finished`:
    team -> (expected hours, actual hours)) and its runs still going (a team with too few finished uses
    everyone's), the admitted work's ends given how long it has run, then the queue played forward
    (`queue_starts`) with the work that keeps arriving: as much, as often and of the same kinds as `arrived`
    (what was submitted over the last `arrived_over`), one after the other in that order, admitted in rounds of
    `cycle` (see `admission_cycle`)."""
    going: dict[str, list[tuple[float, float]]] = {}
    for work in admitted:
        if work.started_at is not None and work.expected_hours:
            going.setdefault(work.team, []).append(
                (work.expected_hours, max((now - work.started_at).total_seconds(), 0) / 3600))
    everyone = RunTimes([run for runs in finished.values() for run in runs],
                        [run for runs in going.values() for run in runs])
    teams = {team: RunTimes(runs, going.get(team, ()), fallback=everyone) for team, runs in finished.items()}

    def times(team: str) -> RunTimes:
        return teams.get(team, everyone)

    running = []
    for work in admitted:
        if work.started_at is not None:
            ends = times(work.team).ends(work.started_at, work.expected_hours, now)
        else:
            begins = max(work.admitted_at + startup, now)
            ends = tuple(begins + datetime.timedelta(hours=h) for h in times(work.team).hours(work.expected_hours)
                         or ())
        running.append(Holding(work.gpus, ends))
    waiting = [Waiting(work.key, work.gpus, times(work.team).hours(work.expected_hours)) for work in queue]
    arrivals = []
    if arrived:
        gap = arrived_over / len(arrived)
        horizon = now + max(ARRIVALS_HORIZON, gap * len(queue) * 3)
        moment, turn = now + gap, 0
        while moment <= horizon:
            work = arrived[turn % len(arrived)]
            arrivals.append((moment, Waiting(("arriving", turn), work.gpus, times(work.team).hours(work.expected_hours))))
            moment, turn = moment + gap, turn + 1
    return queue_starts(now=now, quota=quota, running=running, queue=waiting, startup=startup, arrivals=arrivals,
                        cycle=cycle)


def admission_cycle(admitted_at: Iterable[datetime.datetime]) -> datetime.timedelta:
    """How often the queue admits, from when it admitted lately: the median gap between the distinct moments of
    admission (several workloads admitted in one round share their moment)."""
    moments = sorted(set(admitted_at))
    gaps = [later - earlier for earlier, later in zip(moments, moments[1:], strict=False)]
    return statistics.median(gaps) if gaps else datetime.timedelta(0)


def depth_over_throughput(*, now: datetime.datetime, position: int, admitted_per_minute: float
                          ) -> datetime.datetime | None:
    """Queue depth divided by throughput: `position` (0: the head) workloads ahead, admitted at the rate seen
    lately, then this one."""
    if admitted_per_minute <= 0:
        return None
    return now + datetime.timedelta(minutes=(position + 1) / admitted_per_minute)
