"""Stalled gangs, the database side: open a stall record when a gang is declared stalled, start a new priced
segment when its running pods change, close it when the gang runs whole, finishes, fails or is released (or when
its request left reconciliation), and record the GPU time it burnt."""
from __future__ import annotations

from datetime import datetime, timedelta

from intake import events
from intake.choices import RequestStatus
from intake.models import GpuRequest
from intake.services import request_transition

from ..choices import JobKind, NotificationKind, StallEnd
from ..models import Cluster, GangStall
from .notifications import gang_notify
from .rules import RECONCILED_STATUSES, Assessment, GangState, decimal_words, duration_words


def _segment_changed(stall: GangStall, gang: GangState) -> bool:
    return (stall.running_pods, stall.pending_pods, stall.gpu_equivalents_running) != (
        gang.running_pods, gang.pending_pods, gang.gpu_equivalents_running
    )


def _pending_detail(gang: GangState) -> list[dict]:
    return [{"pod": p.name, "since": p.since.isoformat() if p.since else None, "reason": p.reason, "text": p.words}
            for p in gang.pending[:20]]  # fmt: skip


def _apply(gpu_request: GpuRequest, assessment: Assessment, stall: GangStall | None, *, cluster: Cluster,
           now: datetime, release_after: timedelta | None = None) -> tuple[int, int]:
    """One request's status change and stall bookkeeping, in the caller's transaction. The transition comes first:
    when it raises Conflict nothing has been written. Returns (stalls opened, stalls closed)."""
    opened = closed = 0
    gang = assessment.gang
    if assessment.changed:
        request_transition(request_id=gpu_request.pk, to_status=assessment.target, actor=None,
                           comment=assessment.comment, reason=assessment.reason)
    if assessment.target == RequestStatus.STALLED and gang is not None:
        if stall is None:
            stall = GangStall.objects.create(
                request=gpu_request, cluster=cluster, workload_class=gpu_request.workload_class,
                started_at=gang.partial_since or now, detected_at=now, segment_started_at=gang.partial_since or now,
                running_pods=gang.running_pods, pending_pods=gang.pending_pods,
                gpu_equivalents_running=gang.gpu_equivalents_running, pending_detail=_pending_detail(gang),
            )  # fmt: skip
            opened = 1
            if not assessment.changed:
                events.event_note(request=gpu_request, kind="cluster", reason="GangStalled", comment=assessment.comment)
            gang_notify(stall=stall, gpu_request=gpu_request, kind=NotificationKind.STALLED,
                        text=assessment.comment, now=now, release_after=release_after)
        elif _segment_changed(stall, gang):
            # The running pods changed: price the stretch so far with what ran during it, start a new one.
            stall.burnt_before_segment = stall.burnt_gpu_seconds(now)
            stall.segment_started_at = now
            stall.running_pods, stall.pending_pods = gang.running_pods, gang.pending_pods
            stall.gpu_equivalents_running = gang.gpu_equivalents_running
            stall.pending_detail = _pending_detail(gang)
            stall.save()
    elif stall is not None:
        released = assessment.reason == "GangReleased"
        stall.ended_at = now
        stall.end_reason = {
            RequestStatus.RUNNING: StallEnd.RECOVERED,
            RequestStatus.COMPLETED: StallEnd.COMPLETED,
        }.get(assessment.target, StallEnd.RELEASED if released else StallEnd.FAILED)
        if released:
            stall.released_at = now
        stall.save()
        closed = 1
        burnt = stall.burnt_gpu_hours(now)
        events.event_note(
            request=gpu_request, kind="cluster", reason="GangReleased" if released else "GangStallEnded",
            comment=f"The stall that began {stall.started_at:%Y-%m-%d %H:%M} UTC ended after "
                    f"{duration_words(now - stall.started_at)} ({stall.get_end_reason_display().lower()}); "
                    f"{decimal_words(burnt)} GPU-hours were burnt by pods waiting for the rest of the gang.",
        )  # fmt: skip
        if released:
            gang_notify(stall=stall, gpu_request=gpu_request, kind=NotificationKind.RELEASED,
                        text=assessment.comment, now=now)
    if assessment.teardown:
        from ..services import allocation_enqueue

        allocation_enqueue(gpu_request=gpu_request, kind=JobKind.TEARDOWN)
    return opened, closed


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
