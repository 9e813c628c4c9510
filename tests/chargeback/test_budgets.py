"""Budgets: the platform team sets them over the API and in the admin, finance and the team read them; the month's
forecast (spent + running work + pending approvals) is held against them; under `require_review` a request that
would overrun goes to review with the forecast in its reasons and on the review page; the finance page draws the
burn-down; each threshold crossed is notified once, by e-mail and the signed team webhook."""
from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone as tz
from decimal import Decimal

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chargeback.charts import burn_down
from chargeback.models import Budget, RateCard
from chargeback.periods import month_start
from chargeback.services import usage_ingest
from chargeback.tasks import budget_thresholds_notify
from intake.decisions import Decision
from intake.models import GpuRequest, RequestEvent
from portal.models import Notice
from provisioning.inventory import team_quota_set
from tests.chargeback.conftest import make_request, pod_for

pytestmark = pytest.mark.django_db

NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "latency_sensitive",
            "gpu_memory_gb": 8, "image": "ghcr.io/example/notebook:1.0", "expected_hours": 100}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def priced(inventory):
    """EUR 2 a GPU-equivalent-hour for time-sliced L40S, EUR 4 for whole H100s, in force this month."""
    since = month_start(timezone.now().date()) - timedelta(days=40)
    RateCard.objects.create(gpu_model="L40S-48GB", strategy="time_slicing", price_per_equivalent_hour=2,
                            currency="EUR", valid_from=since)
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=4,
                            currency="EUR", valid_from=since)


def this_month() -> str:
    return f"{timezone.now():%Y-%m}"


