"""The finance page, the team drill-down, the admin (rate cards, close a month), the command, the task and the
demo data."""
from __future__ import annotations

from io import StringIO

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from chargeback.charts import stacked_bars
from demo.usage import SCHEDULES, pod_windows
from chargeback.models import ClosedPeriod, RateCard, UsageCollection, UsageInterval
from chargeback.periods import add_months, month_start
from chargeback.services import usage_ingest
from chargeback.tasks import usage_collect
from provisioning.models import Cluster
from tests.chargeback.conftest import make_request, pod_for, utc

pytestmark = pytest.mark.django_db


def login(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def usage(requests_a, team_b, engineer_b):
    b_request = make_request(team_b, engineer_b, strategy="whole_gpu", gpu_model="H100-80GB", name="b-train")
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 20), pods=[
        pod_for(requests_a["h200_1g"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 15)),
        pod_for(requests_a["ts"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 16)),
        pod_for(b_request, started_at=utc(2026, 11, 4, 8), finished_at=utc(2026, 11, 4, 15)),
    ])
    return b_request


PERIOD = "?start=2026-11-01&end=2026-12-01"


def test_finance_page_shows_table_chart_drill_links_and_csv(usage, finance_user):
    page = login(finance_user).get(f"/chargeback/{PERIOD}&group_by=team&group_by=strategy").content.decode()
    assert 'data-testid="report-table"' in page and 'data-testid="chart"' in page
    # A stacked segment with its tooltip, in words (not the identifier "mig").
    assert "<svg" in page and "<rect" in page and "team-a · MIG slice" in page and "team-a · mig" not in page
    assert '/chargeback/teams/team-a/?start=2026-11-01&amp;end=2026-12-01' in page
    assert "/api/v1/chargeback/report/?start=2026-11-01&amp;end=2026-12-01&amp;group_by=team%2Cstrategy&amp;format=csv" in page
    assert "team-b" in page


def test_finance_page_and_team_drill_state_the_rounding_rule(usage, finance_user):
    client = login(finance_user)
    for url in (f"/chargeback/{PERIOD}", f"/chargeback/teams/team-a/{PERIOD}"):
        page = client.get(url).content.decode()
        assert 'data-testid="rounding-note"' in page, url
        assert "Cost is rounded to the cent once per line of request x UTC day" in page, url


def test_the_page_opens_on_last_month_with_the_default_grouping(usage, finance_user):
    response = login(finance_user).get("/chargeback/")
    start = add_months(month_start(timezone.now().date()), -1)
    assert response.status_code == 200
    assert response.context["period"] == {"start": start, "end": add_months(start, 1),
                                          "group_by": ["team", "strategy", "gpu_model"]}


def test_a_bad_period_is_shown_on_the_form(finance_user):
    response = login(finance_user).get("/chargeback/?start=2026-11-01&end=2026-10-01")
    assert response.status_code == 200 and "Must be after start" in response.content.decode()
    assert "period" not in response.context


def test_an_engineer_sees_only_their_teams_on_the_page(usage, engineer):
    page = login(engineer).get(f"/chargeback/{PERIOD}&group_by=team").content.decode()
    assert "team-a" in page and "team-b" not in page
    assert login(engineer).get(f"/chargeback/teams/team-b/{PERIOD}").status_code == 404


def test_drill_into_a_team_down_to_its_requests_and_strategies(usage, finance_user, requests_a):
    response = login(finance_user).get(f"/chargeback/teams/team-a/{PERIOD}")
    page = response.content.decode()
    assert response.status_code == 200 and 'data-testid="team-table"' in page
    assert f'/requests/{requests_a["h200_1g"].pk}/' in page and "1g.18gb" in page and "time-sliced GPU share" in page
    assert "time_slicing" not in page and "whole_gpu" not in page
    assert "b-train" not in page
    assert "team=team-a" in page  # the CSV link keeps the drill's team


def test_anonymous_is_sent_to_login():
    assert Client().get("/chargeback/").status_code == 302


def test_nav_links_to_chargeback(finance_user, engineer):
    assert 'href="/chargeback/"' in login(finance_user).get("/requests/").content.decode()
    assert 'href="/chargeback/"' in login(engineer).get("/requests/").content.decode()


def test_chart_scales_bars_and_stacks_in_strategy_order():
    chart = stacked_bars([("b", "mig", Decimal("10")), ("a", "time_slicing", Decimal("5")),
                          ("a", "whole_gpu", Decimal("15")), ("a", "mig", Decimal("-3"))], width=540, plot_left=120)
    assert [bar.label for bar in chart.bars] == ["a", "b"]
    a, b = chart.bars
    assert [s.stack for s in a.segments] == ["whole_gpu", "time_slicing"] and a.total == 20
    assert a.segments[0].width == 300.0 and a.segments[1].x == 420.0  # 400 px for 20 hours
    assert chart.ticks[-1] == (520.0, "20") and [label for stack, label in chart.legend] != []


