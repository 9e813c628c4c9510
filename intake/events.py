"""The audit trail: one function per kind of event, called by services (never by signals)."""
from __future__ import annotations

from .choices import EventKind
from .models import GpuRequest, RequestEvent


def event_transition(*, request: GpuRequest, actor, from_status: str, to_status: str, comment: str = "") -> RequestEvent:
    return RequestEvent.objects.create(
        request=request,
        kind=EventKind.TRANSITION,
        actor=actor,
        from_status=from_status,
        to_status=to_status,
        comment=comment,
    )


def event_note(*, request: GpuRequest, comment: str, actor=None, kind: str = EventKind.NOTE, reason: str = "") -> RequestEvent:
    return RequestEvent.objects.create(request=request, kind=kind, actor=actor, comment=comment, reason=reason)
