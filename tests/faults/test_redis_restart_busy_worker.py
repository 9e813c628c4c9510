"""A message lost with a Redis restart while the worker is busy.

Given the portal with the settings' beat schedule (every periodic task, each at its own second; the sweep and its
grace period at the fault tests' fast timings) and a solo-pool worker kept busy by real pod reconciliations (2 s
each) so that the broker's queue is never empty, when a request is approved and Redis restarts before the worker
reaches its message (the message is lost), then the beat sweep sends the job again although messages keep
waiting, and the job is applied once, within the grace period plus a sweep interval plus the time the worker needs
to get through what waits before it. (A sweep that waited for an empty queue never sent it: the job stayed queued.)
"""
from __future__ import annotations

import time

import pytest

from .busy import KeepBusy
from .checks import approve, cluster_events, jobs, objects_in_cluster, one_set_of_objects, submit, wait_for_job
from .harness import FAST_TIMINGS

pytestmark = pytest.mark.fault

BUSY_SECONDS = 2  # each reconciliation watches the (fake) cluster's pods this long
BACKLOG = 3  # reconciliations kept waiting in the queue
GRACE = float(FAST_TIMINGS["PORTAL_SWEEP_GRACE_SECONDS"])
SWEEP = float(FAST_TIMINGS["PORTAL_SWEEP_SECONDS"])
# The busy worker first finishes the task it is on, then reaches the resent message behind BACKLOG others; the
# margin is for a loaded machine (the worker reconnecting to Redis, the apply itself).
DEADLINE = GRACE + SWEEP + (BACKLOG + 1) * BUSY_SECONDS + 30


def test_a_message_lost_with_redis_is_sent_again_while_the_queue_is_never_empty(stack, fault_kube):
    [(east,)] = stack.query("select id from provisioning_cluster where name = 'gpu-east'")
    stack.worker.stop()
    stack.start_worker(pool="solo", env={"PORTAL_RECONCILE_WATCH_SECONDS": str(BUSY_SECONDS)})
    try:
        with KeepBusy(stack.redis.url(), "provisioning.cluster_status_reconcile", [east], backlog=BACKLOG) as busy:
            busy.wait_full()
            request_id = submit(stack, "busy-lost")
            approve(stack, request_id)
            stack.redis.restart()  # everything it held is gone, the job's message with it
            lost_at = time.monotonic()
            [job] = jobs(stack, request_id)
            assert (job.status, job.attempts) == ("queued", 0) and job.dispatched_at is not None
            refilled_at = busy.wait_full(after=lost_at)

            job = wait_for_job(stack, request_id, "succeeded", "failed", timeout=DEADLINE)
            done_in = time.monotonic() - lost_at
            fewest = busy.fewest_waiting(since=refilled_at)

        assert (job.status, job.attempts) == ("succeeded", 1), job.message
        assert fewest is not None and fewest >= 1, "the queue was empty at some point: the test proves nothing"
        assert one_set_of_objects(fault_kube, request_id, "busy-lost"), objects_in_cluster(fault_kube, request_id)
        assert len(cluster_events(stack, request_id, "Applied")) == 1
        print(f"applied {done_in:.1f} s after the message was lost (deadline {DEADLINE:.0f} s); the queue held "
              f"at least {fewest} messages throughout; {busy.sent} reconciliations kept the worker busy")
    finally:
        stack.worker.stop()
        stack.start_worker()  # the next tests get the stack's usual prefork worker
