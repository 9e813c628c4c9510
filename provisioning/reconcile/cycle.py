"""One reconciliation cycle: apply what the pure rules (`facts`, `rules`, `words`) derive from one observation of a
cluster's pods to the requests on it: events, status changes, since when a request has had no pod.

`status_reconcile(cluster=, pods=, now=)` takes a fixed number of queries whatever the number of pods (the
policies and the open stalls; then, per chunk of `REQUEST_CHUNK` active requests, the requests and the known event
keys, and one statement inserting the new events), and the requests that change cost a few statements per batch
of `WRITE_BATCH`, whatever the batch holds: status changes through `intake.services.request_transition_many`, then
their stall records, events and notices (`stalls`) in bulk. Requests are taken a chunk at a time, so that what a
cycle holds beside the pods' facts (`store.PodStore`) does not grow with the cluster.
"""
from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections, transaction

from intake import events
from intake.choices import RequestStatus, WorkloadClass
from intake.models import GpuRequest
from intake.services import TransitionChange, request_transition_many

from ..choices import JobKind
from ..models import Cluster, GangPolicy, GangStall, ProvisioningJob
from .facts import PodFact, facts_by_request
from .preemptions import PREEMPTED, preemptions_notify
from .rules import RECONCILED_STATUSES, Assessment, RequestContext, Thresholds, assess
from .stalls import _close_orphan_stalls, _segment_changed, stalls_write
from .store import PodStore
from .words import preemptors_by_node

logger = logging.getLogger(__name__)

# Requests whose status or stall changes are written this many per transaction.
WRITE_BATCH = 100
# Requests assessed, and their events recorded, this many at a time.
REQUEST_CHUNK = 1000


# --- thresholds -------------------------------------------------------------------------------------------------


def gang_thresholds() -> dict[str, Thresholds]:
    """The thresholds of each workload class: its GangPolicy row (one query) and the settings."""
    policies = {p.workload_class: p for p in GangPolicy.objects.all()}
    image_pull = timedelta(seconds=settings.PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS)
    no_pods = settings.PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS
    thresholds = {}
    for workload_class in WorkloadClass.values:
        policy = policies.get(workload_class)
        release = policy.release_after_seconds if policy else None
        stall = policy.stall_after_seconds if policy else settings.PORTAL_GANG_STALL_AFTER_SECONDS
        thresholds[workload_class] = Thresholds(
            stall_after=timedelta(seconds=stall),
            release_after=timedelta(seconds=release) if release else None,
            image_pull_fail_after=image_pull,
            no_pods_fail_after=timedelta(seconds=no_pods) if no_pods else None,
        )
    return thresholds


def _context(gpu_request: GpuRequest, stall: GangStall | None) -> RequestContext:
    decision = gpu_request.decision
    gang = decision.gang
    return RequestContext(
        request_id=gpu_request.pk,
        status=gpu_request.status,
        workload_class=gpu_request.workload_class,
        replicas=int(decision.replicas or 1),
        gang_min_members=int(gang.min_members) if gang else None,
        status_changed_at=gpu_request.status_changed_at,
        pods_missing_since=gpu_request.pods_missing_since,
        stalled_since=stall.detected_at if stall else None,
    )


# --- one cycle --------------------------------------------------------------------------------------------------


@dataclass
class CycleOutcome:
    pods: int = 0
    requests: int = 0
    events: int = 0
    transitions: list[tuple[int, str, str]] = field(default_factory=list)  # (request id, from, to)
    stalls_opened: int = 0
    stalls_closed: int = 0
    ignored_pods: int = 0  # pods of requests that are not being reconciled here (finished, cancelled, unknown)


def _active_chunks(cluster: Cluster, request_ids: Iterable[int] | None) -> Iterator[list[GpuRequest]]:
    """The requests applied to this cluster whose status pods decide, `REQUEST_CHUNK` at a time in id order (one
    query a chunk: what a cycle holds does not grow with the requests either)."""
    queryset = GpuRequest.objects.filter(
        status__in=sorted(RECONCILED_STATUSES),
        pk__in=ProvisioningJob.objects.filter(cluster=cluster, kind=JobKind.APPLY).values("request_id"),
    ).select_related("team").only(
        "id", "name", "status", "workload_class", "decision", "status_changed_at", "pods_missing_since",
        "team__slug", "team__notification_email", "team__webhook_url",
    ).order_by("pk")  # fmt: skip
    if request_ids is not None:
        queryset = queryset.filter(pk__in=list(request_ids))
    after = 0
    while True:
        # One row more than a chunk says whether another chunk follows, without a query that finds none.
        rows = list(queryset.filter(pk__gt=after)[:REQUEST_CHUNK + 1])
        yield rows[:REQUEST_CHUNK]
        if len(rows) <= REQUEST_CHUNK:
            return
        after = rows[REQUEST_CHUNK - 1].pk


