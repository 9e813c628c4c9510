"""Dispatching a job's task after commit: a broker that is down costs the user no wait (the job stays queued for
the sweep). The end-to-end version, with the real web server and a stopped Redis, is tests/faults/test_redis_down.py."""
from __future__ import annotations

import time

from celery import Celery

from provisioning.services import dispatch_job
from tests.faults.harness import free_port


def test_a_broker_that_refuses_connections_fails_the_dispatch_at_once():
    app = Celery("dispatch-test", broker=f"redis://127.0.0.1:{free_port()}/0")  # nobody listens there

    @app.task(name="dispatch-test.noop")
    def noop(job_id):
        return job_id

    for _ in range(2):  # the second time without a previously established connection either
        started = time.monotonic()
        assert dispatch_job(job_id=1, task=noop) is False
        assert time.monotonic() - started < 1.0
