"""The status rules: a request's pods (as facts) and what the portal knows of the request -> the status it should
have, why (in plain words), the events to record, and the state of its gang. Pure and deterministic: `now` is
given, nothing is read or written.

The rules, in the order they are applied (the first that holds decides):

1. **No pods.** A request whose pods are all gone keeps its status until `no_pods_fail_after` has passed since
   they went (or, for a request still `provisioning`, since provisioning started; a queue such as Kueue holds a
   suspended Job without pods meanwhile), then it is `failed`.
2. **Training completes** when every index of its Indexed Job (`completions = replicas`) has a Succeeded pod.
3. **Training fails** when more pods failed than the Job's backoff limit (3) allows. Pods the cluster took away
   (evicted, preempted, drained: the `DisruptionTarget` condition) do not count, as in the Job's
   `podFailurePolicy`.
4. **An image that cannot be pulled** fails the request once a pod has waited `image_pull_fail_after` for it
   (`ImagePullBackOff`, `ErrImagePull`), or at once when it never can be (`InvalidImageName`,
   `ErrImageNeverPull`); the request's objects are then deleted, since scheduled pods hold their GPUs while
   they wait. A serving request that is already running is not failed for one replica that cannot pull (the
   others keep serving); the event says why it does not start.
5. **Gang requests** (decision `gang` not null):
   - a request `stalled` for `release_after` (per workload class; none = never) is released: its objects are
     deleted and it is `failed`;
   - the gang is **whole** when at least `min_members` of its indexes are Running or Succeeded, one of them
     Running: `running`;
   - the gang is **partial** when some pods run while others are Pending; once it has been partial for
     `stall_after` (per workload class) the request is `stalled`. A stalled request stays stalled until its gang
     is whole again, completes, fails or is released.
6. **Running**: training without a gang when all its indexes run (or have finished); inference and development
   when `replicas` pods are Running and Ready.
7. Otherwise the request keeps its status: there is no edge back to `provisioning`, and a serving request whose
   replica is being replaced is still running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gpu.vocabulary import COMPLETED, DEVELOPMENT, INFERENCE, PROVISIONING, STALLED, TRAINING
from gpu.vocabulary import FAILED as STATUS_FAILED
from gpu.vocabulary import RUNNING as STATUS_RUNNING

from ..manifests.workloads import TRAINING_BACKOFF_LIMIT
from .facts import FAILED, IMAGE_PULL_HOPELESS, IMAGE_PULL_RETRYING, PENDING, RUNNING, SUCCEEDED, PodFact
from .words import PlainEvent, Preemptor, pod_events, termination_words, waiting_for_node_words

# The request statuses these rules deal in; the pods' phases (Running, Failed) are facts.RUNNING and facts.FAILED.
RECONCILED_STATUSES = frozenset({PROVISIONING, STATUS_RUNNING, STALLED})
SERVING_CLASSES = frozenset({INFERENCE, DEVELOPMENT})
_PHASE_RANK = {SUCCEEDED: 4, RUNNING: 3, PENDING: 2, FAILED: 1}


@dataclass(frozen=True)
class RequestContext:
    """What the portal knows of a request that its pods do not say."""

    request_id: int
    status: str
    workload_class: str
    replicas: int
    gang_min_members: int | None  # None: no gang
    status_changed_at: datetime
    pods_missing_since: datetime | None = None
    stalled_since: datetime | None = None  # when the open stall was declared


@dataclass(frozen=True)
class Thresholds:
    stall_after: timedelta
    release_after: timedelta | None
    image_pull_fail_after: timedelta
    no_pods_fail_after: timedelta | None
    backoff_limit: int = TRAINING_BACKOFF_LIMIT


@dataclass(frozen=True)
class PendingPod:
    name: str
    since: datetime | None
    reason: str
    words: str  # "is waiting for a node: 0/12 nodes are available: ..."


@dataclass(frozen=True)
class GangState:
    members: int  # how many must run together
    running_pods: int
    pending_pods: int
    gpu_equivalents_running: Decimal
    whole: bool
    partial: bool  # some pods run while others are Pending
    partial_since: datetime | None  # when the running pods started waiting for the pending ones
    pending: tuple[PendingPod, ...] = ()
    nodes: tuple[str, ...] = ()  # where the running pods are


@dataclass(frozen=True)
class Assessment:
    request_id: int
    current: str
    target: str
    reason: str  # machine-readable: AllRunning, Completed, GangStalled, ImagePullFailed, ...
    comment: str  # plain words, for the transition event and notifications
    events: tuple[PlainEvent, ...] = ()
    gang: GangState | None = None
    pods_missing_since: datetime | None = None  # set while the request has no pods at all
    teardown: bool = False  # delete the request's objects (they hold GPUs for nothing)

    @property
    def changed(self) -> bool:
        return self.target != self.current


def duration_words(delta: timedelta) -> str:
    """12 s, 15 min, 2 h 5 min, 3 d 4 h."""
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 3600:
        return f"{minutes} min"
    if seconds < 86400:
        rest = minutes - hours * 60
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    rest = hours - days * 24
    return f"{days} d {rest} h" if rest else f"{days} d"


def decimal_words(value: Decimal) -> str:
    """12.500000 -> "12.5", 10.000000 -> "10" (never "1E+1")."""
    return f"{value.normalize():f}" if value else "0"


def equivalents_words(value: Decimal) -> str:
    return f"{decimal_words(value)} GPU-equivalent{'' if value == 1 else 's'}"


def _pending_reason(pod: PodFact) -> tuple[str, str]:
    for container in pod.containers:
        if container.waiting_reason and container.waiting_reason != "ContainerCreating":
            detail = f": {container.waiting_message}" if container.waiting_message else ""
            reason = container.waiting_reason
            return reason, f"container {container.name} is waiting ({reason}){detail}"
    if pod.scheduled is False or not pod.node:
        return pod.unschedulable_reason or "Unschedulable", waiting_for_node_words(pod)
    return "Starting", f"is scheduled on {pod.node} and starting"


def _index_key(pod: PodFact) -> object:
    return pod.completion_index if pod.completion_index is not None else pod.name


def _best_by_index(pods: Sequence[PodFact]) -> dict[object, str]:
    """Per Job index (or pod, outside Jobs), the most advanced phase any of its pods reached."""
    best: dict[object, str] = {}
    for pod in pods:
        key = _index_key(pod)
        if _PHASE_RANK.get(pod.phase, 0) > _PHASE_RANK.get(best.get(key, ""), 0):
            best[key] = pod.phase
    return best


def gang_state(pods: Sequence[PodFact], members: int) -> GangState:
    live = [p for p in pods if not p.deleting]
    running = [p for p in live if p.phase == RUNNING]
    best = _best_by_index(live)
    pending_keys = {k for k, phase in best.items() if phase == PENDING}
    pending = [p for p in live if p.phase == PENDING and _index_key(p) in pending_keys]
    active = sum(1 for phase in best.values() if phase in (RUNNING, SUCCEEDED))
    partial = bool(running) and bool(pending)
    partial_since = None
    if partial:
        running_since = min((p.running_since for p in running if p.running_since), default=None)
        pending_since = min((p.pending_since for p in pending if p.pending_since), default=None)
        known = [t for t in (running_since, pending_since) if t is not None]
        partial_since = max(known) if known else None
    return GangState(
        members=members,
        running_pods=len(running),
        pending_pods=len(pending),
        gpu_equivalents_running=sum((p.gpu_equivalents for p in running), Decimal(0)),
        whole=bool(running) and active >= members,
        partial=partial,
        partial_since=partial_since,
        pending=tuple(PendingPod(p.name, p.pending_since, *_pending_reason(p)) for p in pending),
        nodes=tuple(sorted({p.node for p in running if p.node})),
    )


def _stuck_on_image(pods: Sequence[PodFact], thresholds: Thresholds, now: datetime):
    for pod in pods:
        if pod.phase in (SUCCEEDED, FAILED) or pod.deleting:
            continue
        for container in pod.containers:
            waited = now - pod.created_at if pod.created_at else timedelta(0)
            if container.waiting_reason in IMAGE_PULL_HOPELESS or (
                container.waiting_reason in IMAGE_PULL_RETRYING and waited >= thresholds.image_pull_fail_after
            ):
                return pod, container, waited
    return None


def _last_failure_words(failures: Sequence[PodFact]) -> str:
    last = max(failures, key=lambda p: (p.created_at.timestamp() if p.created_at else 0.0, p.name))
    for container in last.containers:
        termination = container.terminated or container.last_terminated
        if termination is not None and not termination.succeeded:
            return f"pod {last.name}: {termination_words(container, termination)}"
    return f"pod {last.name}: {last.message or last.reason or 'failed'}"


def _gang_stalled_words(gang: GangState, now: datetime, stall_after: timedelta, workload_class: str) -> str:
    since = gang.partial_since or now
    pending = "; ".join(f"pod {p.name} {p.words}" for p in gang.pending[:3])
    more = f" (and {len(gang.pending) - 3} more)" if len(gang.pending) > 3 else ""
    return (
        f"{gang.running_pods} of {gang.members} pods of the gang are running while {gang.pending_pods} "
        f"{'has' if gang.pending_pods == 1 else 'have'} been Pending for {duration_words(now - since)} "
        f"(the {workload_class} threshold is {duration_words(stall_after)}): {pending}{more}. The running pods hold "
        f"{equivalents_words(gang.gpu_equivalents_running)} that cannot do their work until the whole gang runs."
    )


def assess(pods: Sequence[PodFact], ctx: RequestContext, thresholds: Thresholds, now: datetime,
           preemptors: Mapping[str, Preemptor] | None = None) -> Assessment:
    """The status a request should have given its pods (see the module docstring for the rules); `preemptors`
    (`words.preemptors_by_node`) names who a preempted pod made room for."""
    preemptors = preemptors or {}
    events = tuple(event for pod in pods for event in pod_events(pod, preemptors.get(pod.node)))
    members = ctx.gang_min_members or 0
    gang = gang_state(pods, members) if members else None

    def decide(target: str, reason: str, comment: str, **extra) -> Assessment:
        return Assessment(ctx.request_id, ctx.status, target, reason, comment, events, gang, **extra)

    def keep(reason: str = "", comment: str = "", **extra) -> Assessment:
        return decide(ctx.status, reason, comment, **extra)

    # 1. No pods at all.
    if not pods:
        since = ctx.pods_missing_since or (ctx.status_changed_at if ctx.status == PROVISIONING else now)
        limit = thresholds.no_pods_fail_after
        if limit and now - since >= limit:
            if ctx.status == PROVISIONING:
                words = (f"No pod of this request appeared on the cluster within {duration_words(now - since)} of "
                         "provisioning; check the request's objects and the cluster's events.")
            else:
                words = (f"All pods of this request have been gone from the cluster for {duration_words(now - since)} "
                         "(deleted outside the portal?).")
            return decide(STATUS_FAILED, "NoPods", words, pods_missing_since=since, teardown=True)
        return keep("NoPods", pods_missing_since=since)

    live = [p for p in pods if not p.deleting]
    best = _best_by_index(live)

    if ctx.workload_class == TRAINING:
        # 2. Completion: every index succeeded.
        succeeded = sum(1 for phase in best.values() if phase == SUCCEEDED)
        if succeeded >= ctx.replicas:
            return decide(COMPLETED, "Completed",
                          f"All {ctx.replicas} pods of the training job completed successfully." if ctx.replicas != 1
                          else "The training job's pod completed successfully.")
        # 3. Failure beyond the Job's backoff limit.
        failures = [p for p in pods if p.counts_as_failure]
        if len(failures) > thresholds.backoff_limit:
            return decide(STATUS_FAILED, "BackoffLimitExceeded",
                          f"The training job gave up: {len(failures)} pods failed, more than its backoff limit of "
                          f"{thresholds.backoff_limit} allows. The last one: {_last_failure_words(failures)}.")

    # 4. Images that cannot be pulled.
    stuck = _stuck_on_image(live, thresholds, now)
    if stuck and not (ctx.workload_class in SERVING_CLASSES and ctx.status == STATUS_RUNNING):
        pod, container, waited = stuck
        detail = f": {container.waiting_message}" if container.waiting_message else ""
        return decide(STATUS_FAILED, "ImagePullFailed",
                      f"Pod {pod.name} could not pull image {container.image} for {duration_words(waited)} "
                      f"({container.waiting_reason}{detail}). The request's objects are removed so that they hold no "
                      "GPUs; submit a new request with an image the cluster can pull.", teardown=True)

    # 5. Gangs.
    if gang is not None:
        release_after = thresholds.release_after
        if (ctx.status == STALLED and ctx.stalled_since and release_after and not gang.whole
                and now - ctx.stalled_since >= release_after):
            return decide(STATUS_FAILED, "GangReleased",
                          f"Released after {duration_words(now - ctx.stalled_since)} stalled (the {ctx.workload_class} "
                          f"policy releases a stalled gang after {duration_words(release_after)}): only "
                          f"{gang.running_pods} of {gang.members} pods ever ran together. Its objects are deleted "
                          "to free the GPUs; submit the request again when the cluster has room for the whole "
                          "gang.", teardown=True)
        if gang.whole:
            if ctx.status == STATUS_RUNNING:
                return keep("AllRunning")
            where = f" on {', '.join(gang.nodes)}" if gang.nodes else ""
            return decide(STATUS_RUNNING, "AllRunning",
                          f"All {gang.members} pods of the gang are running{where}.")
        if gang.partial and gang.partial_since and now - gang.partial_since >= thresholds.stall_after:
            words = _gang_stalled_words(gang, now, thresholds.stall_after, ctx.workload_class)
            return decide(STALLED, "GangStalled", words) if ctx.status != STALLED else keep("GangStalled", words)
        return keep("GangStalled" if ctx.status == STALLED else "Waiting")

    # 6. Running without a gang.
    if ctx.workload_class == TRAINING:
        active = [k for k, phase in best.items() if phase in (RUNNING, SUCCEEDED)]
        if len(active) >= ctx.replicas and any(phase == RUNNING for phase in best.values()):
            if ctx.status == STATUS_RUNNING:
                return keep("AllRunning")
            return decide(STATUS_RUNNING, "AllRunning",
                          f"{'All ' + str(ctx.replicas) + ' pods are' if ctx.replicas > 1 else 'The pod is'} running.")
    else:
        ready = [p for p in live if p.phase == RUNNING and p.ready]
        if len(ready) >= ctx.replicas:
            if ctx.status == STATUS_RUNNING:
                return keep("AllReady")
            return decide(STATUS_RUNNING, "AllReady", f"{len(ready)} of {ctx.replicas} replicas are running and ready.")
    # 7. Nothing decides: keep the status.
    return keep("Waiting")
