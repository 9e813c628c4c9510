"""The Kubernetes API slow or failing.

Given approved requests whose writes meet a slow or failing API server, then:
- calls that take longer than PORTAL_KUBE_TIMEOUT_SECONDS time out and are retried with backoff, and the apply
  succeeds once the server answers in time; a server that never does fails the request after the bounded number of
  attempts, with the timeout as the reason;
- a 429 with Retry-After is retried no sooner than the server asked;
- 5xx answers are retried with growing delays, then the job and the request fail with the server's message in
  the job and in the request's event, and what the request had already put in the cluster is taken down;
and afterwards the worker is free: a new request is applied at once.
"""
from __future__ import annotations

import time

import pytest

from .checks import (
    approve, jobs, objects_in_cluster, one_set_of_objects, request_status, submit, wait_for_job, writes_to,
)
from .harness import wait_until

pytestmark = pytest.mark.fault

MAX_ATTEMPTS = 6  # provisioning.tasks.MAX_ATTEMPTS
BASE = 0.2  # PORTAL_KUBE_RETRY_BASE_SECONDS of the stack
TIMEOUT = 2.0  # PORTAL_KUBE_TIMEOUT_SECONDS of the stack


def failed_event(stack, request_id: int) -> str:
    rows = stack.query("select comment from intake_requestevent where request_id = %s and to_status = 'failed'",
                       [request_id])
    assert len(rows) == 1, rows
    return rows[0][0]


def gaps(requests) -> list[float]:
    return [later.at - earlier.at for earlier, later in zip(requests, requests[1:])]


def test_slow_throttling_and_failing_api_servers(stack, fault_kube):
    names = ["k8s-slow", "k8s-never", "k8s-429", "k8s-503"]
    ids = {name: submit(stack, name) for name in names}
    deployment = {name: f"/deployments/{name}-r{ids[name]}" for name in names}
    fault_kube.delay_next("PATCH", deployment["k8s-slow"] + "$", TIMEOUT + 1, times=2)
    fault_kube.delay_next("PATCH", deployment["k8s-never"] + "$", TIMEOUT + 0.5, times=MAX_ATTEMPTS)
    fault_kube.fail_next("PATCH", deployment["k8s-429"] + "$", 429, message="storage is (re)initializing",
                         headers={"Retry-After": "2"})
    fault_kube.fail_next("PATCH", deployment["k8s-503"] + "$", 503, times=MAX_ATTEMPTS,
                         message="etcdserver: leader changed")
    seen = len(fault_kube.requests)
    for name in names:
        approve(stack, ids[name])

    slow = wait_for_job(stack, ids["k8s-slow"], "succeeded", "failed", timeout=90)
    throttled = wait_for_job(stack, ids["k8s-429"], "succeeded", "failed", timeout=90)
    never = wait_for_job(stack, ids["k8s-never"], "succeeded", "failed", timeout=90)
    broken = wait_for_job(stack, ids["k8s-503"], "succeeded", "failed", timeout=90)

    # Timeouts: two attempts cut at the client's timeout, then one in time. On a busy machine an undelayed call can
    # outlast the 2 s timeout too, so "in time" is the first attempt after the two delayed ones, or a later one.
    assert slow.status == "succeeded" and 3 <= slow.attempts < MAX_ATTEMPTS, (slow.attempts, slow.message)
    assert len(writes_to(fault_kube, deployment["k8s-slow"], since=seen)) >= 3
    assert one_set_of_objects(fault_kube, ids["k8s-slow"], "k8s-slow")
    assert request_status(stack, ids["k8s-slow"]) == "provisioning"

    # A server that never answers in time: bounded attempts, then failed with the timeout as the reason.
    assert (never.status, never.attempts) == ("failed", MAX_ATTEMPTS)
    assert f"Gave up after {MAX_ATTEMPTS} attempts" in never.message and "timed out" in never.message.lower()
    assert request_status(stack, ids["k8s-never"]) == "failed"
    assert never.message.endswith(failed_event(stack, ids["k8s-never"]).split(": ", 1)[-1])

    # 429: the retry waited at least Retry-After (2 s), far longer than the backoff (0.2 s) alone.
    assert (throttled.status, throttled.attempts) == ("succeeded", 2), throttled.message
    refused, retried = writes_to(fault_kube, deployment["k8s-429"], since=seen)
    assert retried.at - refused.at >= 2.0
    assert one_set_of_objects(fault_kube, ids["k8s-429"], "k8s-429")

    # 5xx: retried with growing delays, then failed with the server's message, in the job and the event.
    assert (broken.status, broken.attempts) == ("failed", MAX_ATTEMPTS)
    assert "etcdserver: leader changed" in broken.message and f"after {MAX_ATTEMPTS} attempts" in broken.message
    assert request_status(stack, ids["k8s-503"]) == "failed"
    assert "etcdserver: leader changed" in failed_event(stack, ids["k8s-503"])
    attempts = writes_to(fault_kube, deployment["k8s-503"], since=seen)
    assert len(attempts) == MAX_ATTEMPTS
    assert all(gap >= BASE * 2 ** n for n, gap in enumerate(gaps(attempts))), gaps(attempts)
    # What it had applied before the Deployment was refused (its Service) is taken down.
    wait_until(lambda: objects_in_cluster(fault_kube, ids["k8s-503"]) == {
        "Deployment": [], "Service": [], "PodDisruptionBudget": []}, timeout=30,
        message="the failed request's objects to be removed")

    # The worker is free: a new request is applied at once.
    started = time.monotonic()
    after = submit(stack, "k8s-after")
    approve(stack, after)
    assert wait_for_job(stack, after, "succeeded", "failed", timeout=15).status == "succeeded"
    assert time.monotonic() - started < 10
    assert one_set_of_objects(fault_kube, after, "k8s-after")
    assert [j.kind for j in jobs(stack, after)] == ["apply"]
