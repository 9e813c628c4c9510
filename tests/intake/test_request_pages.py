"""The pages an engineer and the platform team open every morning, through the web client: the preview's GPU-hours,
cost and budget share before anything is submitted (and no errors before any input); the request page's live part
(polled until the request ends) with a running request's GPU-hours so far, expected end and how to reach it; the
stalled gang's notices as they went; the approval queue as a portal page."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chargeback.models import Budget, RateCard
from chargeback.services import usage_ingest
from intake.models import GpuRequest, RequestEvent
from portal.notices import notice_deliver
from workflows.services import request_submit
from provisioning.models import Cluster, GangStall
from provisioning.reconcile.notifications import gang_notify
from tests.chargeback.conftest import pod_for
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3", "expected_hours": 100}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(team, answers, **extra) -> dict:
    return {"team": team.pk, "name": "web-svc", **{k: str(v) for k, v in answers.items()}, **extra}


# --- the preview -------------------------------------------------------------------------------------------------


def test_the_preview_says_the_gpu_hours_the_cost_and_the_share_of_the_budget_left(engineer, team_a, inventory,
                                                                                  platform_user):
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.9"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    Budget.objects.create(team=team_a, month=timezone.now().date().replace(day=1), amount=Decimal("100000"),
                          currency="EUR")

    html = login(engineer).post("/requests/preview/", _form(team_a, TRAINING), HTTP_HX_REQUEST="true").content.decode()

    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "1,600 GPU-equivalent hours : 16 GPU equivalents for 100 hours (your expected run time)." in text
    assert "EUR 4,640.00 at EUR 2.90 per GPU-equivalent hour (the rate card for H100-80GB whole GPUs" in text
    assert re.search(r"team-a has EUR [\d,.]+ left of its [A-Z][a-z]+ \d{4} budget of EUR 100,000.00 .*this request would "
                     r"take EUR [\d,.]+ of it this month: \d+% of what is left\.", text), text


def test_without_a_rate_card_or_an_expected_run_time_the_preview_says_what_is_missing(engineer, team_a, inventory):
    answers = {k: v for k, v in TRAINING.items() if k != "expected_hours"}
    html = login(engineer).post("/requests/preview/", _form(team_a, answers), HTTP_HX_REQUEST="true").content.decode()
    assert "Give an expected run time to see the GPU-hours: it holds 16 GPU equivalents while it runs." in html
    assert "No rate card prices H100-80GB whole GPUs yet" in html


def test_answers_not_given_yet_are_listed_not_shown_as_errors(engineer, team_a, inventory):
    client = login(engineer)
    empty = client.post("/requests/preview/", {"team": team_a.pk}, HTTP_HX_REQUEST="true").content.decode()
    assert "This answer is required" not in empty and "preview-error" not in empty
    assert 'data-testid="preview-missing"' in empty and "What kind of workload is this?" in empty
    # A wrong answer is still an error, beside what is still to answer.
    wrong = client.post("/requests/preview/", {"team": team_a.pk, "gpu_memory_gb": "-3"},
                        HTTP_HX_REQUEST="true").content.decode()
    assert "preview-error" in wrong and 'data-testid="preview-missing"' in wrong


def test_the_submit_button_sits_in_the_preview_panel(engineer, team_a, inventory):
    html = login(engineer).get("/requests/new/").content.decode()
    panel = html[html.index('class="sticky card preview-panel"'):]
    assert panel.index('data-testid="submit"') < panel.index('id="preview"')


# --- the request page, live ---------------------------------------------------------------------------------------


def _running(engineer, team_a, answers=VALID_ANSWERS) -> GpuRequest:
    gpu_request = request_submit(user=engineer, team=team_a, name="serving", raw_answers=answers)
    since = timezone.now() - timedelta(hours=2)
    event = RequestEvent.objects.create(request=gpu_request, from_status="provisioning", to_status="running")
    RequestEvent.objects.filter(pk=event.pk).update(at=since)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="running", status_changed_at=since)
    return GpuRequest.objects.get(pk=gpu_request.pk)


def test_a_running_request_shows_its_gpu_hours_so_far_its_expected_end_and_how_to_reach_it(engineer, team_a,
                                                                                            inventory):
    gpu_request = _running(engineer, team_a, {**VALID_ANSWERS, "expected_hours": 10})
    RateCard.objects.create(gpu_model=gpu_request.decision.gpu_model, strategy=gpu_request.strategy,
                            price_per_equivalent_hour=Decimal("7"), currency="EUR", valid_from=date(2026, 1, 1))
    started = timezone.now() - timedelta(hours=2)
    usage_ingest(cluster_name=gpu_request.decision.cluster, now=timezone.now(), pods=[
        pod_for(gpu_request, started_at=started, finished_at=started + timedelta(hours=1))])

    html = login(engineer).get(f"/requests/{gpu_request.pk}/").content.decode()

    running = html[html.index('data-testid="running"'):html.index("</pre>")]
    expected_end = (started + timedelta(hours=10)).strftime("%Y-%m-%d %H:%M")
    assert f'data-testid="expected-end">{expected_end} UTC' in running
    equivalents = Decimal(str(gpu_request.decision.gpu_equivalents))
    assert f"{equivalents:.2f} GPU-equivalent hours" in running and "(EUR " in running
    namespace = f"gpu-{team_a.slug}"
    assert f"namespace <code>{namespace}</code>" in running
    assert f"kubectl -n {namespace} get pods -l gpu-portal.io/request-id={gpu_request.pk} -o wide" in running
    assert re.search(rf"kubectl -n {namespace} port-forward service/serving-r{gpu_request.pk} 8080:80", running)


def test_the_live_part_is_polled_until_the_request_ends_and_swaps_status_and_history(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="live", raw_answers=VALID_ANSWERS)
    client = login(engineer)
    page = client.get(f"/requests/{gpu_request.pk}/").content.decode()
    assert f'hx-get="/requests/{gpu_request.pk}/live/?shown=pending_approval" hx-trigger="every 5s"' in page

    same = client.get(f"/requests/{gpu_request.pk}/live/?shown=pending_approval").content.decode()
    assert 'id="request-status" hx-swap-oob="true"' in same and 'id="request-history" hx-swap-oob="true"' in same
    assert 'id="request-actions"' not in same  # the cancel form is not replaced while nothing changed

    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="cancelled")
    ended = client.get(f"/requests/{gpu_request.pk}/live/?shown=pending_approval").content.decode()
    assert "Cancelled" in ended and 'id="request-actions" hx-swap-oob="true"' in ended
    assert "hx-trigger" not in ended[:ended.index("</div>")]  # the request ended: no more polling


def test_the_live_part_is_another_teams_404(engineer_b, engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="live", raw_answers=VALID_ANSWERS)
    assert login(engineer_b).get(f"/requests/{gpu_request.pk}/live/").status_code == 404


# --- the stalled gang's notices -----------------------------------------------------------------------------------


def _stall(gpu_request) -> GangStall:
    now = timezone.now()
    return GangStall.objects.create(
        request=gpu_request, cluster=Cluster.objects.get(name="gpu-east"), workload_class="training",
        started_at=now - timedelta(minutes=5), detected_at=now, running_pods=1, pending_pods=1,
        gpu_equivalents_running=Decimal(8), segment_started_at=now - timedelta(minutes=5))


def test_the_stalled_gang_says_who_was_notified_and_whether_it_went(engineer, team_a, inventory, settings, mailoutbox):
    settings.PLATFORM_NOTIFICATION_EMAIL = ["platform@example.com"]
    team_a.notification_email = "team-a@example.com"
    team_a.save()
    gpu_request = request_submit(user=engineer, team=team_a, name="gang", raw_answers=TRAINING)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="stalled")
    stall = _stall(gpu_request)
    [notice] = gang_notify(stall=stall, gpu_request=gpu_request, kind="stalled", text="stalled", now=timezone.now())
    client = login(engineer)

    queued = client.get(f"/requests/{gpu_request.pk}/").content.decode()
    assert "E-mail to team-a@example.com, platform@example.com: <strong>queued</strong>" in queued
    assert "were notified" not in queued

    notice_deliver(notice_id=notice)
    sent = client.get(f"/requests/{gpu_request.pk}/").content.decode()
    assert "E-mail to team-a@example.com, platform@example.com: <strong>sent</strong>" in sent
    assert len(mailoutbox) == 1


def test_the_stalled_gang_says_when_nobody_could_be_notified(engineer, team_a, inventory, settings):
    settings.PLATFORM_NOTIFICATION_EMAIL = []
    gpu_request = request_submit(user=engineer, team=team_a, name="gang", raw_answers=TRAINING)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="stalled")
    stall = _stall(gpu_request)
    assert gang_notify(stall=stall, gpu_request=gpu_request, kind="stalled", text="stalled", now=timezone.now()) == []

    html = login(engineer).get(f"/requests/{gpu_request.pk}/").content.decode()
    assert "Nobody could be notified" in html and "were notified" not in html


# --- the approval queue -------------------------------------------------------------------------------------------


def test_the_approval_queue_is_oldest_first_with_a_review_button_each(platform_user, engineer, team_a, inventory):
    first = request_submit(user=engineer, team=team_a, name="first", raw_answers=VALID_ANSWERS)
    second = request_submit(user=engineer, team=team_a, name="second", raw_answers=TRAINING)
    GpuRequest.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=3))
    client = login(platform_user)

    html = client.get("/approvals/").content.decode()

    assert html.index("team-a/first") < html.index("team-a/second")
    assert f'href="/admin/intake/pendingapproval/{second.pk}/change/" data-testid="review">Review</a>' in html
    assert "2 replicas × 8 whole GPUs of H100-80GB" in html and "16 GPU equivalents · 100 h expected" in html
    assert 'href="/capacity/#pool-gpu-east-h100-train"' in html


def test_the_approval_queue_reads_a_fixed_number_of_queries(platform_user, engineer, team_a, inventory):
    client = login(platform_user)
    request_submit(user=engineer, team=team_a, name="one", raw_answers=VALID_ANSWERS)
    with CaptureQueriesContext(connection) as few:
        client.get("/approvals/")
    for n in range(5):
        request_submit(user=engineer, team=team_a, name=f"more-{n}", raw_answers=VALID_ANSWERS)
    with CaptureQueriesContext(connection) as many:
        client.get("/approvals/")
    assert len(many) == len(few)


@pytest.mark.parametrize("who", ["engineer", "finance_user"])
def test_only_the_platform_team_works_the_approval_queue(who, request, inventory):
    assert login(request.getfixturevalue(who)).get("/approvals/").status_code == 403
