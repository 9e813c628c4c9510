"""Given an apply that fails for good after some of the request's objects were created, then the request fails
with the reason and what was created is taken down (a failed request cannot be cancelled, so nobody else would).
End to end with the real worker and a failing API server: tests/faults/test_kube_api_faults.py."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from provisioning.models import ProvisioningJob
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


def test_a_failed_apply_takes_down_what_it_had_created(
    engineer, team_a, platform_user, inventory, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "t",
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    gpu_request = request_submit(user=engineer, team=team_a, name="half", raw_answers=VALID_ANSWERS)
    fake_kube.fail_next("PATCH", r"/deployments/", 422, message='Deployment.apps "half" is invalid: spec.template')
    mine = f"gpu-portal.io/request-id={gpu_request.pk}"

    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=gpu_request.pk)

    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "failed"
    jobs = {j.kind: j for j in ProvisioningJob.objects.filter(request=gpu_request)}
    assert jobs["apply"].status == "failed" and "spec.template" in jobs["apply"].message
    assert jobs["teardown"].status == "succeeded"
    applied_first = [r for r in fake_kube.requests if r.method == "PATCH" and "/services/" in r.path]
    assert applied_first, "the Service is applied before the Deployment"
    assert fake_kube.find("v1", "Service", None, mine) == []
    assert fake_kube.find("v1", "Namespace", None, "") != []  # the team's namespace stays