def status_reconcile(*, cluster: Cluster, pods: Iterable[Mapping[str, Any]], now: datetime,
                     request_ids: Iterable[int] | None = None) -> CycleOutcome:
    """Apply one observation of the cluster's pods to the requests on it.

    `pods` are all the portal's pods on the cluster, or, with `request_ids`, all the pods of those requests (a
    request absent from `pods` has none); they are read one at a time and kept only as their facts."""
    facts = facts_by_request(pods, label_domain=settings.PORTAL_LABEL_DOMAIN)
    return status_reconcile_facts(cluster=cluster, facts=facts, now=now, request_ids=request_ids)


def status_reconcile_facts(*, cluster: Cluster, facts: Mapping[int, Sequence[PodFact]], now: datetime,
                           request_ids: Iterable[int] | None = None) -> CycleOutcome:
    """`status_reconcile` from the pods' facts by request (a `facts_by_request` answer or a `PodStore`). The
    number of queries does not depend on the number of pods, nor, when nothing changes, on the number of requests
    but by one a chunk of `REQUEST_CHUNK`."""
    if request_ids is not None:
        request_ids = list(request_ids)
    thresholds = gang_thresholds()
    open_stalls = GangStall.objects.filter(cluster=cluster, ended_at__isnull=True)
    if request_ids is not None:
        open_stalls = open_stalls.filter(request_id__in=request_ids)
    stalls = {}
    for stall in open_stalls:
        stall.cluster = cluster  # spares a query per stall when a notice names the cluster
        stalls[stall.request_id] = stall

    counts = facts.counts() if isinstance(facts, PodStore) else {rid: len(f) for rid, f in facts.items()}
    outcome = CycleOutcome(pods=sum(counts.values()))
    release_after = {workload_class: t.release_after for workload_class, t in thresholds.items()}
    reconciled = 0
    preemptors: dict = {}
    # A chunk's writes go to the database while the next chunk is assessed (`ChunkWriter`).
    with ChunkWriter(pipelined=not transaction.get_connection().in_atomic_block) as writer:
        for requests in _active_chunks(cluster, request_ids):
            outcome.requests += len(requests)
            reconciled += sum(counts.get(r.pk, 0) for r in requests)
            assessments = _assess_chunk(requests, facts, stalls, thresholds, now, preemptors)
            chunk_stalls = {r.pk: stalls.pop(r.pk, None) for r in requests}
            writer.submit(functools.partial(_chunk_write, requests, assessments, chunk_stalls, release_after,
                                            cluster=cluster, now=now))
    for part in writer.outcomes:
        outcome.events += part.events
        outcome.transitions.extend(part.transitions)
        outcome.stalls_opened += part.stalls_opened
        outcome.stalls_closed += part.stalls_closed
    outcome.ignored_pods = outcome.pods - reconciled
    # Open stalls left over belong to requests no longer reconciled here (cancelled, or finished elsewhere).
    if request_ids is None and stalls:
        outcome.stalls_closed += _close_orphan_stalls(list(stalls.values()), now=now)
    return outcome


def _assess_chunk(requests: list[GpuRequest], facts: Mapping[int, Sequence[PodFact]], stalls: dict[int, GangStall],
                  thresholds: dict[str, Thresholds], now: datetime, preemptors: dict) -> dict[int, Assessment]:
    pods = {gpu_request.pk: facts.get(gpu_request.pk, ()) for gpu_request in requests}
    if not preemptors and any(p.preempted for chunk in pods.values() for p in chunk):
        # Who the scheduler preempted for: read from every pod of the cluster, once a cycle and only when needed.
        preemptors.update(preemptors_by_node(p for request_id in facts for p in facts[request_id]))
    return {gpu_request.pk: assess(pods[gpu_request.pk], _context(gpu_request, stalls.get(gpu_request.pk)),
                                   thresholds[gpu_request.workload_class], now, preemptors) for gpu_request in requests}


