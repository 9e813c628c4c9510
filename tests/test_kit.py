"""The test kit (tests/factories.py, tests/conftest.py): a request made by the factory carries the decision
`decide()` makes for its answers; the submitted and approved requests are what an engineer and the platform team
leave behind; the webhook receiver records what it is sent."""
from __future__ import annotations

import pytest

from intake.decisions import Decision
from provisioning.models import ProvisioningJob
from tests.factories import VALID_ANSWERS, RequestFactory

pytestmark = pytest.mark.django_db


def test_the_factory_submits_through_the_decision(inventory, engineer, team_a):
    gpu_request = RequestFactory(user=engineer, team=team_a, answers={**VALID_ANSWERS, "gpu_memory_gb": 8})
    assert isinstance(gpu_request.decision, Decision) and gpu_request.decision.cluster
    assert gpu_request.answers["gpu_memory_gb"] == 8 and gpu_request.requested_by == engineer


def test_a_submitted_request_waits_for_the_platform_team(submitted_request, engineer):
    assert (submitted_request.status, submitted_request.requested_by) == ("pending_approval", engineer)


def test_an_approved_request_has_its_apply_job(approved_request, platform_user):
    assert approved_request.status == "approved"
    assert ProvisioningJob.objects.filter(request=approved_request, kind="apply").exists()


def test_the_webhook_receiver_is_one_fixture(webhook):
    assert webhook.url.startswith("http://") and webhook.received == []
