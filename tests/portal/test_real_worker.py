"""The real worker of the end-to-end tests (tests.support.celery_worker) runs the test's own tasks only. Earlier
tests leave messages on the test run's broker (after-commit dispatches with no worker, a stopped worker's
prefetched and countdown messages): a worker that ran those first, against rows and fake API servers that were
gone, made the end-to-end tests time out in the full suite while they passed alone."""
from __future__ import annotations

from celery.signals import task_prerun

from portal import celery_app
from portal.selectors import worker_heartbeat
from tests.support.celery_worker import purge_broker, running_worker, wait_for


def test_a_real_worker_never_runs_what_earlier_tests_left_on_the_broker():
    purge_broker()
    # What earlier tests leave: pings nobody ran, and a reconciliation of a cluster of theirs (a 45 s watch).
    left = [celery_app.send_task("portal.ping").id for _ in range(3)]
    left.append(celery_app.send_task("provisioning.cluster_status_reconcile", args=[987654]).id)
    ran: list[str] = []

    def record(task_id=None, **_):
        ran.append(task_id)

    task_prerun.connect(record, weak=False)
    try:
        with running_worker():
            ours = celery_app.send_task("portal.ping").id
            wait_for(lambda: (worker_heartbeat() or {}).get("task_id") == ours, message="our ping to run")
    finally:
        task_prerun.disconnect(record)

    assert ran == [ours], f"the worker also ran {sorted(set(ran) & set(left))} of {left}"
    with celery_app.connection_for_read() as connection:  # and it leaves nothing behind for the next test
        assert connection.default_channel.client.llen(celery_app.conf.task_default_queue) == 0
