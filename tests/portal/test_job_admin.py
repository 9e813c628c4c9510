"""Every background-job table (portal.jobs.BackgroundJob) is shown the same way in the admin: read only, with the
job's status, attempts and last message as columns, filtered by status and searched by message, so a failed job
is found the same way in each."""
from __future__ import annotations

import pytest
from django.test import Client

from workflows.services import request_approve, request_submit
from portal.notices import notice_fail, notice_queue
from provisioning.models import ProvisioningJob
from provisioning.services import allocation_fail
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed_job(inventory, team_a, engineer, platform_user):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    request_approve(user=platform_user, request_id=gpu_request.pk)
    job = ProvisioningJob.objects.get(request=gpu_request, kind="apply")
    allocation_fail(job_id=job.pk, message="quota exceeded in namespace gpu-team-a")
    return job


@pytest.fixture
def failed_notice(team_a):
    team_a.notification_email = "team-a@example.com"
    team_a.save()
    (notice_id,) = notice_queue(key="budget:1:80", team=team_a, subject="80% of the budget", body="...",
                                payload={})
    notice_fail(notice_id=notice_id, message="SMTP said 550 mailbox unavailable")
    return notice_id


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url, fixture, failure, done", [
    ("/admin/provisioning/provisioningjob/", "failed_job", "quota exceeded", "succeeded"),
    ("/admin/portal/notice/", "failed_notice", "550 mailbox", "sent"),
])
def test_a_failed_job_is_listed_with_its_status_and_message_and_found_by_either(
        request, platform_user, url, fixture, failure, done):
    request.getfixturevalue(fixture)
    client = _client(platform_user)

    page = client.get(url)
    columns = page.context["cl"].list_display
    assert columns[-5:] == ["status", "attempts", "message", "created_at", "updated_at"]
    assert "status" in page.context["cl"].filter_specs[0].lookup_kwarg
    assert failure in page.content.decode()

    assert client.get(url, {"status__exact": "failed"}).context["cl"].result_count == 1
    assert client.get(url, {"status__exact": done}).context["cl"].result_count == 0
    assert client.get(url, {"q": failure}).context["cl"].result_count == 1
    assert client.get(url, {"q": "nothing like it"}).context["cl"].result_count == 0


@pytest.mark.parametrize("model", ["provisioning/provisioningjob", "portal/notice"])
def test_job_rows_cannot_be_added_or_edited_in_the_admin(platform_user, model):
    assert _client(platform_user).get(f"/admin/{model}/add/").status_code == 403
