"""Sending work to Celery: one way, used by every place that sends a task.

Work is sent by the task's name (its explicit, stable Celery `name=`), so a service never imports the tasks that
call it: `send_on_commit("provisioning.inventory_sync", cluster.pk)`. Work is sent after the transaction that
records it commits (a worker must find the rows it is sent for). A broker outage is not the user's problem: one
connection attempt, and if it fails the caller's row stays as it is and the beat (a sweep, or the next scheduled
run) sends it later. Nothing here retries for seconds while a user waits.
"""
from __future__ import annotations

import logging

from celery import Celery, Task
from django.db import transaction

from .celery import app as portal_app

logger = logging.getLogger(__name__)


def _send(app: Celery, name: str, args: list, options: dict) -> None:
    with app.producer_or_acquire() as producer:
        if app.conf.task_always_eager:
            # `send_task` ignores eager mode; run the registered task here as `apply_async` does. A process that
            # never imported the tasks modules (the web) loads them the way a worker does.
            if name not in app.tasks:
                app.loader.import_default_modules()
            app.tasks[name].apply_async(args=args, retry=False, producer=producer, **options)
            return
        # Without this, kombu retries connecting for seconds (2 s, then 4 s) while the user waits.
        producer.connection.ensure_connection(max_retries=0)
        app.send_task(name, args=args, retry=False, producer=producer, **options)


def send_now(task: str | Task, *args, what: str = "", **options) -> bool:
    """Send the task named `task` (or a task object of another Celery app) with `args` at once; False (logged)
    when the broker cannot be reached. `options` are Celery's (`expires`, `countdown`)."""
    app, name = (portal_app, task) if isinstance(task, str) else (task.app, task.name)
    try:
        _send(app, name, list(args), options)
    except Exception as exc:  # noqa: BLE001 - kombu raises many connection error types
        logger.warning("could not send %s, the beat will: %s", what or f"{name}{args}", exc)
        return False
    return True


def send_on_commit(task: str | Task, *args, what: str = "", then=None, **options) -> None:
    """Send the task named `task` with `args` once the current transaction commits (at once outside one);
    `then()` runs after a send that reached the broker, e.g. to record when it was sent."""

    def send() -> None:
        if send_now(task, *args, what=what, **options) and then is not None:
            then()

    transaction.on_commit(send)