def create_budget(api, platform_user, **fields):
    body = {"team": "team-a", "month": this_month(), "amount": "1.00", "currency": "EUR", **fields}
    response = api(platform_user).post("/api/v1/chargeback/budgets/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


# -- who may do what -------------------------------------------------------------------------------------------


def test_the_platform_team_sets_budgets_finance_and_the_team_read_them_others_do_not(
    api, platform_user, finance_user, engineer, engineer_b, team_a, team_b, priced
):
    created = create_budget(api, platform_user, gpu_hours="500", mode="require_review")
    assert created["thresholds"] == [80, 100] and created["mode"] == "require_review"
    assert created["forecast"]["forecast_percent"] == 0 and created["forecast"]["words"] == (
        "forecast EUR 0 of 1, 0 of 500 GPU-equivalent hours")

    for reader in (finance_user, engineer, platform_user):
        listed = api(reader).get("/api/v1/chargeback/budgets/").json()["results"]
        assert [b["team"] for b in listed] == ["team-a"]
    assert api(engineer_b).get("/api/v1/chargeback/budgets/").json()["results"] == []
    assert api(engineer_b).get(f"/api/v1/chargeback/budgets/{created['id']}/").status_code == 404
    for writer in (finance_user, engineer):
        assert api(writer).post("/api/v1/chargeback/budgets/", {"team": "team-b", "month": this_month(),
                                                                 "amount": "5"}, format="json").status_code == 403
        assert api(writer).patch(f"/api/v1/chargeback/budgets/{created['id']}/", {"amount": "9"},
                                 format="json").status_code == 403
    assert api(platform_user).patch(f"/api/v1/chargeback/budgets/{created['id']}/", {"amount": "9"},
                                    format="json").json()["amount"] == "9.00"


@pytest.mark.parametrize("body, field", [
    ({"amount": None, "gpu_hours": None}, "amount"),
    ({"thresholds": [80, 80]}, "thresholds"),
    ({"thresholds": [0]}, "thresholds"),
    ({"month": "2026-13"}, "month"),
    ({"currency": "eur"}, "currency"),
    ({"mode": "shout"}, "mode"),
    ({"amount": "-1"}, "amount"),
    ({"team": "no-such-team"}, "team"),
])
def test_a_bad_budget_is_a_400_naming_the_field(api, platform_user, team_a, body, field):
    response = api(platform_user).post("/api/v1/chargeback/budgets/",
                                       {"team": "team-a", "month": this_month(), "amount": "10", **body},
                                       format="json")
    assert response.status_code == 400 and field in str(response.json()), response.json()


def test_a_second_budget_for_the_same_team_and_month_is_refused(api, platform_user, team_a):
    create_budget(api, platform_user)
    again = api(platform_user).post("/api/v1/chargeback/budgets/", {"team": "team-a", "month": this_month(),
                                                                    "amount": "3"}, format="json")
    assert again.status_code == 400 and "month" in str(again.json())


def test_the_admin_lists_budgets_with_their_forecast_for_finance_and_edits_them_for_the_platform(
    platform_user, finance_user, team_a, priced
):
    Budget.objects.create(team=team_a, month=month_start(timezone.now().date()), amount=Decimal("100"))
    page = login(finance_user).get("/admin/chargeback/budget/")
    assert page.status_code == 200 and "forecast EUR 0 of 100" in page.content.decode()
    assert login(finance_user).get("/admin/chargeback/budget/add/").status_code == 403
    response = login(platform_user).post("/admin/chargeback/budget/add/", {
        "team": team_a.pk, "cost_center": "CC-A", "month": timezone.now().date().replace(day=9).isoformat(),
        "gpu_hours": "", "amount": "", "currency": "EUR", "thresholds": "80,100", "mode": "notify", "note": ""})
    assert response.status_code == 200 and "Give a limit" in response.content.decode()  # the field is named


# -- the forecast and the review -------------------------------------------------------------------------------


def test_a_request_that_would_overrun_goes_to_review_with_the_forecast_shown(
    api, engineer, platform_user, team_a, priced
):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=4)  # the rule would approve it
    create_budget(api, platform_user, mode="require_review", amount="1.00")

    response = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "notebook",
                                                        "answers": NOTEBOOK}, format="json")

    body = response.json()
    assert response.status_code == 201 and body["status"] == "pending_approval"
    decision = Decision.from_json(body["decision"])
    assert decision.review_reasons == ("OverBudget",) and decision.auto_approve is False
    budget = decision.budget
    assert budget["over"] is True and Decimal(budget["forecast_cost"]) > Decimal("1.00")
    approval = next(r.text for r in decision.reasons if r.field == "approval")
    month = f"{timezone.now():%B}"
    assert re.match(rf"Not approved automatically: approving this takes team-a to \d+% of its {month} budget, "
                    rf"forecast EUR [\d,]+ of 1\. The platform team reviews this request\.", approval), approval
    assert f"{budget['forecast_percent']}%" in approval
    assert any(e["reason"] == "OverBudget" for e in body["events"])

    page = login(platform_user).get(f"/admin/intake/pendingapproval/{body['id']}/change/").content.decode()
    assert 'data-testid="budget-impact"' in page
    assert re.search(rf"Approving this takes team-a to \d+% of its {month} budget, forecast EUR [\d,]+ of 1\.", page)


def test_declaring_a_tiny_expected_hours_does_not_keep_requests_under_the_budget(
    api, engineer, platform_user, team_a, priced
):
    """`expected_hours` is the requester's word: the forecast holds each grant for what its lease (or, without one,
    its class's runs or the month) allows, so a budget is only kept by using less, not by saying so."""
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=100)  # the rule would approve them all
    budget = create_budget(api, platform_user, mode="require_review", amount=None, gpu_hours="100")
    short = {**NOTEBOOK, "expected_hours": 0.01}

    statuses = [api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": f"nb-{i}", "answers": short},
                                   format="json").json()["status"] for i in range(8)]

    assert "pending_approval" in statuses, statuses
    forecast = api(platform_user).get(f"/api/v1/chargeback/budgets/{budget['id']}/").json()["forecast"]
    assert Decimal(forecast["committed_gpu_hours"]) <= 100 < Decimal(forecast["forecast_gpu_hours"])
    assert {row["basis"] for row in forecast["running"] + forecast["pending"]} <= {"lease", "month_end"}


