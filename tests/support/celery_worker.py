"""A real Celery worker (solo pool, in a thread) consuming from the real Redis broker, for end-to-end tests.
Tests using it need `django_db(transaction=True, serialized_rollback=True)`: the worker thread has its own
database connection and cannot see rows inside a test transaction."""
from __future__ import annotations

import time
from contextlib import contextmanager

from celery.contrib.testing.worker import start_worker

from portal import celery_app


@contextmanager
def running_worker():
    celery_app.conf.task_always_eager = False
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=30,
                      loglevel="WARNING") as worker:
        yield worker


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.1, message: str = "condition"):
    """Poll until `predicate()` is truthy; fail the test with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
