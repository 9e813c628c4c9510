"""PostgreSQL restarted under load.

Given clients creating, approving and listing requests over HTTP without pause, and one approved request whose
apply is inside a (slow) write to the Kubernetes API, when PostgreSQL is restarted (`pg_ctl restart -m fast`: every
session is cut), then requests fail only while the server is down (5xx or a cut connection), the web workers and
the Celery worker recover by themselves (connection health checks; none of them is restarted), no request is
half-written (each has its submission event, its status is its last event's, each approved one has its job, no
event without its request), the apply that was cut off finishes, and a request approved afterwards is provisioned
by the same worker.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from tests.conftest import VALID_ANSWERS

from .checks import approve, one_set_of_objects, request_status, submit, wait_for_job, writes_to
from .harness import PortalStack, wait_until

pytestmark = pytest.mark.fault

CLIENTS = 4
GRACE_SECONDS = 1.0  # after the restart returns, the first request of each web worker may still meet a dead socket


@dataclass
class Outcome:
    operation: str
    started: float
    ended: float
    status: int | None  # None: the connection failed
    request_id: int | None = None
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.status is None or self.status >= 500


class Load:
    """Clients that create requests, approve every eighth one and list, in a loop, recording every outcome."""

    def __init__(self, stack: PortalStack, clients: int) -> None:
        self.stack, self.outcomes = stack, []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(clients)]

    def _call(self, operation: str, api, method: str, path: str, body=None) -> Outcome:
        started = time.time()
        try:
            answer = api.request(method, path, body)
            outcome = Outcome(operation, started, time.time(), answer.status,
                              (answer.json or {}).get("id") if isinstance(answer.json, dict) else None,
                              "" if answer.status < 400 else answer.text[:200])
        except Exception as exc:  # noqa: BLE001 - refused or reset connections are what we record
            outcome = Outcome(operation, started, time.time(), None, error=repr(exc))
        with self._lock:
            self.outcomes.append(outcome)
        return outcome

    def _client(self, number: int) -> None:
        alice, pat = self.stack.api("alice", timeout=20), self.stack.api("pat", timeout=20)
        iteration = 0
        while not self._stop.is_set():
            iteration += 1
            created = self._call("create", alice, "POST", "/api/v1/requests/",
                                 {"team": "vision", "name": f"pg-load-{number}-{iteration}", "answers": VALID_ANSWERS})
            if created.status == 201 and iteration % 8 == 0:
                self._call("approve", pat, "POST", f"/api/v1/requests/{created.request_id}/approve/", {})
            self._call("list", alice, "GET", "/api/v1/requests/?page_size=10")

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


def integrity_violations(stack: PortalStack) -> dict[str, list]:
    """Half-written requests, by rule; every list must be empty."""
    return {
        "requests without exactly one submission event": stack.query(
            "select r.id from intake_gpurequest r where (select count(*) from intake_requestevent e "
            "where e.request_id = r.id and e.kind = 'transition' and e.from_status = '' "
            "and e.to_status = 'pending_approval') <> 1"),
        "requests whose status is not their last event's": stack.query(
            "select r.id, r.status, last.to_status from intake_gpurequest r cross join lateral ("
            "select to_status from intake_requestevent e where e.request_id = r.id and e.kind = 'transition' "
            "order by e.at desc, e.id desc limit 1) last where last.to_status <> r.status"),
        "approved requests without an apply job": stack.query(
            "select r.id, r.status from intake_gpurequest r where r.status not in "
            "('pending_approval', 'rejected', 'cancelled') and not exists (select 1 from "
            "provisioning_provisioningjob j where j.request_id = r.id and j.kind = 'apply')"),
        "events without their request": stack.query(
            "select e.id from intake_requestevent e left join intake_gpurequest r on r.id = e.request_id "
            "where r.id is null"),
        "jobs without their request": stack.query(
            "select j.id from provisioning_provisioningjob j left join intake_gpurequest r on r.id = j.request_id "
            "where r.id is null"),
    }


def test_the_portal_recovers_from_a_postgres_restart_under_load(stack, fault_kube):
    web_pids = [stack.web.pid, *stack.web.children()]
    worker_pids = [stack.worker.pid, *stack.worker.children()]
    assert len(web_pids) == 3 and len(worker_pids) == 3

    with Load(stack, CLIENTS) as load:
        time.sleep(1.5)
        inflight = submit(stack, "pg-inflight")
        deployment = f"/deployments/pg-inflight-r{inflight}"
        fault_kube.delay_next("PATCH", deployment + "$", 1.5)  # the worker waits inside apply across the restart
        seen = len(fault_kube.requests)
        approve(stack, inflight)
        wait_until(lambda: writes_to(fault_kube, deployment, since=seen), timeout=30,
                   message="the worker to be writing the Deployment")
        window_start = time.time()
        stack.postgres.restart(mode="fast")
        window_end = time.time()
        time.sleep(4)

    outcomes = load.outcomes
    failed = [o for o in outcomes if o.failed]
    outside = [o for o in failed if o.ended < window_start or o.started > window_end + GRACE_SECONDS]
    assert not outside, f"failures outside the restart window ({window_end - window_start:.1f}s): {outside}"
    unexpected = [o for o in outcomes if o.status is not None and 400 <= o.status < 500]
    assert not unexpected, unexpected
    after = [o for o in outcomes if o.started > window_end + GRACE_SECONDS]
    assert {o.operation for o in after if o.status in (200, 201)} == {"create", "approve", "list"}, after[-10:]
    assert [stack.web.pid, *stack.web.children()] == web_pids, "a web worker was restarted"

    created = [o.request_id for o in outcomes if o.operation == "create" and o.status == 201]
    stored = {row[0] for row in stack.query("select id from intake_gpurequest")}
    assert set(created) <= stored
    approved = [int(o.request_id) for o in outcomes if o.operation == "approve" and o.status == 200]
    assert approved and all(request_status(stack, rid) != "pending_approval" for rid in approved)
    violations = integrity_violations(stack)
    assert violations == {rule: [] for rule in violations}

    # The apply cut off by the restart finishes, every approval is provisioned, nobody restarted the worker.
    job = wait_for_job(stack, inflight, "succeeded", "failed", timeout=60)
    assert job.status == "succeeded", job.message
    assert one_set_of_objects(fault_kube, inflight, "pg-inflight")
    approved_ids = [row[0] for row in stack.query("select id from intake_gpurequest where status <> "
                                                   "'pending_approval' and name like 'pg-%%'")]
    for request_id in approved_ids:
        assert wait_for_job(stack, request_id, "succeeded", "failed", timeout=60).status == "succeeded"
    later = submit(stack, "pg-after")
    approve(stack, later)
    assert wait_for_job(stack, later, "succeeded", "failed", timeout=30).status == "succeeded"
    assert request_status(stack, later) == "provisioning"
    assert [stack.worker.pid, *stack.worker.children()] == worker_pids, "the worker was restarted"
