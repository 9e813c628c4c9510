"""The request state machine's one door: every status change goes through `request_transition` (or, for many at
once, `request_transition_many`), which locks, checks the edge, saves and records the event. What a status
causes in the layers above is the caller's to do, in the same transaction: the workflows that approve or cancel
(`workflows.services`, `workflows.leases`, `chargeback.idle.services`) queue provisioning's apply or teardown job
right after the transition."""
from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from portal.errors import Conflict

from .. import events
from ..choices import REQUEST_TRANSITIONS, RequestStatus
from ..lease_rules import lease_start
from ..models import GpuRequest


@transaction.atomic
def request_transition(
    *, request_id: int, to_status: str, actor, comment: str = "", reason: str = "", expected_from: str | None = None
) -> GpuRequest:
    """The one place a request changes status: lock the row, check the edge, save and record the event. `reason` is the machine-readable cause (e.g. GangStalled).
    `expected_from`: the status the caller saw; if the request has moved on since, nothing happens (Conflict), so
    of many people acting on what they saw, exactly one wins."""
    gpu_request = GpuRequest.objects.select_for_update(no_key=True).get(pk=request_id)
    from_status = gpu_request.status
    check_expected(gpu_request, expected_from)
    check_edge(gpu_request, to_status)
    gpu_request.status = to_status
    gpu_request.status_changed_at = timezone.now()
    fields = ["status", "status_changed_at", "updated_at"]
    if to_status == RequestStatus.APPROVED and lease_start(gpu_request, now=gpu_request.status_changed_at):
        fields.append("lease_expires_at")
    gpu_request.save(update_fields=fields)
    events.event_transition(
        request=gpu_request, actor=actor, from_status=from_status, to_status=to_status, comment=comment, reason=reason
    )
    return gpu_request


@dataclass(frozen=True)
class TransitionChange:
    request_id: int
    to_status: str
    comment: str = ""
    reason: str = ""


@transaction.atomic
def request_transition_many(*, changes: list[TransitionChange], actor=None) -> tuple[list[int], dict[int, str]]:
    """Many transitions in a handful of statements, checked exactly as `request_transition` checks one: the rows
    are locked (in id order, so concurrent batches cannot deadlock), each edge is checked, the allowed ones are
    saved with one UPDATE and one event insert. A request whose edge is
    not allowed any more (cancelled meanwhile, say) is left alone. Returns (ids changed, {id: why not})."""
    wanted = {change.request_id: change for change in changes}
    locked = GpuRequest.objects.select_for_update(no_key=True).filter(pk__in=wanted).order_by("pk")
    allowed, refused = [], {}
    for gpu_request in locked:
        change = wanted[gpu_request.pk]
        try:
            check_edge(gpu_request, change.to_status)
        except Conflict as exc:
            refused[gpu_request.pk] = exc.message
            continue
        allowed.append((gpu_request, gpu_request.status, change))
    if not allowed:
        return [], refused
    now = timezone.now()
    _status_update_many([(r.pk, c.to_status) for r, _, c in allowed], now=now)
    events.events_transition_many(
        rows=[(r, actor, from_status, c.to_status, c.comment, c.reason) for r, from_status, c in allowed]
    )
    for gpu_request, _, change in allowed:
        gpu_request.status, gpu_request.status_changed_at = change.to_status, now
    return [r.pk for r, _, _ in allowed], refused


def _status_update_many(rows: list[tuple[int, str]], *, now) -> None:
    """Each request its new status, in one UPDATE ... FROM (VALUES ...): one row per request, whatever the batch
    size (a CASE over the ids grows a branch per request and costs more to build and to plan)."""
    table = connection.ops.quote_name(GpuRequest._meta.db_table)
    values = ", ".join(["(%s::bigint, %s)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS r SET status = v.status, status_changed_at = %s, updated_at = %s "
            f"FROM (VALUES {values}) AS v(id, status) WHERE r.id = v.id",
            [now, now, *(value for row in rows for value in row)],
        )


def check_expected(gpu_request: GpuRequest, expected_from: str | None) -> None:
    """Checked under the row lock: the request is still in the status the caller acted on."""
    if expected_from is not None and gpu_request.status != expected_from:
        raise Conflict(
            f"Request #{gpu_request.pk} is {gpu_request.status.replace('_', ' ')}, not "
            f"{expected_from.replace('_', ' ')}; someone acted on it first. Reload it and decide again."
        )


def check_edge(gpu_request: GpuRequest, to_status: str) -> None:
    if to_status not in REQUEST_TRANSITIONS[gpu_request.status]:
        raise Conflict(
            f"Request #{gpu_request.pk} is {gpu_request.status.replace('_', ' ')}; it cannot become "
            f"{to_status.replace('_', ' ')}."
        )