# --- admin --------------------------------------------------------------------------------------------------------


def test_finance_edits_rate_cards_in_the_admin_but_nothing_else(finance_user, engineer):
    client = login(finance_user)
    response = client.post("/admin/chargeback/ratecard/add/", {
        "gpu_model": "H100-80GB", "strategy": "whole_gpu", "price_per_equivalent_hour": "2.5000", "currency": "EUR",
        "valid_from": "2026-11-01", "note": "FY27"})
    assert response.status_code == 302, response.content.decode()[:2000]
    card = RateCard.objects.get()
    assert card.created_by == finance_user and card.price_per_equivalent_hour == Decimal("2.5")
    assert client.get("/admin/chargeback/usageinterval/").status_code == 200
    assert client.get("/admin/chargeback/usageinterval/add/").status_code == 403
    assert client.get("/admin/provisioning/cluster/add/").status_code == 403
    assert login(engineer).get("/admin/chargeback/ratecard/").status_code == 302


def test_the_admin_form_names_the_field_a_rate_card_gets_wrong(platform_user):
    response = login(platform_user).post("/admin/chargeback/ratecard/add/", {
        "gpu_model": "L40S-48GB", "strategy": "mig", "price_per_equivalent_hour": "1", "currency": "EUR",
        "valid_from": "2026-11-01"})
    assert response.status_code == 200 and "has no MIG" in response.content.decode()
    assert not RateCard.objects.exists()


def test_close_a_month_from_the_admin(finance_user):
    client = login(finance_user)
    listing = client.get("/admin/chargeback/closedperiod/").content.decode()
    assert 'data-testid="close-month"' in listing
    last_month = add_months(month_start(timezone.now().date()), -1)
    response = client.post("/admin/chargeback/closedperiod/close/", {"month": f"{last_month:%Y-%m}"})
    assert response.status_code == 302
    assert ClosedPeriod.objects.get().month == last_month
    again = client.post("/admin/chargeback/closedperiod/close/", {"month": f"{last_month:%Y-%m}"})
    assert again.status_code == 200 and "already closed" in again.content.decode()


# --- command, task, demo ---------------------------------------------------------------------------------------


def test_collect_usage_skips_gitops_clusters_without_an_api_server(inventory, capsys):
    call_command("collect_usage")
    out = capsys.readouterr().out
    assert "gpu-east: skipped: Cluster gpu-east has no API server" in out
    assert set(UsageCollection.objects.values_list("cluster", "status")) == {("gpu-east", "skipped"), ("gpu-west", "skipped")}


def _on_fake(fake_kube, name="gpu-east"):
    call_command("register_cluster", name, "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())


def test_collect_usage_records_a_failed_read_and_fails(inventory, fake_kube):
    _on_fake(fake_kube, "gpu-west")
    fake_kube.fail_next("GET", r"^/api/v1/pods$", 500, message="etcd unavailable")
    with pytest.raises(Exception, match="could not be read"):
        call_command("collect_usage", "--cluster", "gpu-west")
    collection = UsageCollection.objects.get()
    assert collection.status == "failed" and "etcd unavailable" in collection.message


def test_the_task_ingests_the_pods_it_lists_over_http(inventory, requests_a, fake_kube):
    """Given a cluster on the fake API server holding one portal pod and one foreign pod, when the collection
    task runs, then it lists the portal's pods by label over HTTP and ingests exactly that one."""
    _on_fake(fake_kube)
    pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 3, 8))
    fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": pod["metadata"]["namespace"]}})
    fake_kube.put(pod)
    foreign = {**pod, "metadata": {**pod["metadata"], "name": "not-ours", "uid": "x", "labels": {"app": "other"}}}
    fake_kube.put(foreign)

    [east] = usage_collect("gpu-east")

    assert UsageCollection.objects.get(pk=east).intervals_inserted == 1
    interval = UsageInterval.objects.get()
    assert interval.source == "collector" and interval.request_id == requests_a["whole"].pk
    listed = [r for r in fake_kube.requests if r.method == "GET" and r.path == "/api/v1/pods"]
    assert listed and listed[-1].params.get("labelSelector") == "app.kubernetes.io/managed-by=gpu-portal"


def test_the_task_is_on_the_beat_schedule(settings):
    assert settings.CELERY_BEAT_SCHEDULE["chargeback-usage-collect"]["task"] == usage_collect.name == "chargeback.usage_collect"


