"""A Kueue GPU fleet at the scale of kubernetes-sigs/kueue#14477, played on a simulated clock: 1,300 nodes of
8 GPUs, one ClusterQueue holding their 10,400 GPUs as quota, the LocalQueues of four teams, a mixed queue of
gangs and single pods held around 536 deep and admitted about 9.6 a minute, every run ending early or late
against the hours its team said (each team its own habit, each run its own noise).

The cluster side is the simulated cluster's (kubesim): Kueue's BestEffortFIFO admission by quota (as kubesim.kueue
does it, over every waiting workload in creation order), then kube-scheduler's bin packing of each admitted
workload's pods onto nodes (the fewest free GPUs left that fit, as kubesim.scheduler.pick_node; here over a free-
GPU index, since 1,300 node dicts per pod would take hours), then the kubelet starting them after an image pull.
It runs without the HTTP fake on purpose: at this size every LIST of the fake would copy thousands of objects.

`Observation` is what the portal can know at a moment and nothing more: the ClusterQueue's order and quota (the
visibility API and the ClusterQueue), what each admitted workload holds and since when (Workload conditions, pod
start times), what each team said its runs would take (the requests' expected_hours) and what its finished runs
took (their starts and ends). `bench/eta.py --trace fleet` reads one every minute and asks the estimators.
"""
from __future__ import annotations

import math
import random
import statistics
from collections import deque
from dataclasses import dataclass, field

NODES, GPUS_PER_NODE = 1300, 8
TEAMS = {"vision": 0.8, "nlp": 1.25, "recsys": 1.0, "speech": 0.9}  # median actual / expected of the team's runs
RUN_NOISE = 0.25  # sigma of each run's log-normal deviation from its team's habit
# (pods, GPUs a pod, weight): single pods of 1 to 8 GPUs and gangs of 2 to 8 whole-node pods.
SHAPES = ((1, 1, 15), (1, 2, 10), (1, 4, 10), (1, 8, 25), (2, 8, 20), (4, 8, 15), (8, 8, 5))
HOURS = ((0.5, 32), (1.0, 30), (1.5, 19), (2.0, 11), (3.0, 8))  # expected_hours said, and how often
PULL_SECONDS = (20.0, 90.0)  # image pull and container start, uniform
TARGET_DEPTH, TARGET_RATE = 536, 9.6  # kubernetes-sigs/kueue#14477: workloads queued, admitted a minute
PRIOR_RUNS = 1000  # finished runs before the trace starts (what the portal has seen of each team)


@dataclass(eq=False)
class Work:
    key: int
    team: str
    pods: int
    gpus_per_pod: int
    expected_hours: float
    actual_hours: float
    submitted: float  # seconds on the simulated clock
    admitted: float | None = None
    placed: float | None = None
    started: float | None = None  # every pod running
    ended: float | None = None
    nodes: list[int] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod


@dataclass(frozen=True)
class Observation:
    """What the portal can know at `now` (seconds)."""

    now: float
    quota: int
    queue: tuple[Work, ...]  # waiting, in the ClusterQueue's order (positionInClusterQueue = index)
    admitted: tuple[Work, ...]  # holding quota: running, or admitted and not running yet
    finished: tuple[tuple[str, float, float], ...]  # (team, expected hours, actual hours) of every ended run
    startup_seconds: float  # median admission-to-running delay of the last runs that started
    admitted_last_30_min: int
    admission_times: tuple[float, ...]  # when the queue admitted over the last 30 minutes (one per workload)
    arrived: tuple[Work, ...]  # submitted over the last hour (their Workloads' creation times)


