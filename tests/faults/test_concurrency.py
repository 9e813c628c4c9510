"""50 simultaneous approvals, rejections and cancels of one pending request, over HTTP against gunicorn (2 workers),
every client sending the status it saw (`expected_status: pending_approval`): exactly one wins, one transition
event is written, at most one provisioning job exists. (The same race in-process, with 50 database sessions at
once: tests/intake/test_expected_status.py.)"""
from __future__ import annotations

import threading

import pytest

from .checks import jobs, request_status, submit, transitions, wait_for_job

pytestmark = pytest.mark.fault


def test_fifty_simultaneous_decisions_over_http_have_exactly_one_winner(stack, fault_kube):
    request_id = submit(stack, "fifty-http")
    calls = []
    for i in range(50):
        user, action, body = [("pat", "approve", {}), ("quinn", "reject", {"comment": "no"}),
                              ("alice", "cancel", {})][i % 3]
        calls.append((stack.api(user), f"/api/v1/requests/{request_id}/{action}/",
                      {**body, "expected_status": "pending_approval"}))
    barrier = threading.Barrier(len(calls))
    statuses: list[int | None] = [None] * len(calls)

    def client(index: int) -> None:
        api, path, body = calls[index]
        barrier.wait(timeout=30)
        statuses[index] = api.post(path, body).status

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(statuses) == [200] + [409] * 49, statuses
    decided = [t for t in transitions(stack, request_id) if t[0] == "pending_approval"]
    assert len(decided) == 1
    if decided[0][1] == "approved":
        assert wait_for_job(stack, request_id, "succeeded").status == "succeeded"
        assert len(jobs(stack, request_id)) == 1
        assert request_status(stack, request_id) == "provisioning"
    else:
        assert jobs(stack, request_id) == [] and request_status(stack, request_id) == decided[0][1]
