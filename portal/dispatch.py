"""Sending work to Celery: one way, used by every place that sends a task.

Work is sent after the transaction that records it commits (a worker must find the rows it is sent for). A broker
outage is not the user's problem: one connection attempt, and if it fails the caller's row stays as it is and the
beat (a sweep, or the next scheduled run) sends it later. Nothing here retries for seconds while a user waits.
"""
from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)


def send_now(task, *args, what: str = "", **options) -> bool:
    """Send `task(*args)` at once; False (logged) when the broker cannot be reached."""
    try:
        with task.app.producer_or_acquire() as producer:
            if not task.app.conf.task_always_eager:
                # Without this, kombu retries connecting for seconds (2 s, then 4 s) while the user waits.
                producer.connection.ensure_connection(max_retries=0)
            task.apply_async(args=list(args), retry=False, producer=producer, **options)
    except Exception as exc:  # noqa: BLE001 - kombu raises many connection error types
        logger.warning("could not send %s, the beat will: %s", what or f"{task.name}{args}", exc)
        return False
    return True


def send_after_commit(task, *args, what: str = "", then=None, **options) -> None:
    """Send `task(*args)` once the current transaction commits (at once outside one); `then()` runs after a send
    that reached the broker, e.g. to record when it was sent."""

    def send() -> None:
        if send_now(task, *args, what=what, **options) and then is not None:
            then()

    transaction.on_commit(send)
