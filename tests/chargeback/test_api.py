"""The chargeback API: who sees what, what a bad query says, the CSV, and constant query counts."""
from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chargeback.models import RateCard
from chargeback.services import period_closable, usage_ingest
from tests.chargeback.conftest import make_request, pod_for, utc

pytestmark = pytest.mark.django_db

URL = "/api/v1/chargeback/report/"
PERIOD = {"start": "2026-11-01", "end": "2026-12-01"}


@pytest.fixture
def usage(requests_a, team_b, engineer_b):
    """Team A: 2 GPUs for an hour and a 1g H200 slice for 7 hours; team B: a 1g slice for 7 hours."""
    b_request = make_request(team_b, engineer_b, strategy="mig", gpu_model="H200-141GB", mig_profile="1g.18gb",
                             name="b-serving")
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    RateCard.objects.create(gpu_model="H200-141GB", strategy="mig", price_per_equivalent_hour=Decimal("7.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 20), pods=[
        pod_for(requests_a["whole"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 9)),
        pod_for(requests_a["h200_1g"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 15)),
        pod_for(b_request, started_at=utc(2026, 11, 4, 8), finished_at=utc(2026, 11, 4, 15)),
    ])
    return b_request


def _teams(response):
    return sorted({row["team"] for row in response.json()["rows"]})


def test_anonymous_gets_401(api):
    assert api().get(URL, PERIOD).status_code == 401


@pytest.mark.parametrize("role_fixture", ["finance_user", "platform_user"])
def test_finance_and_platform_see_every_team(api, usage, request, role_fixture):
    response = api(request.getfixturevalue(role_fixture)).get(URL, PERIOD)
    assert response.status_code == 200
    assert _teams(response) == ["team-a", "team-b"]


def test_an_engineer_sees_only_their_teams(api, usage, engineer, engineer_b):
    assert _teams(api(engineer).get(URL, PERIOD)) == ["team-a"]
    assert _teams(api(engineer_b).get(URL, PERIOD)) == ["team-b"]
    # asking for another team's lines gives nothing, not an error that reveals it
    assert api(engineer_b).get(URL, {**PERIOD, "team": "team-a"}).json()["rows"] == []


def test_rows_carry_hours_cost_and_currency(api, usage, finance_user):
    body = api(finance_user).get(URL, {**PERIOD, "group_by": "team,strategy,gpu_model"}).json()
    assert body["group_by"] == ["team", "strategy", "gpu_model"]
    assert body["rows"] == [
        {"team": "team-a", "strategy": "mig", "gpu_model": "H200-141GB", "category": "usage",
         "device_hours": "7.000000", "gpu_equivalent_hours": "1.000000", "cost": "7.00", "currency": "EUR"},
        {"team": "team-a", "strategy": "whole_gpu", "gpu_model": "H100-80GB", "category": "usage",
         "device_hours": "2.000000", "gpu_equivalent_hours": "2.000000", "cost": "4.00", "currency": "EUR"},
        {"team": "team-b", "strategy": "mig", "gpu_model": "H200-141GB", "category": "usage",
         "device_hours": "7.000000", "gpu_equivalent_hours": "1.000000", "cost": "7.00", "currency": "EUR"},
    ]


def test_every_grouping_is_accepted(api, usage, finance_user):
    body = api(finance_user).get(URL, {**PERIOD, "group_by": "team,cost_center,strategy,gpu_model,mig_profile,cluster,request,day,month"}).json()
    first = body["rows"][0]
    assert {"team", "cost_center", "cluster", "request", "request_name", "day", "month"} <= first.keys()
    assert first["day"] == "2026-11-03" and first["month"] == "2026-11" and first["cost_center"] == "CC-A"


@pytest.mark.parametrize("params, field", [
    ({"end": "2026-12-01"}, "start"),
    ({"start": "2026-11-01"}, "end"),
    ({"start": "2026-13-01", "end": "2026-12-01"}, "start"),
    ({"start": "01/11/2026", "end": "2026-12-01"}, "start"),
    ({"start": "2026-11-01", "end": "2026-11-01"}, "end"),
    ({"start": "2026-11-01", "end": "2026-10-01"}, "end"),
    ({"start": "2020-01-01", "end": "2026-12-01"}, "end"),
    ({**PERIOD, "group_by": "team,colour"}, "group_by"),
    ({**PERIOD, "strategy": "sliced"}, "strategy"),
    ({**PERIOD, "format": "xlsx"}, "format"),
    # An empty filter is not "no filter": the schema says at least one character (found by the API fuzzer).
    ({**PERIOD, "cost_center": ""}, "cost_center"),
    ({**PERIOD, "team": ""}, "team"),
])
def test_a_bad_query_names_the_field(api, finance_user, params, field):
    response = api(finance_user).get(URL, params)
    assert response.status_code in (400, 404)
    if response.status_code == 400:
        assert field in response.json(), response.json()
    else:  # DRF's own format negotiation answers unknown ?format= values
        assert field == "format"


