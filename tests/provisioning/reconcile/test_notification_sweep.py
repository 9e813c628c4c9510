"""The sweep of stalled-gang notices (portal notices, swept with every other in `portal_notices`), within beat's one
sweep of every outbox (`portal.outbox_sweep`): a notice
whose retry message was lost (a Redis restart during its backoff) is sent again once, and fails after its last
attempt; one just waiting out its backoff is left to its own retry."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from portal.models import Notice
from portal.tasks import NOTICE_MAX_ATTEMPTS, outbox_sweep
from provisioning.models import Cluster
from provisioning.reconcile import status_reconcile
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import minutes, pods_of


def sweep() -> int:
    return outbox_sweep.apply().get()["portal_notices"]


pytestmark = pytest.mark.django_db


@pytest.fixture
def retrying(provision, inventory, notified_team):
    """A stalled gang's two notices (e-mail, webhook), both waiting to retry after a first failed attempt; in a test
    transaction their after-commit dispatch never runs."""
    gpu_request = provision()
    pods = pods_of(gpu_request)
    running = [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(1))) for i, p in enumerate(pods[:3])]
    pending = [k8s.moved(pods[3], k8s.unschedulable(pods[3], minutes(0)))]
    status_reconcile(cluster=Cluster.objects.get(name="gpu-east"), pods=running + pending, now=minutes(16))
    Notice.objects.update(status="retrying", attempts=1, message="Attempt 1 failed: HTTP 503")
    assert Notice.objects.filter(gang_stall__request=gpu_request).count() == 2
    return gpu_request


def waited(seconds: float) -> None:
    Notice.objects.update(updated_at=timezone.now() - timedelta(seconds=seconds))


def test_a_notice_waiting_out_its_backoff_is_left_to_its_retry(retrying, eager_celery, webhook):
    waited(60)
    assert sweep() == 0
    assert set(Notice.objects.values_list("status", flat=True)) == {"retrying"}
    assert (len(mail.outbox), len(webhook.received)) == (0, 0)


def test_a_notice_whose_retry_message_was_lost_is_sent_again_once(retrying, eager_celery, webhook):
    waited(3600)

    assert sweep() == 2

    assert set(Notice.objects.values_list("status", "attempts")) == {("sent", 2)}
    assert (len(mail.outbox), len(webhook.received)) == (1, 1)
    assert sweep() == 0


def test_a_notice_lost_on_its_last_attempt_fails(retrying, eager_celery, webhook):
    Notice.objects.update(attempts=NOTICE_MAX_ATTEMPTS)
    waited(3600)

    assert sweep() == 0

    for notice in Notice.objects.all():
        assert notice.status == "failed"
        assert notice.message == f"Gave up after {NOTICE_MAX_ATTEMPTS} attempts: its retry message was lost."
    assert (len(mail.outbox), len(webhook.received)) == (0, 0)
