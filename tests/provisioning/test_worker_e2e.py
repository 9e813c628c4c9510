"""End to end through the real broker: an approval over the API is committed, its task goes through Redis to a
real Celery worker, which applies the objects to the (fake) Kubernetes API server; a transient 500 is retried
with backoff by the worker."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from intake.models import GpuRequest
from workflows.services import request_submit
from provisioning.models import AppliedObject, ProvisioningJob
from tests.conftest import VALID_ANSWERS, client_for
from tests.support.celery_worker import running_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.slow]


def test_approval_over_the_api_is_applied_by_a_real_worker_with_a_retry(
    engineer, team_a, platform_user, inventory, fake_kube, settings
):
    settings.PORTAL_KUBE_RETRY_BASE_SECONDS = 0.2
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    fake_kube.fail_next("PATCH", r"/services/", 500, times=1, message="apiserver hiccup")

    with running_worker():
        response = client_for(platform_user).post(f"/api/v1/requests/{gpu_request.pk}/approve/", {}, format="json")
        assert response.status_code == 200 and response.json()["status"] == "approved"
        job = wait_for(lambda: ProvisioningJob.objects.filter(request=gpu_request, status="succeeded").first(),
                       message="the apply job to succeed")
    connection.close()

    assert job.attempts == 2
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "provisioning"
    assert AppliedObject.objects.filter(request=gpu_request).count() == 3
    body = client_for(engineer).get(f"/api/v1/requests/{gpu_request.pk}/").json()
    assert body["status"] == "provisioning"
    assert {o["kind"] for o in body["objects"]} == {"Deployment", "Service", "PodDisruptionBudget"}
    assert body["provisioning"][0]["status"] == "succeeded"