def test_csv_has_the_same_rows_a_header_and_a_dated_filename(api, usage, finance_user):
    params = {**PERIOD, "group_by": "team,strategy,gpu_model"}
    json_rows = api(finance_user).get(URL, params).json()["rows"]
    response = api(finance_user).get(URL, {**params, "format": "csv"})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="gpu-chargeback_2026-11-01_2026-12-01.csv"'
    text = b"".join(response.streaming_content).decode()
    # The header is the first line: no note lines before it (they broke DictReader, pandas and spreadsheets).
    assert text.startswith("period_start,period_end,team,strategy,gpu_model,category,device_hours,"
                           "gpu_equivalent_hours,cost,currency\r\n")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [{k: v for k, v in r.items() if k not in ("period_start", "period_end")} for r in rows] == json_rows
    assert {(r["period_start"], r["period_end"]) for r in rows} == {("2026-11-01", "2026-12-01")}


def test_csv_unpriced_cost_is_an_empty_cell_and_numbers_have_no_exponent(api, requests_a, finance_user):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 20), pods=[
        pod_for(requests_a["ts"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 8, 0, 1))])
    text = b"".join(api(finance_user).get(URL, {**PERIOD, "group_by": "", "format": "csv"}).streaming_content).decode()
    assert text.splitlines()[1] == "2026-11-01,2026-12-01,usage,0.000278,0.000069,,"


def test_engineer_csv_is_scoped_too(api, usage, engineer_b):
    text = b"".join(api(engineer_b).get(URL, {**PERIOD, "format": "csv"}).streaming_content).decode()
    assert "team-b" in text and "team-a" not in text


def test_query_count_is_constant_whatever_the_number_of_rows(api, requests_a, finance_user, engineer):
    def count(user, n_pods, **params):
        usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 28), pods=[
            pod_for(requests_a["whole"], started_at=utc(2026, 11, 1 + i % 25, 8), finished_at=utc(2026, 11, 1 + i % 25, 9))
            for i in range(n_pods)], complete=False)
        client = api(user)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(URL, {**PERIOD, "group_by": "request,day", **params})
            if params.get("format") == "csv":
                b"".join(response.streaming_content)
        assert response.status_code == 200
        return len(queries)

    for user in (finance_user, engineer):
        for fmt in ("json", "csv"):
            assert count(user, 2, format=fmt) == count(user, 40, format=fmt)


def test_rate_cards_intervals_and_adjustments_are_listed(api, usage, finance_user, engineer_b):
    cards = api(engineer_b).get("/api/v1/chargeback/rate-cards/", {"strategy": "mig"}).json()
    assert [c["gpu_model"] for c in cards["results"]] == ["H200-141GB"]
    intervals = api(engineer_b).get("/api/v1/chargeback/intervals/").json()
    assert intervals["count"] == 1 and intervals["results"][0]["gpu_equivalents"] == "1/7"
    assert api(finance_user).get("/api/v1/chargeback/intervals/", {"team": "team-a"}).json()["count"] == 2
    assert api(finance_user).get("/api/v1/chargeback/adjustments/").json()["count"] == 0


def test_collections_are_for_finance_and_platform(api, usage, finance_user, engineer):
    assert api(finance_user).get("/api/v1/chargeback/collections/").json()["results"][0]["pods_seen"] == 3
    assert api(engineer).get("/api/v1/chargeback/collections/").status_code == 403


def test_finance_closes_a_month_over_the_api(api, usage, finance_user, engineer):
    month = f"{period_closable():%Y-%m}"  # last month, whatever today is
    assert api(engineer).post("/api/v1/chargeback/closed-periods/", {"month": month}).status_code == 403
    response = api(finance_user).post("/api/v1/chargeback/closed-periods/", {"month": month})
    assert response.status_code == 201 and response.json()["month"] == month
    assert api(finance_user).post("/api/v1/chargeback/closed-periods/", {"month": month}).status_code == 409
    bad = api(finance_user).post("/api/v1/chargeback/closed-periods/", {"month": "October"})
    assert bad.status_code == 400 and "month" in bad.json()
    assert api(engineer).get("/api/v1/chargeback/closed-periods/").json()["results"][0]["month"] == month


def test_text_a_spreadsheet_would_run_is_neutralised_and_numbers_stay_numbers(api, requests_a, finance_user):
    """A pod's annotation is the engineer's to write: its GPU model reaches finance's CSV as text, never a formula
    (OWASP, CSV injection)."""
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    formulas = ['=HYPERLINK("https://evil.example","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
                "\tx", "\r=1", "＝1+1"]
    pods = [pod_for(requests_a["whole"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 9))]
    for formula in formulas:
        pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 5, 8), finished_at=utc(2026, 11, 5, 9))
        pod["metadata"]["annotations"]["gpu-portal.io/gpu-model"] = formula
        pods.append(pod)
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 20), pods=pods)

    response = api(finance_user).get(URL, {**PERIOD, "group_by": "gpu_model", "format": "csv"})

    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    shown = sorted(row["gpu_model"] for row in rows)
    assert shown == sorted(["H100-80GB", *("'" + formula for formula in formulas)]), shown
    assert not [cell for row in rows for cell in row.values() if cell and cell[0] in "=+-@\t\r＝"]
    h100 = next(row for row in rows if row["gpu_model"] == "H100-80GB")
    assert Decimal(h100["cost"]) == 2 * Decimal(h100["gpu_equivalent_hours"]) > 0
    # Numbers, negative ones included, are never quoted; a number written as text is left a number too.
    from portal.spreadsheet import csv_cell

    assert [csv_cell(v) for v in (Decimal("-12.50"), -3, 1.5, "-12.50", "+7", None)] == [
        "-12.50", "-3", "1.5", "-12.50", "+7", ""]