class FleetTrace:
    """The fleet and its workload, deterministic for a seed. `step()` moves the clock by `tick` seconds."""

    def __init__(self, *, seed: int = 14477, nodes: int = NODES, tick: float = 30.0, warmup_hours: float = 1.0,
                 window_hours: float = 2.0) -> None:
        self.rng = random.Random(seed)
        self.tick, self.now = tick, 0.0
        self.quota = nodes * GPUS_PER_NODE
        self.free = [GPUS_PER_NODE] * nodes
        self.by_free: list[set[int]] = [set() for _ in range(GPUS_PER_NODE + 1)]
        self.by_free[GPUS_PER_NODE] = set(range(nodes))
        self.used_quota = 0
        self.queue: list[Work] = []  # waiting for quota, creation order
        self.unplaced: list[Work] = []  # admitted, pods not bound yet
        self.holding: dict[int, Work] = {}  # admitted and not ended
        self.works: list[Work] = []
        self.finished: list[tuple[str, float, float]] = []
        self.startups: deque[float] = deque(maxlen=200)
        self.admissions: deque[float] = deque()
        self.window = (warmup_hours * 3600, (warmup_hours + window_hours) * 3600)
        # The arrival rate that keeps the queue where it is at full quota: the quota over a workload's GPU-hours.
        self.rate_per_second = self.quota / self._mean_gpu_hours() / 3600
        # The trace starts in the middle of the cluster's life: days of finished runs behind it, the quota full of
        # runs part-way through (long runs more likely, as in any snapshot), and the queue TARGET_DEPTH deep.
        for _ in range(PRIOR_RUNS):
            work = self._draw(-86400.0)
            self.finished.append((work.team, work.expected_hours, work.actual_hours))
        longest = max(h for h, _ in HOURS) * max(TEAMS.values()) * math.exp(3 * RUN_NOISE)
        misses = 0
        while misses < 50:  # until the quota is full to within what the smallest workloads leave
            work = self._draw(-86400.0)
            if self.rng.random() > work.actual_hours / longest:
                continue  # sampled as a snapshot samples: in proportion to how long it runs
            if self.used_quota + work.gpus > self.quota or not self._fits(work):
                misses += 1
                continue
            self.works.append(work)
            self._admitted(work, at=-self.rng.uniform(0, work.actual_hours * 3600))
            self._bind(work, started=work.admitted)
        depth = TARGET_DEPTH * nodes // NODES
        for n in range(depth):
            self._submit(-depth / (self.rate_per_second * 60) * 60 * (1 - n / depth))
        self._next_arrival = self.rng.expovariate(self.rate_per_second)
        self._admit()

    # -- the workload ------------------------------------------------------------------------------------------

    def _mean_gpus(self) -> float:
        total = sum(w for *_, w in SHAPES)
        return sum(p * g * w for p, g, w in SHAPES) / total

    def _mean_gpu_hours(self) -> float:
        habit = statistics.mean(TEAMS.values()) * math.exp(RUN_NOISE ** 2 / 2)
        hours = sum(h * w for h, w in HOURS) / sum(w for _, w in HOURS)
        return self._mean_gpus() * hours * habit

    def _draw(self, at: float) -> Work:
        rng = self.rng
        pods, gpus_per_pod, _ = rng.choices(SHAPES, weights=[w for *_, w in SHAPES])[0]
        hours = rng.choices([h for h, _ in HOURS], weights=[w for _, w in HOURS])[0]
        team = rng.choice(sorted(TEAMS))
        actual = hours * TEAMS[team] * math.exp(rng.gauss(0.0, RUN_NOISE))
        return Work(len(self.works), team, pods, gpus_per_pod, hours, actual, at)

    def _submit(self, at: float) -> Work:
        work = self._draw(at)
        self.works.append(work)
        self.queue.append(work)
        return work

    # -- the cluster -------------------------------------------------------------------------------------------

    def step(self) -> None:
        self.now += self.tick
        for work in [w for w in self.holding.values() if w.started is not None and w.started
                     + w.actual_hours * 3600 <= self.now]:
            self._end(work)
        while self._next_arrival <= self.now:
            self._submit(self._next_arrival)
            self._next_arrival += self.rng.expovariate(self.rate_per_second)
        self._admit()
        self._place()
        while self.admissions and self.admissions[0] <= self.now - 1800:
            self.admissions.popleft()

    def _admit(self) -> None:
        """Kueue, BestEffortFIFO: every waiting workload that fits the unused quota, in creation order."""
        waiting = []
        for work in self.queue:
            if self.used_quota + work.gpus <= self.quota:
                self._admitted(work, at=self.now)
                self.unplaced.append(work)
                self.admissions.append(self.now)
            else:
                waiting.append(work)
        self.queue = waiting

    def _admitted(self, work: Work, *, at: float) -> None:
        self.used_quota += work.gpus
        work.admitted = at
        self.holding[work.key] = work

    def _place(self) -> None:
        """kube-scheduler: bind the pods of each admitted workload, in admission order, when they all fit (best
        fit), and the kubelet starts them after the image pull."""
        left = []
        for work in self.unplaced:
            if not self._fits(work):
                left.append(work)
                continue
            self._bind(work, started=self.now + self.rng.uniform(*PULL_SECONDS))
            self.startups.append(work.started - work.admitted)
        self.unplaced = left

    def _bind(self, work: Work, *, started: float) -> None:
        for _ in range(work.pods):
            node = self._best_node(work.gpus_per_pod)
            self._take(node, work.gpus_per_pod)
            work.nodes.append(node)
        work.placed, work.started = min(self.now, started), started

    def _fits(self, work: Work) -> bool:
        room = sum(len(self.by_free[free]) * (free // work.gpus_per_pod)
                   for free in range(work.gpus_per_pod, GPUS_PER_NODE + 1))
        return room >= work.pods

    def _best_node(self, gpus: int) -> int:
        for free in range(gpus, GPUS_PER_NODE + 1):
            if self.by_free[free]:
                return min(self.by_free[free])
        raise AssertionError("checked by _fits")

    def _take(self, node: int, gpus: int) -> None:
        self.by_free[self.free[node]].discard(node)
        self.free[node] -= gpus
        self.by_free[self.free[node]].add(node)

    def _end(self, work: Work) -> None:
        work.ended = work.started + work.actual_hours * 3600
        for node in work.nodes:
            self._take(node, -work.gpus_per_pod)
        self.used_quota -= work.gpus
        del self.holding[work.key]
        self.finished.append((work.team, work.expected_hours, (work.ended - work.started) / 3600))

    # -- what the portal sees ----------------------------------------------------------------------------------

    def observe(self) -> Observation:
        startups = list(self.startups)
        return Observation(now=self.now, quota=self.quota, queue=tuple(self.queue),
                           admitted=tuple(self.holding.values()), finished=tuple(self.finished),
                           startup_seconds=statistics.median(startups) if startups else 0.0,
                           admitted_last_30_min=len(self.admissions), admission_times=tuple(self.admissions),
                           arrived=tuple(w for w in self.works if self.now - 3600 <= w.submitted <= self.now))

    def measured(self) -> list[Work]:
        """The workloads submitted in the measurement window."""
        start, end = self.window
        return [w for w in self.works if start <= w.submitted < end]


def play(trace: FleetTrace, estimators, *, every_ticks: int = 2, max_hours: float = 12.0) -> dict:
    """Run the trace until every workload of the measurement window has started, asking each estimator
    (name -> callable(Observation) -> {work key: estimated start in seconds, or None}) every `every_ticks` ticks.
    Returns, per estimator, (work, reading time, estimate) of each work's first reading after its submission, and
    of every reading."""
    first: dict[str, dict[int, tuple[Work, float, float | None]]] = {name: {} for name in estimators}
    every: dict[str, list[tuple[Work, float, float | None]]] = {name: [] for name in estimators}
    start, end = trace.window
    while trace.now < max_hours * 3600:
        trace.step()
        measured = [w for w in trace.works if start <= w.submitted < end]
        if trace.now >= end and all(w.started is not None for w in measured):
            break
        ticks = round(trace.now / trace.tick)
        new = [w for w in trace.queue if start <= w.submitted < end and w.key not in first[next(iter(first))]]
        if not new and ticks % every_ticks:
            continue
        observation = trace.observe()
        for name, estimator in estimators.items():
            estimates = estimator(observation)
            for work in observation.queue:
                if start <= work.submitted < end:
                    reading = (work, trace.now, estimates.get(work.key))
                    first[name].setdefault(work.key, reading)
                    every[name].append(reading)
    return {"first": {name: list(rows.values()) for name, rows in first.items()}, "every": every}


def errors(rows) -> list[float]:
    """|estimate - actual start| / the actual wait (submission to start) of each reading of a work that started
    after waiting; an estimate of None counts as wrong by the whole wait."""
    found = []
    for work, read_at, estimate in rows:
        if work.started is None or work.started - work.submitted < 1.0:
            continue
        found.append(abs((estimate if estimate is not None else read_at) - work.started) /
                     (work.started - work.submitted))
    return found


def nearest_rank(values: list[float], share: float) -> float:
    """The `share` percentile of `values` by nearest rank (0.5: the median, 0.9: p90)."""
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]
