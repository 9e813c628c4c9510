"""The ledger as finance reads it: the CSV's header is its first line, so csv.DictReader and pandas read it as it
is, and its sums equal the grand total of the page and of the JSON to the cent; the page shows words and hours to two
decimals (the CSV keeps six); "Show this month in full" keeps the grouping; finance lands on /chargeback/."""
from __future__ import annotations

import csv
import io
import re
from datetime import date
from decimal import Decimal

import pandas
import pytest
from django.test import Client
from rest_framework.test import APIClient

from chargeback.models import RateCard
from chargeback.services import usage_ingest
from tests.chargeback.conftest import make_request, pod_for, utc

pytestmark = pytest.mark.django_db

PERIOD = {"start": "2026-11-01", "end": "2026-12-01"}
GROUPING = ["team", "strategy", "gpu_model"]


@pytest.fixture
def priced_usage(requests_a, team_b, engineer_b):
    """Odd prices and odd minutes, so that cents are rounded on many lines; one model left unpriced."""
    for model, strategy, price in (("H100-80GB", "whole_gpu", "2.9137"), ("H200-141GB", "mig", "3.3333"),
                                   ("L40S-48GB", "time_slicing", "0.7771")):
        RateCard.objects.create(gpu_model=model, strategy=strategy, price_per_equivalent_hour=Decimal(price),
                                currency="EUR", valid_from=date(2026, 1, 1))
    b_request = make_request(team_b, engineer_b, strategy="whole_gpu", gpu_model="H100-80GB", name="b-train")
    pods = []
    for day in range(3, 12):
        pods += [pod_for(requests_a["whole"], started_at=utc(2026, 11, day, 8), finished_at=utc(2026, 11, day, 9, day)),
                 pod_for(requests_a["h200_1g"], started_at=utc(2026, 11, day, 7), finished_at=utc(2026, 11, day, 13, 7)),
                 pod_for(requests_a["ts"], started_at=utc(2026, 11, day, 1), finished_at=utc(2026, 11, day, 2, 41)),
                 pod_for(requests_a["a100_1g"], started_at=utc(2026, 11, day, 3), finished_at=utc(2026, 11, day, 4)),
                 pod_for(b_request, started_at=utc(2026, 11, day, 10), finished_at=utc(2026, 11, day, 17, 13))]
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 20), pods=pods)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _page_totals(page: str) -> dict[str, str]:
    """The grand total row of the finance page, cell by cell, as shown (thousands separators removed)."""
    foot = page[page.index('data-testid="report-total"'):page.index("</tfoot>")]
    return {key: re.sub(r"<[^>]+>|,| h$", "", value).strip()
            for key, value in re.findall(r'data-total="(\w+)">(.*?)</td>', foot)}


def test_the_csv_reads_in_dictreader_and_pandas_and_adds_up_to_the_pages_total_to_the_cent(priced_usage, finance_user):
    query = {**PERIOD, "group_by": GROUPING}
    page = _client(finance_user).get("/chargeback/", query).content.decode()
    shown = _page_totals(page)
    api = APIClient()
    api.force_authenticate(finance_user)
    params = {**PERIOD, "group_by": ",".join(GROUPING)}
    report = api.get("/api/v1/chargeback/report/", params).json()
    text = b"".join(api.get("/api/v1/chargeback/report/", {**params, "format": "csv"}).streaming_content).decode()

    assert text.splitlines()[0].startswith("period_start,period_end,team,strategy,gpu_model,category,")
    by_dictreader = list(csv.DictReader(io.StringIO(text)))
    by_pandas = pandas.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert len(by_dictreader) == len(by_pandas) == len(report["rows"]) > 3
    assert list(by_pandas.columns) == list(by_dictreader[0])

    priced = [Decimal(r["cost"]) for r in by_dictreader if r["cost"]]
    cents_dictreader = sum(priced, Decimal(0))
    cents_pandas = sum((Decimal(c) for c in by_pandas["cost"] if c), Decimal(0))
    [json_total] = report["total"]["costs"]
    assert json_total["currency"] == "EUR" and shown["currency"] == "EUR"
    assert cents_dictreader == cents_pandas == Decimal(json_total["cost"]) == Decimal(shown["cost"])
    # A100-80GB MIG has no rate card: its hours are in the total, its cost is not.
    unpriced = [r for r in by_dictreader if not r["cost"]]
    assert unpriced and all(r["gpu_model"] == "A100-80GB" and r["currency"] == "" for r in unpriced)
    assert Decimal(report["total"]["unpriced_gpu_equivalent_hours"]) > 0

    # Hours: six decimals in the CSV and the JSON, two on the page, the same total within the rounding of each row.
    hours = sum((Decimal(r["gpu_equivalent_hours"]) for r in by_dictreader), Decimal(0))
    assert all(len(r["gpu_equivalent_hours"].split(".")[1]) == 6 for r in by_dictreader if "." in r["gpu_equivalent_hours"])
    assert abs(hours - Decimal(report["total"]["gpu_equivalent_hours"])) <= Decimal("0.000001") * len(by_dictreader)
    assert Decimal(shown["gpu_equivalent_hours"]) == Decimal(report["total"]["gpu_equivalent_hours"]).quantize(
        Decimal("0.01"))
    assert re.fullmatch(r"\d+\.\d\d", shown["device_hours"])


def test_the_page_shows_words_and_two_decimals(priced_usage, finance_user):
    page = _client(finance_user).get("/chargeback/", {**PERIOD, "group_by": GROUPING}).content.decode()
    table = page[page.index('data-testid="report-table"'):]
    for identifier in ("whole_gpu", "time_slicing", ">mig<"):
        assert identifier not in table, identifier
    assert "whole GPU" in table and "MIG slice" in table and "time-sliced GPU share" in table
    cells = re.findall(r'<td class="num">([\d,.]+) h</td>', table)
    assert cells and all(re.fullmatch(r"[\d,]+\.\d\d", c) for c in cells), cells


def test_show_this_month_in_full_keeps_the_grouping(finance_user):
    page = _client(finance_user).get("/chargeback/", {**PERIOD, "group_by": ["team", "cluster"]}).content.decode()
    link = re.search(r'<a href="(\?[^"]+)">Show this month in full</a>', page)
    assert link, "the month-so-far card links to this month"
    assert "group_by=team&amp;group_by=cluster" in link.group(1)


def test_the_json_total_is_the_sum_of_its_rows(priced_usage, finance_user):
    api = APIClient()
    api.force_authenticate(finance_user)
    report = api.get("/api/v1/chargeback/report/", {**PERIOD, "group_by": "team,day"}).json()
    costs = sum((Decimal(r["cost"]) for r in report["rows"] if r["cost"] is not None), Decimal(0))
    assert report["total"]["costs"] == [{"currency": "EUR", "cost": f"{costs:.2f}"}]


@pytest.mark.parametrize("role,lands", [("finance", "/chargeback/"), ("engineer", "/requests/"),
                                        ("platform", "/requests/")])
def test_each_persona_lands_on_its_page(role, lands, request):
    user = request.getfixturevalue({"finance": "finance_user", "engineer": "engineer",
                                    "platform": "platform_user"}[role])
    response = _client(user).get("/")
    assert response.status_code == 302 and response["Location"] == lands
