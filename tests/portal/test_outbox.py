"""One sweep for every outbox (portal.outbox): beat's `portal.outbox_sweep` covers provisioning jobs and the
portal's notices (lease, budget, idle, stalled gang) alike. Given a portal notice whose retry message was lost,
when the sweep runs, then it is sent once (the real webhook receiver gets it); one queued whose message never
reached the broker is sent; one waiting out its backoff is left to its retry; one lost on its last attempt fails."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from portal.models import Notice
from portal.outbox import outboxes
from portal.tasks import NOTICE_MAX_ATTEMPTS, outbox_sweep

pytestmark = pytest.mark.django_db


def notice(team, url, key, **fields) -> Notice:
    row = Notice.objects.create(key=key, team=team, channel="webhook", target=url,
                                payload={"event": "lease.expiring", "key": key}, **fields)
    Notice.objects.filter(pk=row.pk).update(created_at=fields.get("updated_at", timezone.now()))
    return row


def test_every_outbox_is_swept_by_one_beat_entry():
    assert set(outboxes()) == {"provisioning_jobs", "portal_notices"}
    tasks = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert tasks.count("portal.outbox_sweep") == 1
    assert not [task for task in tasks if task.endswith(("allocation_sweep", "notification_sweep"))]


def test_a_portal_notice_stuck_in_retrying_is_sent_again_once(team_a, webhook, eager_celery):
    long_ago = timezone.now() - timedelta(hours=1)
    lost_retry = notice(team_a, webhook.url, "lease:1:24", status="retrying", attempts=1,
                        message="Attempt 1 failed: HTTP 503")
    lost_dispatch = notice(team_a, webhook.url, "budget:1:80")
    backing_off = notice(team_a, webhook.url, "budget:1:100", status="retrying", attempts=1)
    last_try = notice(team_a, webhook.url, "idle:7", status="retrying", attempts=NOTICE_MAX_ATTEMPTS)
    Notice.objects.exclude(pk=backing_off.pk).update(updated_at=long_ago, created_at=long_ago)

    assert outbox_sweep.apply().get()["portal_notices"] == 2

    sent = {row.key: (row.status, row.attempts) for row in Notice.objects.all()}
    assert sent[lost_retry.key] == ("sent", 2) and sent[lost_dispatch.key] == ("sent", 1)
    assert sent[backing_off.key] == ("retrying", 1)
    assert sent[last_try.key][0] == "failed"
    assert sorted(hook.body["key"] for hook in webhook.received) == ["budget:1:80", "lease:1:24"]
    assert outbox_sweep.apply().get()["portal_notices"] == 0  # nothing twice
