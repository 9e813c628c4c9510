"""The audit trail: one function per kind of event, called by services (never by signals)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.utils import timezone

from .choices import EventKind
from .models import GpuRequest, RequestEvent


def recorded_events(request: GpuRequest) -> list[RequestEvent]:
    """The events recorded on this very instance of the request, in order, by the functions below: for a request
    created in this process, all of them (the answer to a submission shows them without reading them back)."""
    return request.__dict__.get("_recorded_events", [])


def _kept(event: RequestEvent) -> RequestEvent:
    event.request.__dict__.setdefault("_recorded_events", []).append(event)
    return event


def event_transition(
    *, request: GpuRequest, actor, from_status: str, to_status: str, comment: str = "", reason: str = ""
) -> RequestEvent:
    return _kept(RequestEvent.objects.create(
        request=request,
        kind=EventKind.TRANSITION,
        actor=actor,
        from_status=from_status,
        to_status=to_status,
        comment=comment,
        reason=reason,
    ))


def events_transition_many(*, rows) -> list[RequestEvent]:
    """Transition events of a batch (`request_transition_many`), in one insert.
    `rows`: (request, actor, from_status, to_status, comment, reason)."""
    return RequestEvent.objects.bulk_create(
        RequestEvent(request=request, kind=EventKind.TRANSITION, actor=actor, from_status=from_status,
                     to_status=to_status, comment=comment, reason=reason)
        for request, actor, from_status, to_status, comment, reason in rows
    )


def event_note(*, request: GpuRequest, comment: str, actor=None, kind: str = EventKind.NOTE, reason: str = "") -> RequestEvent:
    return _kept(RequestEvent.objects.create(request=request, kind=kind, actor=actor, comment=comment, reason=reason))


def events_note_many(*, rows) -> list[RequestEvent]:
    """Notes of a batch of requests, in one insert. `rows`: (request, kind, reason, comment)."""
    return RequestEvent.objects.bulk_create(
        RequestEvent(request=request, kind=kind, comment=comment, reason=reason)
        for request, kind, reason, comment in rows
    )


# --- status reconciliation (reconcile) --------------------------------------------------------------------------


def events_cluster_record(*, items: Iterable[tuple[int, str, str, str]]) -> int:
    """Record what the cluster reported, each fact once: `items` are (request_id, dedupe_key, reason, comment).
    Keys already recorded for those requests are skipped (one query), the rest inserted in one statement; the
    unique (request, dedupe_key) constraint makes a concurrent duplicate a no-op. Returns how many were new."""
    candidates: dict[tuple[int, str], tuple[str, str]] = {}
    for request_id, key, reason, comment in items:
        candidates.setdefault((request_id, key), (reason, comment))
    if not candidates:
        return 0
    request_ids = sorted({request_id for request_id, _ in candidates})
    existing = set(
        RequestEvent.objects.filter(request_id__in=request_ids).exclude(dedupe_key="").values_list(
            "request_id", "dedupe_key"
        )
    )
    new = [(request_id, key, reason[:63], comment) for (request_id, key), (reason, comment) in candidates.items()
           if (request_id, key) not in existing]
    if not new:
        return 0
    return _cluster_events_insert(new)


def _cluster_events_insert(rows: list[tuple[int, str, str, str]]) -> int:
    """One INSERT ... SELECT FROM unnest(arrays) for any number of events: four array parameters instead of eight
    per row, and no model instance per event (on a busy cluster's first cycle that is tens of thousands). A row a
    concurrent cycle inserted first is skipped (ON CONFLICT DO NOTHING, the unique dedupe key); returns how many
    were inserted."""
    meta = RequestEvent._meta
    quote = connection.ops.quote_name
    column = {name: quote(meta.get_field(name).column) for name in (
        "request", "kind", "dedupe_key", "reason", "comment", "at", "from_status", "to_status")}
    request_ids, keys, reasons, comments = (list(values) for values in zip(*rows, strict=True))
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(column.values())}) "
        "SELECT n.request_id, %s, n.dedupe_key, n.reason, n.comment, %s, '', '' "
        "FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[]) AS n(request_id, dedupe_key, reason, comment) "
        "ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [EventKind.CLUSTER, timezone.now(), request_ids, keys, reasons, comments])
        return cursor.rowcount