def test_a_run_past_its_expected_hours_is_counted_as_it_goes(api, engineer, platform_user, team_a, priced):
    now = timezone.now()
    finished = make_request(team_a, engineer, name="done")  # inference runs take an hour
    GpuRequest.objects.filter(pk=finished.pk).update(status="completed")
    month_begins = datetime.combine(month_start(now.date()), datetime.min.time(), tzinfo=tz.utc)
    then = max(month_begins, now - timedelta(hours=6))
    usage_ingest(cluster_name="gpu-east", now=now, pods=[
        pod_for(finished, started_at=then, finished_at=then + timedelta(hours=1))])
    running = make_request(team_a, engineer, name="overrun", gpus=1)
    running.answers = {"workload_class": "inference", "expected_hours": 0.5}
    running.decision = replace(running.decision, gpu_equivalents=1.0)
    running.save()
    approved = RequestEvent.objects.create(request=running, from_status="pending_approval", to_status="approved")
    RequestEvent.objects.filter(pk=approved.pk).update(at=now - timedelta(hours=3))  # it has run for 3 hours
    budget = create_budget(api, platform_user, amount=None, gpu_hours="100000")

    [row] = api(platform_user).get(f"/api/v1/chargeback/budgets/{budget['id']}/").json()["forecast"]["running"]

    month_end = (month_begins.replace(day=28) + timedelta(days=4)).replace(day=1)
    assert row["basis"] == "overrun"
    assert Decimal(row["hours"]) == pytest.approx(Decimal((month_end - now).total_seconds() / 3600), abs=Decimal("0.05"))


def test_the_same_request_under_a_notify_budget_is_approved_by_its_rule_and_still_shows_the_forecast(
    api, engineer, platform_user, team_a, priced
):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=4)
    create_budget(api, platform_user, mode="notify", amount="1.00")

    body = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "notebook", "answers": NOTEBOOK},
                              format="json").json()

    assert body["status"] in ("approved", "provisioning") and Decision.from_json(body["decision"]).review_reasons == ()
    assert Decision.from_json(body["decision"]).budget["over"] is True and Decision.from_json(body["decision"]).budget["mode"] == "notify"


def test_a_budget_set_between_two_creates_is_seen_by_the_second_and_no_budget_costs_no_query_of_its_own(
    api, engineer, platform_user, team_a, priced
):
    """The gate's lookup is read beside the decision's stamps (intake.hooks.decision_gate_reads): nothing cached, so
    the budget set in between counts for the very next request; a team without one reads no budget row."""
    client = api(engineer)

    def create(name):
        with CaptureQueriesContext(connection) as queries:
            response = client.post("/api/v1/requests/", {"team": "team-a", "name": name, "answers": NOTEBOOK},
                                   format="json")
        assert response.status_code == 201, response.json()
        own = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "chargeback_budget"')]
        return Decision.from_json(response.json()["decision"]).budget, own

    assert create("before") == (None, [])
    create_budget(api, platform_user, mode="notify", amount="1.00")

    budget, own = create("after")

    assert budget["mode"] == "notify" and budget["budget_amount"] == "1.00" and len(own) == 1


