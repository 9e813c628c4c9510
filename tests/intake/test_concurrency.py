"""Given one pending request, when many platform users approve it at the same instant, then exactly one
transition happens and exactly one event is written; everyone else gets a 409."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from intake.models import GpuRequest, RequestEvent
from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS, client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def run_at_once(functions):
    barrier = threading.Barrier(len(functions))
    results = [None] * len(functions)

    def worker(index, function):
        try:
            barrier.wait()
            results[index] = function()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, f)) for i, f in enumerate(functions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_many_simultaneous_approvals_make_one_transition_and_one_event(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="contended", raw_answers=VALID_ANSWERS)
    approvers = [make_user(f"platform-{i}", "platform") for i in range(12)]
    clients = [client_for(user) for user in approvers]

    statuses = run_at_once([
        (lambda c=c: c.post(f"/api/v1/requests/{gpu_request.pk}/approve/", {}, format="json").status_code)
        for c in clients
    ])

    assert sorted(statuses) == [200] + [409] * 11
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "approved"
    assert RequestEvent.objects.filter(request=gpu_request, to_status="approved").count() == 1


def test_simultaneous_approvals_and_rejections_have_one_winner(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="racing", raw_answers=VALID_ANSWERS)
    calls = []
    for i in range(10):
        action, body = (("approve", {}), ("reject", {"comment": "no"}))[i % 2]
        client = client_for(make_user(f"plat-{i}", "platform"))
        calls.append(lambda c=client, a=action, b=body: c.post(
            f"/api/v1/requests/{gpu_request.pk}/{a}/", b, format="json").status_code)

    statuses = run_at_once(calls)

    assert statuses.count(200) == 1 and statuses.count(409) == len(calls) - 1
    decided = RequestEvent.objects.filter(request=gpu_request, from_status="pending_approval")
    assert decided.count() == 1
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == decided.get().to_status


def test_cancels_racing_approvals_leave_one_consistent_event_chain(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="chain", raw_answers=VALID_ANSWERS)
    approvers = [client_for(make_user(f"ap-{i}", "platform")) for i in range(4)]
    calls = [lambda c=c: c.post(f"/api/v1/requests/{gpu_request.pk}/approve/", {}, format="json").status_code
             for c in approvers]
    calls += [lambda c=client_for(engineer): c.post(f"/api/v1/requests/{gpu_request.pk}/cancel/", {},
                                                      format="json").status_code] * 4

    statuses = run_at_once(calls)

    # Cancel is legal after approval, so at most one approve and one cancel succeed, each with one event,
    # and the events form one chain ending in the stored status.
    events = list(RequestEvent.objects.filter(request=gpu_request).order_by("id"))
    assert statuses.count(200) == len(events) - 1 <= 2
    assert all(prev.to_status == nxt.from_status for prev, nxt in zip(events, events[1:]))
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == events[-1].to_status == "cancelled"


def test_batch_transitions_check_each_edge_under_the_lock(engineer, platform_user, team_a, inventory):
    """Given three provisioning requests, one cancelled meanwhile, when a batch moves all three to running, then
    the two still provisioning change with one event each and the cancelled one is left alone."""
    from intake.services import TransitionChange, request_transition, request_transition_many
    from workflows.services import request_cancel

    reqs = []
    for name in ("b1", "b2", "b3"):
        r = request_submit(user=engineer, team=team_a, name=name, raw_answers=VALID_ANSWERS)
        request_transition(request_id=r.pk, to_status="approved", actor=None)
        request_transition(request_id=r.pk, to_status="provisioning", actor=None)
        reqs.append(r)
    request_cancel(user=engineer, request_id=reqs[2].pk)

    changed, refused = request_transition_many(changes=[
        TransitionChange(request_id=r.pk, to_status="running", comment="all pods run", reason="AllRunning")
        for r in reqs])

    assert sorted(changed) == sorted(r.pk for r in reqs[:2]) and list(refused) == [reqs[2].pk]
    assert [GpuRequest.objects.get(pk=r.pk).status for r in reqs] == ["running", "running", "cancelled"]
    event = RequestEvent.objects.get(request=reqs[0], to_status="running")
    assert (event.from_status, event.reason, event.actor) == ("provisioning", "AllRunning", None)
    assert not RequestEvent.objects.filter(request=reqs[2], to_status="running").exists()


def test_a_submission_never_waits_for_the_approval_lock_on_its_team(engineer, platform_user, team_a, inventory):
    """Regression (found by the PostgreSQL fault test as a deadlock under load): approvals lock their team to sum its
    quota; a submission's foreign key to the team is checked at commit with FOR KEY SHARE (Django's foreign keys
    are deferred). Given an approval holding the team lock, when a submission for that team commits, then it does
    not wait (FOR NO KEY UPDATE; a FOR UPDATE made it wait here, and deadlock with a third transaction)."""
    from django.db import OperationalError, connection, transaction

    from workflows.services import _lock_team_quota

    locked, done = threading.Event(), threading.Event()
    outcome = {}

    def approval_holding_the_lock():
        try:
            with transaction.atomic():
                _lock_team_quota(team_a.pk)
                locked.set()
                done.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=approval_holding_the_lock)
    holder.start()
    try:
        assert locked.wait(10)
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '2s'")
                request_submit(user=engineer, team=team_a, name="while-approving", raw_answers=VALID_ANSWERS)
            outcome["ok"] = True
        except OperationalError as exc:  # lock timeout: the commit waited for the team lock
            outcome["error"] = str(exc)
    finally:
        done.set()
        holder.join(10)
    assert outcome == {"ok": True}
