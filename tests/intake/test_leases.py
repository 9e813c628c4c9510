"""Leases on grants: the policy gives development a 7-day lease (a reason like any other choice), an answer may
ask for less, never more; the lease starts at approval, the request page shows the time left, the owner (and only
the owner) extends it within the maximum; a reminder goes out once before it ends, and at expiry a beat task
cancels the request through the normal path, which deletes its objects on the (fake) cluster over HTTPS."""
from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from intake.decisions import Decision, Lease
from intake.models import GpuRequest
from workflows.tasks import lease_sweep
from portal.models import Notice
from provisioning.models import Cluster, ProvisioningJob
from tests.factories import make_user
from tests.factories import request_approve_now, request_submit_via_api

pytestmark = pytest.mark.django_db

NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "latency_sensitive",
            "gpu_memory_gb": 8, "image": "ghcr.io/example/notebook:1.0"}
DAY = 24 * 3600


def test_development_gets_the_policy_s_seven_day_lease_as_a_reason(api, engineer, inventory):
    body = request_submit_via_api(api, engineer, name="notebook", answers=NOTEBOOK)

    assert Decision.from_json(body["decision"]).lease == Lease(hours=168.0, max_hours=168.0, rule="development-lease")
    [reason] = [r for r in Decision.from_json(body["decision"]).reasons if r.field == "lease"]
    assert reason.source == "policy" and reason.rule == "development-lease"
    assert reason.text.startswith("The grant lasts 7 days from approval, then it is taken down unless you extend")
    assert body["lease_expires_at"] is None and body["lease_seconds_left"] is None  # not approved yet


def test_an_asked_lease_is_the_answer_s_and_never_longer_than_the_policy_allows(api, engineer, inventory):
    body = request_submit_via_api(api, engineer, name="notebook", answers={**NOTEBOOK, "lease_hours": 8})
    [reason] = [r for r in Decision.from_json(body["decision"]).reasons if r.field == "lease"]
    assert Decision.from_json(body["decision"]).lease.hours == 8.0 and reason.source == "answer"
    assert "8 hours" in reason.text and "at most 7 days" in reason.text

    too_long = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "long",
                                                        "answers": {**NOTEBOOK, "lease_hours": 200}}, format="json")
    assert too_long.status_code == 400
    assert "longer than the 7 days rule development-lease allows" in too_long.json()["answers"]["lease_hours"][0]


def test_inference_has_no_lease_unless_asked(api, engineer, inventory):
    answers = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
               "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
    body = request_submit_via_api(api, engineer, name="chat", answers=answers)
    assert Decision.from_json(body["decision"]).lease is None and not [r for r in Decision.from_json(body["decision"]).reasons if r.field == "lease"]


def test_the_owner_extends_within_the_maximum_and_nobody_else_does(
    api, engineer, team_a, platform_user, inventory, django_capture_on_commit_callbacks
):
    teammate = make_user("tess", "engineer", team_a)
    outsider = make_user("otto", "engineer")
    body = request_submit_via_api(api, engineer, name="notebook", answers=NOTEBOOK)
    approved = request_approve_now(body["id"], platform_user, django_capture_on_commit_callbacks)
    left = (approved.lease_expires_at - timezone.now()).total_seconds()
    assert 7 * DAY - 60 < left <= 7 * DAY
    url = f"/api/v1/requests/{body['id']}/extend-lease/"

    full = api(engineer).post(url, {"hours": 2}, format="json")
    assert full.status_code == 400 and "at most 168 hours left" in full.json()["hours"][0], full.json()
    for who, status in ((teammate, 403), (platform_user, 403), (outsider, 404)):
        assert api(who).post(url, {"hours": 1}, format="json").status_code == status
    assert api(engineer).post(url, {"hours": "many"}, format="json").status_code == 400
    assert api(engineer).post(url, {"hours": -3}, format="json").status_code == 400

    # two days later: two days of room again
    GpuRequest.objects.filter(pk=body["id"]).update(lease_expires_at=approved.lease_expires_at - timedelta(days=2))
    extended = api(engineer).post(url, {"hours": 24}, format="json")
    assert extended.status_code == 200, extended.json()
    assert 6 * DAY - 60 < extended.json()["lease_seconds_left"] <= 6 * DAY
    assert any(e["reason"] == "LeaseExtended" and e["actor"] == "eve" for e in extended.json()["events"])


