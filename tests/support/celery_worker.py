"""Celery in tests: a real worker (solo pool, in a thread) consuming from the real Redis broker for end-to-end
tests, and eager mode for the rest (the `real_worker` and `eager_celery` fixtures in tests/conftest.py use these).

Tests using a real worker need `django_db(transaction=True, serialized_rollback=True)`: the worker thread has its
own database connection and cannot see rows inside a test transaction."""
from __future__ import annotations

import time
from contextlib import contextmanager

from celery.contrib.testing.worker import start_worker

from portal import celery_app


def purge_broker() -> int:
    """Drop every message waiting in (or held unacknowledged by) the test run's broker: after-commit dispatches
    of earlier tests that no worker ran, and what a stopped worker handed back (its prefetched and countdown
    messages). A real worker would otherwise run those first, against rows and fake API servers that no longer
    exist, and the test waiting for its own task would time out. Returns how many messages were waiting."""
    with celery_app.connection_for_write() as connection:
        channel = connection.default_channel
        purged = sum(channel.queue_purge(name) or 0 for name in _queues())
        # kombu's Redis transport keeps unacknowledged messages in these keys and puts them back in the queue
        # after the visibility timeout: a message a killed test run held would come back in a later run.
        channel.client.delete(channel.unacked_key, channel.unacked_index_key, channel.unacked_mutex_key)
    return purged


def _queues() -> list[str]:
    return sorted({celery_app.conf.task_default_queue, *(q.name for q in celery_app.amqp.queues.values())})


@contextmanager
def running_worker():
    """A real worker for the duration of the block, starting on an empty broker and leaving it empty."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    purge_broker()
    try:
        with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=30,
                          loglevel="WARNING") as worker:
            yield worker
    finally:
        celery_app.conf.task_always_eager = previous
        purge_broker()


@contextmanager
def eager():
    """Dispatched tasks run in-process, retries included: not propagating their errors is what lets Celery's
    eager mode run a task's retries instead of raising them (a failure shows in the rows the task writes)."""
    previous = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, False
    try:
        yield
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = previous


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.1, message: str = "condition"):
    """Poll until `predicate()` is truthy; fail the test with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
