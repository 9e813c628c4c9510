"""portal.dispatch, the one way work is sent to Celery: after commit, at once, and never a wait on a dead broker."""
from __future__ import annotations

import time

import pytest
import redis
from celery import Celery
from django.conf import settings
from django.db import transaction

from portal.dispatch import send_on_commit, send_now
from tests.faults.harness import free_port


def _app_with_queue(broker: str) -> tuple[Celery, object]:
    app = Celery("dispatch-test", broker=broker)
    app.conf.task_default_queue = "dispatch-test"

    @app.task(name="dispatch-test.noop")
    def noop(value):
        return value

    return app, noop


def test_a_dead_broker_answers_false_at_once_and_logs_what_was_not_sent(caplog):
    _, noop = _app_with_queue(f"redis://127.0.0.1:{free_port()}/0")  # nobody listens there
    started = time.monotonic()
    assert send_now(noop, 7, what="job 7") is False
    assert time.monotonic() - started < 1.0
    assert "could not send job 7, the beat will" in caplog.text


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_work_is_sent_only_when_the_transaction_commits_and_then_runs_its_follow_up():
    broker = settings.CELERY_BROKER_URL
    _, noop = _app_with_queue(broker)
    queue = redis.Redis.from_url(broker)
    queue.delete("dispatch-test")
    sent = []
    with transaction.atomic():
        send_on_commit(noop, 1, then=lambda: sent.append(1))
        assert queue.llen("dispatch-test") == 0 and sent == []
    assert queue.llen("dispatch-test") == 1 and sent == [1]

    with pytest.raises(RuntimeError), transaction.atomic():
        send_on_commit(noop, 2, then=lambda: sent.append(2))
        raise RuntimeError("rolled back")
    assert queue.llen("dispatch-test") == 1 and sent == [1]  # a rolled-back change sends nothing
    queue.delete("dispatch-test")