def test_the_request_page_shows_time_left_and_the_owner_extends_there(
    api, engineer, team_a, platform_user, inventory, django_capture_on_commit_callbacks
):
    body = request_submit_via_api(api, engineer, name="notebook", answers=NOTEBOOK)
    approved = request_approve_now(body["id"], platform_user, django_capture_on_commit_callbacks)
    GpuRequest.objects.filter(pk=body["id"]).update(lease_expires_at=approved.lease_expires_at - timedelta(days=3))
    client = Client()
    client.force_login(engineer)

    page = client.get(f"/requests/{body['id']}/").content.decode()
    assert 'data-testid="lease-left">3 days 23 hours left' in page and 'data-testid="lease-extend-form"' in page

    client.post(f"/requests/{body['id']}/extend-lease/", {"hours": "48"})
    page = client.get(f"/requests/{body['id']}/").content.decode()
    assert 'data-testid="lease-left">5 days 23 hours left' in page and "Lease extended." in page

    other = Client()
    other.force_login(make_user("tess", "engineer", team_a))
    assert 'data-testid="lease-extend-form"' not in other.get(f"/requests/{body['id']}/").content.decode()


@pytest.fixture
def east_on_fake(inventory, fake_kube):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano",
                 stdout=StringIO())
    return Cluster.objects.get(name="gpu-east")


def test_an_expired_development_grant_is_reminded_once_then_torn_down_on_the_cluster(
    api, engineer, team_a, platform_user, east_on_fake, fake_kube, webhook, eager_celery,
    django_capture_on_commit_callbacks
):
    api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": webhook.url}, format="json")
    team_a.refresh_from_db()
    team_a.notification_email = "team-a@example.com"
    team_a.save()
    body = request_submit_via_api(api, engineer, name="notebook", answers=NOTEBOOK)
    granted = request_approve_now(body["id"], platform_user, django_capture_on_commit_callbacks)
    mine = f"gpu-portal.io/request-id={granted.pk}"
    assert granted.status == "provisioning" and fake_kube.find("apps/v1", "Deployment", None, mine)

    def beat():
        with django_capture_on_commit_callbacks(execute=True):
            return lease_sweep.apply().get()

    assert beat() == {"reminded": [], "expired": []}  # a week left: nothing yet
    # six days and 22 hours later: two hours left
    GpuRequest.objects.filter(pk=granted.pk).update(lease_expires_at=timezone.now() + timedelta(hours=2))
    assert beat() == {"reminded": [granted.pk], "expired": []}
    assert beat() == {"reminded": [], "expired": []}  # once
    [reminder] = mail.outbox
    assert reminder.to == ["team-a@example.com"] and "lease ends" in reminder.subject
    assert f"/requests/{granted.pk}/" in reminder.body
    [hook] = webhook.received
    assert hook.body["event"] == "lease.expiring" and 0 < hook.body["seconds_left"] <= 2 * 3600
    assert fake_kube.find("apps/v1", "Deployment", None, mine)  # still running until the end

    GpuRequest.objects.filter(pk=granted.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    assert beat() == {"reminded": [], "expired": [granted.pk]}
    assert beat() == {"reminded": [], "expired": []}

    for api_version, kind in (("apps/v1", "Deployment"), ("v1", "Service")):
        assert fake_kube.find(api_version, kind, None, mine) == []
    assert any(r.method == "DELETE" for r in fake_kube.requests)
    assert ProvisioningJob.objects.get(request=granted, kind="teardown").status == "succeeded"
    shown = api(engineer).get(f"/api/v1/requests/{granted.pk}/").json()
    assert shown["status"] == "cancelled" and shown["lease_seconds_left"] == 0
    [expiry] = [e for e in shown["events"] if e["reason"] == "LeaseExpired"]
    assert expiry["to_status"] == "cancelled" and "lease ended" in expiry["comment"]
    reminded_at = next(e["at"] for e in shown["events"] if e["reason"] == "LeaseReminder")
    assert reminded_at < next(e["at"] for e in shown["events"] if e["reason"] == "LeaseExpired")
    assert Notice.objects.filter(status="sent").count() == 2 and len(mail.outbox) == 1
