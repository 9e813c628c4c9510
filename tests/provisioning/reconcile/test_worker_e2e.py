"""End to end through the real broker: the beat task fans out one reconciliation per cluster to a real Celery
worker, which lists the (fake) cluster's pods, finds a stalled gang, and sends its notices through the broker too."""
from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from intake.models import GpuRequest
from intake.services import request_transition
from portal.models import Notice
from provisioning.models import ClusterReconcileState, GangStall, ProvisioningJob
from workflows.services import request_submit
from provisioning.tasks import status_reconcile_all
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import TRAINING, workload
from tests.support.celery_worker import running_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.slow]


def test_a_stalled_gang_is_found_and_notified_by_a_real_worker(engineer, team_a, inventory, fake_kube, webhook,
                                                               settings):
    settings.PORTAL_RECONCILE_WATCH_SECONDS = 1
    settings.PLATFORM_NOTIFICATION_EMAIL = ["gpu-platform@example.com"]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    team_a.webhook_url, team_a.notification_email = webhook.url, "team-a@example.com"
    team_a.save()
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    gpu_request = request_submit(user=engineer, team=team_a, name="train", raw_answers=TRAINING)
    ProvisioningJob.objects.create(request=gpu_request, cluster_id=inventory[0].pk, kind="apply", status="succeeded")
    for status in ("approved", "provisioning"):
        request_transition(request_id=gpu_request.pk, to_status=status, actor=None)
    fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-team-a"}})
    started = timezone.now().replace(microsecond=0) - timedelta(minutes=20)
    pods = [k8s.pod_for(workload(gpu_request), index=i, created=started) for i in range(4)]
    for i, pod in enumerate(pods[:3]):
        fake_kube.put(k8s.moved(pod, k8s.running(pod, f"gpu-h100-0{i}", started)))
    fake_kube.put(k8s.moved(pods[3], k8s.unschedulable(pods[3], started)))

    with running_worker():
        status_reconcile_all.delay()
        wait_for(lambda: Notice.objects.filter(status="sent").count() == 2, message="both notices sent")
        wait_for(lambda: ClusterReconcileState.objects.filter(status="skipped").exists(), message="gpu-west skipped")
    connection.close()

    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "stalled"
    stall = GangStall.objects.get(request=gpu_request)
    assert (stall.started_at, stall.running_pods, stall.pending_pods) == (started, 3, 1)
    assert [r.body["event"] for r in webhook.received] == ["gang.stalled"]
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["team-a@example.com", "gpu-platform@example.com"]