def _chunk_write(requests: list[GpuRequest], assessments: dict[int, Assessment], stalls: dict[int, GangStall | None],
                 release_after: dict[str, timedelta | None], *, cluster: Cluster, now: datetime) -> CycleOutcome:
    """Record a chunk's new events (two queries), then write the requests that change."""
    outcome = CycleOutcome()
    outcome.events = events.events_cluster_record(
        items=((e.request_id, e.key, e.reason, e.text) for a in assessments.values() for e in a.events)
    )
    _pods_missing_update(requests, assessments)
    preempted = [(r, e) for r in requests for e in assessments[r.pk].events if e.reason == PREEMPTED]
    if preempted:
        preemptions_notify(preempted, cluster=cluster.name)

    writes = [(r, assessments[r.pk], stalls.get(r.pk)) for r in requests]
    writes = [(r, a, stall) for r, a, stall in writes if _needs_write(a, stall)]
    # Requests that change are written in batches, one transaction (one commit) per batch, so row locks are held
    # briefly, and in a few statements per batch whatever its size: first the status changes (the batch form of
    # the one transition service, which locks and checks each row), then the stall bookkeeping of the requests
    # whose change went through or that had none to make. A request cancelled meanwhile skips only itself.
    for start in range(0, len(writes), WRITE_BATCH):
        batch = writes[start:start + WRITE_BATCH]
        with transaction.atomic():
            changes = [TransitionChange(request_id=r.pk, to_status=a.target, comment=a.comment, reason=a.reason)
                       for r, a, _ in batch if a.changed]
            changed, refused = request_transition_many(changes=changes) if changes else ([], {})
            for pk, why in refused.items():  # cancelled (or otherwise moved on) since we loaded it: nothing to do
                logger.info("request %s changed while reconciling: %s", pk, why)
            done = set(changed)
            live = [(r, a, stall) for r, a, stall in batch if not a.changed or r.pk in done]
            opened, closed = stalls_write(live, cluster=cluster, now=now, release_after=release_after)
        outcome.transitions.extend((r.pk, a.current, a.target) for r, a, _ in live if a.changed)
        outcome.stalls_opened += opened
        outcome.stalls_closed += closed
    return outcome


class ChunkWriter:
    """Runs the chunks' writes in order: in a thread of its own (its own database connection) when `pipelined`,
    so that the database inserts a chunk's events and changes its requests while this thread assesses the next
    chunk; in this thread otherwise. Not pipelined inside a caller's transaction: the writer's connection would not
    see what that transaction has not committed. A failed write stops the writing, and is raised on exit."""

    def __init__(self, *, pipelined: bool) -> None:
        self.pipelined = pipelined
        self.outcomes: list[CycleOutcome] = []
        self._work: queue.Queue = queue.Queue(maxsize=1)  # one chunk written while the next is assessed
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ChunkWriter:
        if self.pipelined:
            self._thread = threading.Thread(target=self._run, name="reconcile-writer", daemon=True)
            self._thread.start()
        return self

    def submit(self, write) -> None:
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self.outcomes.append(write())
        else:
            self._work.put(write)

    def _run(self) -> None:
        try:
            while (write := self._work.get()) is not None:
                if self._error is None:
                    try:
                        self.outcomes.append(write())
                    except BaseException as exc:  # noqa: BLE001 - raised in the submitting thread
                        self._error = exc
        finally:
            connections.close_all()  # this thread's connections only

    def __exit__(self, *exc_info) -> None:
        if self._thread is not None:
            self._work.put(None)
            self._thread.join()
        if self._error is not None and exc_info[0] is None:
            raise self._error


def _pods_missing_update(requests: list[GpuRequest], assessments: dict[int, Assessment]) -> None:
    """Remember since when a request has had no pod (at most two queries, and only when that changes)."""
    missing: dict[datetime, list[int]] = {}
    back: list[int] = []
    for gpu_request in requests:
        since = assessments[gpu_request.pk].pods_missing_since
        if since is not None and gpu_request.pods_missing_since is None:
            missing.setdefault(since, []).append(gpu_request.pk)
        elif since is None and gpu_request.pods_missing_since is not None:
            back.append(gpu_request.pk)
    if back:
        GpuRequest.objects.filter(pk__in=back).update(pods_missing_since=None)
    if len(missing) == 1:
        [(since, pks)] = missing.items()
        GpuRequest.objects.filter(pk__in=pks).update(pods_missing_since=since)
    elif missing:  # one statement for all, each row with its own time
        from django.db.models import Case, Value, When

        ids = [pk for pks in missing.values() for pk in pks]
        GpuRequest.objects.filter(pk__in=ids).update(pods_missing_since=Case(
            *(When(pk__in=pks, then=Value(since)) for since, pks in missing.items())))


def _needs_write(assessment: Assessment, stall: GangStall | None) -> bool:
    if assessment.changed:
        return True
    if stall is None:
        return assessment.target == RequestStatus.STALLED  # stalled without a record: open one
    if assessment.target != RequestStatus.STALLED:
        return True  # a stall record left open: close it
    gang = assessment.gang
    return gang is not None and _segment_changed(stall, gang)
