"""One sweep for every outbox: background work whose message never reached the broker, or was lost by it (a Redis
restart, a worker killed while Redis lost its copy too), is sent again; work that keeps getting lost fails.

Every table of rows waiting to be sent (provisioning jobs; portal notices, stalled-gang ones included) registers
its sweep here (`outbox_register`, from its app's `ready()`); beat runs `portal.outbox_sweep`, which runs them all,
so no outbox can be left out of the recovery the others have. Notice rows (one delivery each) share
`notice_rows_sweep`: queued ones past a grace period are sent again, ones waiting to retry whose retry message
was lost (unchanged for the stuck period) are sent again or failed after their last attempt. Delivery is
idempotent (each row is locked while it is sent and skipped once sent), so a slow message is never sent twice.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from .jobs import QUEUED, RETRYING

logger = logging.getLogger(__name__)

_OUTBOXES: dict[str, Callable[[], int]] = {}


def outbox_register(name: str, sweep: Callable[[], int]) -> None:
    """`sweep()` sends again what is overdue in one outbox and returns how many it sent."""
    _OUTBOXES[name] = sweep


def outboxes() -> tuple[str, ...]:
    return tuple(_OUTBOXES)


def outboxes_sweep() -> dict[str, int]:
    """Run every outbox's sweep; one that fails (a database hiccup) is logged and leaves the others to run."""
    sent = {}
    for name, sweep in _OUTBOXES.items():
        try:
            sent[name] = sweep()
        except Exception:  # noqa: BLE001 - the next beat run tries again; the other outboxes must still be swept
            logger.exception("outbox sweep of %s failed", name)
            sent[name] = 0
    return sent


def notice_rows_sweep(rows, *, dispatch: Callable[[int], bool], fail: Callable[..., None], older_than_seconds: float,
                      stuck_after_seconds: float, max_attempts: int) -> int:
    """Send again the notice rows of the `rows` queryset (a portal.jobs.BackgroundJob table) still queued
    `older_than_seconds` after they were made, and those waiting to retry unchanged for `stuck_after_seconds`
    (their retry message was lost); one that has had `max_attempts` is failed instead (`fail(pk, message)`).
    Returns how many were dispatched."""
    now = timezone.now()
    due = list(rows.filter(status=QUEUED, created_at__lt=now - timedelta(seconds=older_than_seconds))
               .values_list("pk", flat=True))
    stuck = rows.filter(status=RETRYING, updated_at__lt=now - timedelta(seconds=stuck_after_seconds))
    for pk, attempts in stuck.values_list("pk", "attempts"):
        if attempts >= max_attempts:
            fail(pk, f"Gave up after {attempts} attempts: its retry message was lost.")
            continue
        # Touched, so the next sweeps wait another stuck period before sending it once more.
        rows.filter(pk=pk, status=RETRYING).update(updated_at=now)
        due.append(pk)
    return sum(bool(dispatch(pk)) for pk in due)