def test_the_forecast_adds_spent_running_and_pending_work(api, engineer, platform_user, team_a, priced):
    now = timezone.now()
    running = make_request(team_a, engineer, strategy="whole_gpu", gpu_model="H100-80GB", gpus=2, name="train")
    running.answers = {"workload_class": "training", "expected_hours": 1000}
    running.decision = replace(running.decision, gpu_equivalents=2.0)
    running.save()
    month_begins = datetime.combine(month_start(now.date()), datetime.min.time(), tzinfo=tz.utc)
    started = max(month_begins, now - timedelta(hours=2))
    usage_ingest(cluster_name="gpu-east", now=now, pods=[pod_for(running, started_at=started, finished_at=now)])
    created = create_budget(api, platform_user, amount="100000")
    api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "notebook", "answers": NOTEBOOK},
                       format="json")  # no quota on time-slicing: it waits for approval

    forecast = api(platform_user).get(f"/api/v1/chargeback/budgets/{created['id']}/").json()["forecast"]

    spent_hours = Decimal(forecast["spent_gpu_hours"])
    assert spent_hours == pytest.approx(Decimal(2) * Decimal((now - started).total_seconds() / 3600), abs=Decimal("0.02"))
    assert Decimal(forecast["spent_cost"]) == pytest.approx(spent_hours * 4, abs=Decimal("0.1"))
    month_end = (month_begins.replace(day=28) + timedelta(days=4)).replace(day=1)
    left = Decimal((month_end - now).total_seconds() / 3600)
    [row] = forecast["running"]
    assert row["basis"] == "month_end"  # no lease, no past run of its class: its 1000 expected hours or the month
    assert Decimal(row["gpu_equivalent_hours"]) == pytest.approx(2 * min(left, Decimal(1000)), abs=Decimal("0.05"))
    [pending] = forecast["pending"]
    assert pending["name"] == "notebook" and pending["basis"] in ("lease", "month_end")
    total = spent_hours + Decimal(row["gpu_equivalent_hours"]) + Decimal(pending["gpu_equivalent_hours"])
    assert Decimal(forecast["forecast_gpu_hours"]) == pytest.approx(total, abs=Decimal("0.02"))


# -- the burn-down -----------------------------------------------------------------------------------------------


def test_the_burn_down_geometry_spent_forecast_and_budget_lines():
    start, end = datetime(2026, 11, 1, tzinfo=tz.utc), datetime(2026, 12, 1, tzinfo=tz.utc)
    chart = burn_down(month_start_at=start, month_end_at=end, now=datetime(2026, 11, 16, tzinfo=tz.utc),
                      daily=[(datetime(2026, 11, 1).date(), Decimal(100)), (datetime(2026, 11, 2).date(), Decimal(250))],
                      budget=Decimal(1000), forecast=Decimal(1200), unit="EUR")

    # plot 670 x 220 from (70, 10); 1200 at most -> ticks of 500 up to 1500
    assert [label for _, label in chart.y_ticks] == ["0", "500", "1000", "1500"]
    assert chart.budget_y == pytest.approx(230 - 1000 / 1500 * 220, abs=0.01)
    assert chart.spent == ((70.0, 230.0), (pytest.approx(70 + 670 / 30, abs=0.01), pytest.approx(230 - 100 / 1500 * 220, abs=0.01)),
                           (pytest.approx(70 + 2 * 670 / 30, abs=0.01), pytest.approx(230 - 250 / 1500 * 220, abs=0.01)),
                           (405.0, pytest.approx(230 - 250 / 1500 * 220, abs=0.01)))
    assert chart.forecast == ((405.0, chart.spent[-1][1]), (740.0, pytest.approx(230 - 1200 / 1500 * 220, abs=0.01)))
    assert chart.over and [label for _, label in chart.x_ticks] == ["1", "8", "15", "22", "29"]


