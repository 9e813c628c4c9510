"""Stalled gangs, the database side: open a stall record when a gang is declared stalled, start a new priced
segment when its running pods change, close it when the gang runs whole, finishes, fails or is released (or when
its request left reconciliation), and record the GPU time it burnt."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from intake import events
from intake.choices import EventKind, RequestStatus
from intake.models import GpuRequest

from ..choices import JobKind, NotificationKind, StallEnd
from ..models import Cluster, GangStall
from ..services import allocation_enqueue
from .notifications import StallNotice, gang_notify_many
from .rules import RECONCILED_STATUSES, Assessment, GangState, decimal_words, duration_words


def _segment_changed(stall: GangStall, gang: GangState) -> bool:
    return (stall.running_pods, stall.pending_pods, stall.gpu_equivalents_running) != (
        gang.running_pods, gang.pending_pods, gang.gpu_equivalents_running
    )


def _pending_detail(gang: GangState) -> list[dict]:
    return [{"pod": p.name, "since": p.since.isoformat() if p.since else None, "reason": p.reason, "text": p.words}
            for p in gang.pending[:20]]  # fmt: skip


def stalls_write(items: list[tuple[GpuRequest, Assessment, GangStall | None]], *, cluster: Cluster, now: datetime,
                 release_after: dict[str, timedelta | None]) -> tuple[int, int]:
    """The stall bookkeeping of a batch of requests whose status change (if any) is already saved, in the caller's
    transaction and in a few statements whatever the batch size: open the stalls of newly stalled gangs, start a
    new segment where the running pods changed, close the stalls of gangs no longer stalled, record their events
    and queue their notices; then tear down what must go. `release_after`: by workload class.
    Returns (stalls opened, stalls closed)."""
    opening, segments, closing = [], [], []
    for gpu_request, assessment, stall in items:
        gang = assessment.gang
        if assessment.target == RequestStatus.STALLED and gang is not None:
            if stall is None:
                opening.append((gpu_request, assessment, gang))
            elif _segment_changed(stall, gang):
                segments.append((stall, gang))
        elif stall is not None:
            closing.append((gpu_request, assessment, stall))
    _stalls_open(opening, cluster=cluster, now=now, release_after=release_after)
    _segments_start(segments, now=now)
    _stalls_close(closing, now=now)
    for gpu_request, assessment, _ in items:
        if assessment.teardown:
            allocation_enqueue(gpu_request=gpu_request, kind=JobKind.TEARDOWN)
    return len(opening), len(closing)


def _stalls_open(opening: list[tuple[GpuRequest, Assessment, GangState]], *, cluster: Cluster, now: datetime,
                 release_after: dict[str, timedelta | None]) -> None:
    if not opening:
        return
    stalls = GangStall.objects.bulk_create([GangStall(
        request=gpu_request, cluster=cluster, workload_class=gpu_request.workload_class,
        started_at=gang.partial_since or now, detected_at=now, segment_started_at=gang.partial_since or now,
        running_pods=gang.running_pods, pending_pods=gang.pending_pods,
        gpu_equivalents_running=gang.gpu_equivalents_running, pending_detail=_pending_detail(gang),
    ) for gpu_request, _, gang in opening])  # fmt: skip
    # A request already stalled (its status saved) but without a record says why here; the others said it in
    # their transition event.
    events.events_note_many(rows=[(gpu_request, EventKind.CLUSTER, "GangStalled", assessment.comment)
                                  for gpu_request, assessment, _ in opening if not assessment.changed])
    gang_notify_many(notices=[
        StallNotice(stall, gpu_request, NotificationKind.STALLED, assessment.comment,
                    release_after[gpu_request.workload_class])
        for stall, (gpu_request, assessment, _) in zip(stalls, opening, strict=True)
    ], now=now)


def _segments_start(segments: list[tuple[GangStall, GangState]], *, now: datetime) -> None:
    """The running pods changed: price each stretch so far with what ran during it, and start a new one."""
    if not segments:
        return
    for stall, gang in segments:
        stall.burnt_before_segment = stall.burnt_gpu_seconds(now)
        stall.segment_started_at = now
        stall.running_pods, stall.pending_pods = gang.running_pods, gang.pending_pods
        stall.gpu_equivalents_running = gang.gpu_equivalents_running
        stall.pending_detail = _pending_detail(gang)
        stall.updated_at = timezone.now()
    GangStall.objects.bulk_update([stall for stall, _ in segments], [
        "burnt_before_segment", "segment_started_at", "running_pods", "pending_pods", "gpu_equivalents_running",
        "pending_detail", "updated_at"])


def _stalls_close(closing: list[tuple[GpuRequest, Assessment, GangStall]], *, now: datetime) -> None:
    if not closing:
        return
    notes, released = [], []
    for gpu_request, assessment, stall in closing:
        was_released = assessment.reason == "GangReleased"
        stall.ended_at = now
        stall.end_reason = {
            RequestStatus.RUNNING: StallEnd.RECOVERED,
            RequestStatus.COMPLETED: StallEnd.COMPLETED,
        }.get(assessment.target, StallEnd.RELEASED if was_released else StallEnd.FAILED)
        if was_released:
            stall.released_at = now
            released.append(StallNotice(stall, gpu_request, NotificationKind.RELEASED, assessment.comment))
        stall.updated_at = timezone.now()
        burnt = stall.burnt_gpu_hours(now)
        notes.append((gpu_request, EventKind.CLUSTER, "GangReleased" if was_released else "GangStallEnded",
                      f"The stall that began {stall.started_at:%Y-%m-%d %H:%M} UTC ended after "
                      f"{duration_words(now - stall.started_at)} ({stall.get_end_reason_display().lower()}); "
                      f"{decimal_words(burnt)} GPU-hours were burnt by pods waiting for the rest of the gang."))
    GangStall.objects.bulk_update([stall for _, _, stall in closing],
                                  ["ended_at", "end_reason", "released_at", "updated_at"])
    events.events_note_many(rows=notes)
    gang_notify_many(notices=released, now=now)


def _close_orphan_stalls(stalls: list[GangStall], *, now: datetime) -> int:
    """Close open stalls of requests that left the reconciled statuses (a cancel, typically) at the time their
    request changed status, so no GPU time is counted after it."""
    requests = {pk: (status, changed_at) for pk, status, changed_at in GpuRequest.objects.filter(
        pk__in=[s.request_id for s in stalls]).values_list("pk", "status", "status_changed_at")}
    closed = 0
    for stall in stalls:
        status, changed_at = requests.get(stall.request_id, ("", None))
        if status in RECONCILED_STATUSES:
            continue  # still live, only not on this cluster's list of applied requests: leave it
        stall.ended_at = max(min(changed_at or now, now), stall.segment_started_at)
        stall.end_reason = StallEnd.CANCELLED if status == RequestStatus.CANCELLED else StallEnd.FAILED
        stall.save(update_fields=["ended_at", "end_reason", "updated_at"])
        closed += 1
    return closed
