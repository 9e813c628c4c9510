"""Redis down while requests are submitted and approved.

Given the portal running on its own Redis, when Redis is stopped and requests are submitted and approved over
HTTP, then the answers are the normal ones (201, 200) and come as fast as usual, the requests and approvals are
stored with a queued provisioning job each (the outbox row), and nothing is applied; when Redis comes back
(empty: every message it held is lost), the beat sweep dispatches the jobs and the worker applies each once: one
job, one attempt, one set of objects in the cluster, one event per transition. Neither the web server nor the
worker nor beat is restarted.
"""
from __future__ import annotations

import time

import pytest

from .checks import (
    approve, cluster_events, jobs, objects_in_cluster, one_set_of_objects, request_status, submit, transitions,
    wait_for_job,
)

pytestmark = pytest.mark.fault

# An approval answers in well under a second normally; the broker being down must not make the user wait.
PROMPT_SECONDS = 1.5


def test_requests_and_approvals_are_kept_and_provisioned_once_redis_is_back(stack, fault_kube):
    for name in ("redis-warm-1", "redis-warm-2"):  # the web workers have used their broker connection before
        warm = submit(stack, name)
        approve(stack, warm)
        wait_for_job(stack, warm, "succeeded")
    pids = [p.pid for p in stack.processes()]

    stack.redis.stop()
    ids, answer_times = [], []
    for name in ("redis-down-1", "redis-down-2", "redis-down-3"):
        started = time.monotonic()
        request_id = submit(stack, name)
        approve(stack, request_id)
        answer_times.append(time.monotonic() - started)
        ids.append(request_id)

    for request_id in ids:
        assert request_status(stack, request_id) == "approved"
        [job] = jobs(stack, request_id)
        assert (job.kind, job.status, job.attempts, job.dispatched_at) == ("apply", "queued", 0, None)
    time.sleep(3)  # several sweep periods: with the broker down nothing can be sent, and nothing is lost either
    for request_id in ids:
        assert [(j.status, j.attempts) for j in jobs(stack, request_id)] == [("queued", 0)]
        assert objects_in_cluster(fault_kube, request_id) == {"Deployment": [], "Service": [], "PodDisruptionBudget": []}

    stack.redis.start()
    for request_id in ids:
        job = wait_for_job(stack, request_id, "succeeded", "failed", timeout=60)
        assert (job.status, job.attempts) == ("succeeded", 1), job.message
    time.sleep(2)  # later sweeps find nothing more to send

    for name, request_id in zip(("redis-down-1", "redis-down-2", "redis-down-3"), ids):
        assert request_status(stack, request_id) == "provisioning"
        assert [(j.kind, j.status, j.attempts) for j in jobs(stack, request_id)] == [("apply", "succeeded", 1)]
        assert one_set_of_objects(fault_kube, request_id, name), objects_in_cluster(fault_kube, request_id)
        assert transitions(stack, request_id) == [
            ("", "pending_approval"), ("pending_approval", "approved"), ("approved", "provisioning")]
        assert len(cluster_events(stack, request_id, "Applied")) == 1
    assert [p.pid for p in stack.processes()] == pids and all(p.alive for p in stack.processes())
    assert max(answer_times) < PROMPT_SECONDS, f"submit + approve took {answer_times} s with Redis down"


def test_messages_lost_with_a_restarted_redis_are_sent_again(stack, fault_kube):
    """Given approvals whose messages wait in Redis while no worker runs, when Redis restarts empty (they are
    lost), then the sweep sends them again, and each is applied once."""
    stack.worker.stop()
    ids = [submit(stack, name) for name in ("redis-lost-1", "redis-lost-2")]
    for request_id in ids:
        approve(stack, request_id)
        [job] = jobs(stack, request_id)
        assert job.status == "queued" and job.dispatched_at is not None  # sent: its message waits in Redis

    stack.redis.restart()
    stack.start_worker()

    for name, request_id in zip(("redis-lost-1", "redis-lost-2"), ids):
        job = wait_for_job(stack, request_id, "succeeded", "failed", timeout=60)
        assert (job.status, job.attempts) == ("succeeded", 1), job.message
        assert one_set_of_objects(fault_kube, request_id, name), objects_in_cluster(fault_kube, request_id)
        assert len(cluster_events(stack, request_id, "Applied")) == 1