def test_demo_data_is_a_month_of_labelled_usage_through_ingestion_and_idempotent(settings):
    from demo.data import load_demo

    load_demo()
    intervals = UsageInterval.objects.all()
    assert intervals.exists() and not intervals.filter(is_demo=False).exists()
    assert set(intervals.values_list("team__slug", flat=True)) == {"vision", "nlp", "recsys"}
    assert set(intervals.values_list("strategy", flat=True)) == {"whole_gpu", "mig", "time_slicing"}
    assert not intervals.exclude(flags=[]).exists()  # the annotations agree with the catalogue
    start = add_months(month_start(timezone.now().date()), -1)
    assert intervals.filter(started_at__date__lt=start + timedelta(days=3)).exists()
    assert RateCard.objects.filter(note="demo rate").exists()
    before = list(intervals.order_by("pk").values_list("pk", "started_at", "ended_at"))
    load_demo()
    assert list(UsageInterval.objects.order_by("pk").values_list("pk", "started_at", "ended_at")) == before


def test_demo_schedules_do_not_depend_on_when_they_are_generated():
    now = utc(2026, 11, 20, 12)
    for name in SCHEDULES:
        early = pod_windows(name, start=utc(2026, 10, 1), now=utc(2026, 11, 10))
        late = pod_windows(name, start=utc(2026, 10, 1), now=now)
        finished_early = [w for w in early if w[2] is not None]
        assert finished_early and set(finished_early) <= set(late)
        assert all(begin < now for _, begin, _ in late)


def test_load_demo_command_still_prints_the_logins(capsys):
    call_command("load_demo")
    assert "fiona" in capsys.readouterr().out
    assert UsageInterval.objects.filter(is_demo=True).exists()


def _svg_geometry(page: str) -> tuple[list[tuple[float, float]], list[tuple[float, str]]]:
    import re

    svg = page[page.index('<svg'):page.index('</svg>')]
    rects = [(float(x), float(w)) for x, w in re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)]
    ticks = [(float(x), label) for x, label in
             re.findall(r'<text x="([\d.]+)" y="\d+" text-anchor="middle" fill="#5b6776">([^<]+)</text>', svg)]
    return rects, ticks


def test_the_axis_covers_the_largest_bar_and_every_segment_stays_in_the_frame(requests_a, team_b, engineer_b,
                                                                            finance_user):
    # team-b: 206 whole-GPU hours + 36 more = 242 hours; the axis used to stop at 200 (Decimal // truncates).
    b_request = make_request(team_b, engineer_b, strategy="whole_gpu", gpu_model="H100-80GB", name="b-train")
    b_other = make_request(team_b, engineer_b, strategy="whole_gpu", gpu_model="H100-80GB", name="b-eval")
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 30), pods=[
        pod_for(b_request, started_at=utc(2026, 11, 2, 0), finished_at=utc(2026, 11, 10, 14)),  # 206 h
        pod_for(b_other, started_at=utc(2026, 11, 12, 0), finished_at=utc(2026, 11, 13, 12)),  # 36 h
    ])

    page = login(finance_user).get(f"/chargeback/{PERIOD}&group_by=team&group_by=strategy").content.decode()

    rects, ticks = _svg_geometry(page)
    assert rects and ticks
    last_x, last_label = ticks[-1]
    assert Decimal(last_label) >= 242
    assert all(x + width <= last_x + 0.01 for x, width in rects), (rects, ticks)
    assert all(width >= 1 for _, width in rects)


def test_the_finance_page_shows_this_month_so_far_beside_the_billed_month(requests_a, finance_user):
    now = timezone.now()
    first = month_start(now.date())
    month_began = utc(first.year, first.month, 1)
    usage_ingest(cluster_name="gpu-east", now=now, pods=[  # running now, since three hours or since the month began
        pod_for(requests_a["ts"], started_at=max(month_began, now - timedelta(hours=3)), finished_at=None),
    ])
    client = login(finance_user)
    page = client.get("/chargeback/").content.decode()  # opens on last month, what finance bills
    so_far = page[page.index('data-testid="month-so-far"'):]
    so_far = so_far[:so_far.index("</div>")]
    assert f"This month so far ({first.day} {now:%B} to now)" in so_far
    assert "team-a" in so_far and "No GPU time yet" not in so_far
    this_month = f"?start={first.isoformat()}&end={add_months(first, 1).isoformat()}"
    assert this_month.replace("&", "&amp;") in so_far
    # This month in full has no second card about itself.
    assert 'data-testid="month-so-far"' not in client.get(f"/chargeback/{this_month}").content.decode()