def test_the_finance_page_draws_each_budget_s_burn_down_and_the_team_page_its_own(
    api, platform_user, finance_user, engineer_b, team_a, team_b, priced
):
    Budget.objects.create(team=team_a, month=month_start(timezone.now().date()), amount=Decimal("100"))
    Budget.objects.create(team=team_b, month=month_start(timezone.now().date()), gpu_hours=Decimal("50"))

    page = login(finance_user).get("/chargeback/").content.decode()

    charts = re.findall(r'<svg[^>]*data-testid="burn-down"[^>]*data-team="([a-z-]+)"', page)
    assert charts == ["team-a", "team-b"]
    first = page[page.index('data-team="team-a"'):page.index('data-team="team-b"')]
    budget_line = re.search(r'data-testid="budget-line" x1="70" x2="740" y1="([\d.]+)" y2="\1"', first)
    # nothing spent: the axis is the budget's (100, ticks of 20), so the budget line is the top of the plot
    assert budget_line and float(budget_line.group(1)) == pytest.approx(10.0)
    spent = re.search(r'data-testid="spent-line" points="([^"]+)"', first).group(1).split()
    assert spent[0] == "70.0,230.0" and all(p.endswith(",230.0") for p in spent)
    forecast = re.search(r'data-testid="forecast-line" x1="([\d.]+)" y1="230.0" x2="740.0" y2="230.0"', first)
    assert forecast and 70 <= float(forecast.group(1)) <= 740
    assert "team-a, " in page and "forecast EUR 0 of 100" in page and "0 of 50 GPU-equivalent hours" in page

    team_page = login(engineer_b).get("/chargeback/teams/team-b/").content.decode()
    assert re.findall(r'data-testid="burn-down"[^>]*data-team="([a-z-]+)"', team_page) == ["team-b"]
    assert 'data-team="team-a"' not in login(engineer_b).get("/chargeback/").content.decode()


# -- threshold notices -------------------------------------------------------------------------------------------


def receiver_verifies(secret: str, header: str, raw: bytes) -> bool:
    parts = dict(item.split("=", 1) for item in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


def test_each_threshold_crossed_is_notified_exactly_once_by_e_mail_and_signed_webhook(
    api, engineer, platform_user, team_a, priced, webhook, settings, eager_celery, django_capture_on_commit_callbacks
):
    secret = api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": webhook.url},
                                 format="json").json()["webhook_secret"]
    team_a.refresh_from_db()
    team_a.notification_email = "team-a@example.com"
    team_a.save()
    running = make_request(team_a, engineer, strategy="whole_gpu", gpu_model="H100-80GB", gpus=1, name="train")
    running.answers, running.decision = {"expected_hours": 2}, replace(running.decision, gpu_equivalents=1.0)
    running.save()
    budget = create_budget(api, platform_user, amount=None, gpu_hours="100")
    committed = Decimal(api(platform_user).get(f"/api/v1/chargeback/budgets/{budget['id']}/").json()
                        ["forecast"]["committed_gpu_hours"])
    assert committed > 0
    # 90% of the budget: the 80% threshold is crossed, the 100% one is not
    api(platform_user).patch(f"/api/v1/chargeback/budgets/{budget['id']}/",
                             {"gpu_hours": str((committed / Decimal("0.9")).quantize(Decimal("0.01")))}, format="json")

    for _ in range(2):  # beat runs again: nothing more is sent
        with django_capture_on_commit_callbacks(execute=True):
            budget_thresholds_notify.apply().get()

    assert [m.subject for m in mail.outbox] == [f"[GPU portal] team-a: 80% of the {timezone.now():%B} budget"]
    assert mail.outbox[0].to == ["team-a@example.com"] and "threshold 80%" in mail.outbox[0].body
    [hook] = webhook.received
    assert hook.body["event"] == "budget.threshold" and hook.body["threshold"] == 80 and hook.body["percent"] == 90
    assert receiver_verifies(secret, hook.headers["X-Portal-Signature"], hook.raw)

    api(platform_user).patch(f"/api/v1/chargeback/budgets/{budget['id']}/",
                             {"gpu_hours": str((committed / 2).quantize(Decimal("0.01")))}, format="json")
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            budget_thresholds_notify.apply().get()

    assert len(mail.outbox) == 2 and "100% of the" in mail.outbox[1].subject
    assert [h.body["threshold"] for h in webhook.received] == [80, 100]
    assert set(Notice.objects.values_list("key", "status")) == {
        (f"budget:{budget['id']}:80", "sent"), (f"budget:{budget['id']}:100", "sent")}
