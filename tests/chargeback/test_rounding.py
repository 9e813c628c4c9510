"""Money adds up: a report's rows sum to its total, to the cent, whatever the grouping, and the daily rows of
the CSV sum to the monthly line. Cost is rounded once, per finest line (request x day x strategy x GPU model x
rate segment x ...), and every row is a sum of rounded lines (docs/chargeback.md, "Rounding")."""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal
from fractions import Fraction

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from chargeback.api.serializers import ReportQueryInputSerializer
from chargeback.api.views import report_csv_response
from chargeback.choices import GROUP_BY_CHOICES
from chargeback.models import RateCard
from chargeback.selectors import report_rows
from chargeback.services import usage_ingest
from tests.chargeback import reference
from tests.chargeback.conftest import pod_for, utc

pytestmark = pytest.mark.django_db

URL = "/api/v1/chargeback/report/"
NOW = utc(2026, 12, 5)


def _sums(rows) -> dict[tuple, Decimal]:
    totals: dict[tuple, Decimal] = defaultdict(Decimal)
    for row in rows:
        if row["cost"] not in (None, ""):
            totals[(row["category"], row["currency"])] += Decimal(row["cost"])
    return dict(totals)


def test_half_cent_days_add_up_to_the_total_and_the_monthly_line(api, requests_a, finance_user):
    # given 2 GPUs at 0.01 per GPU-hour for 15 minutes on each of three days: 0.005 a day, exactly half a cent
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("0.01"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    usage_ingest(cluster_name="gpu-east", now=NOW, pods=[
        pod_for(requests_a["whole"], started_at=utc(2026, 11, d, 9), finished_at=utc(2026, 11, d, 9, 15))
        for d in (3, 4, 5)])
    client = api(finance_user)
    period = {"start": "2026-11-01", "end": "2026-12-01"}
    # when the total, the rows by team and by day are asked for
    total = client.get(URL, {**period, "group_by": ""}).json()["rows"]
    by_team = client.get(URL, {**period, "group_by": "team"}).json()["rows"]
    by_day = client.get(URL, {**period, "group_by": "day"}).json()["rows"]
    # then each day is one line of 0.01 (half a cent rounds away from zero), and they add up: 0.03 everywhere
    # (rounding each row's exact sum instead gave a total of 0.02 beside three days of 0.01)
    assert [r["cost"] for r in by_day] == ["0.01", "0.01", "0.01"]
    assert [r["cost"] for r in total] == [r["cost"] for r in by_team] == ["0.03"]
    # and the daily CSV adds up to the monthly one
    daily = b"".join(client.get(URL, {**period, "group_by": "day", "format": "csv"}).streaming_content).decode()
    monthly = b"".join(client.get(URL, {**period, "group_by": "month", "format": "csv"}).streaming_content).decode()
    assert _sums(_csv_rows(daily)) == _sums(_csv_rows(monthly)) == {("usage", "EUR"): Decimal("0.03")}


def _csv_rows(text: str) -> list[dict]:
    """The data rows of a report CSV (its header is its first line)."""
    return list(csv.DictReader(io.StringIO(text)))


def _csv(user, *, start, end, group_by) -> list[dict]:
    params = ReportQueryInputSerializer(data={"start": start.isoformat(), "end": end.isoformat(),
                                              "group_by": ",".join(group_by), "format": "csv"})
    params.is_valid(raise_exception=True)
    return _csv_rows(b"".join(report_csv_response(user=user, params=params, now=NOW).streaming_content).decode())


# --- the property ---------------------------------------------------------------------------------------------

REQUESTS = ["whole", "h200_1g", "h200_3g", "a100_1g", "a100_3g", "ts"]
RATED = [("H100-80GB", "whole_gpu"), ("H200-141GB", "mig"), ("A100-80GB", "mig"), ("L40S-48GB", "time_slicing")]
# Prices that put lines on exact half cents (0.01 x 2 GPUs x 15 min) as well as ones that never do.
PRICES = [Decimal(p) for p in ("0.0100", "0.0300", "0.0700", "1.2345", "2.9000", "3.5000", "7.0000", "0.3333")]
START, END = date(2026, 10, 1), date(2026, 12, 1)
BASE = utc(2026, 9, 30)

pods_strategy = st.lists(st.tuples(
    st.sampled_from(REQUESTS),
    st.one_of(st.integers(0, 62 * 96).map(lambda q: q * 900), st.integers(0, 62 * 86400)),  # start: quarters or seconds
    st.one_of(st.integers(1, 4 * 96).map(lambda q: q * 900), st.integers(1, 5 * 86400)),  # duration
    st.sampled_from([False] * 9 + [True]),  # still running (closed at the report's "now")
), min_size=1, max_size=8)
cards_strategy = st.dictionaries(
    st.sampled_from(RATED),
    st.dictionaries(st.integers(-10, 60), st.sampled_from(PRICES), min_size=1, max_size=3),  # day offset -> price
    max_size=len(RATED),
)
groupings_strategy = st.lists(st.sets(st.sampled_from(GROUP_BY_CHOICES)), min_size=1, max_size=3)


def _load_cards(cards) -> None:
    for (model, strategy), by_day in cards.items():
        RateCard.objects.bulk_create(RateCard(gpu_model=model, strategy=strategy, price_per_equivalent_hour=price,
                                              currency="EUR", valid_from=START + timedelta(days=offset))
                                     for offset, price in by_day.items())


def _load(requests_a, pods, cards) -> None:
    _load_cards(cards)
    usage_ingest(cluster_name="gpu-east", now=NOW, pods=[
        pod_for(requests_a[key], started_at=BASE + timedelta(seconds=at),
                finished_at=None if still_running else BASE + timedelta(seconds=at + length))
        for key, at, length, still_running in pods])


def _keyed(rows, group_by) -> dict[tuple, Decimal | None]:
    names = [n for n in GROUP_BY_CHOICES if n in group_by]
    return {(*(row["request"] if n == "request" else row[n] for n in names), row["category"], row["currency"]):
            row["cost"] for row in rows}


@hypothesis_settings(max_examples=40, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pods=pods_strategy, cards=cards_strategy, groupings=groupings_strategy)
def test_rows_add_up_to_the_total_and_days_to_the_month_whatever_the_usage(requests_a, finance_user, pods, cards,
                                                                           groupings):
    with transaction.atomic():
        _load(requests_a, pods, cards)
        lines = reference.lines(start=START, end=END, now=NOW)
        slug = {requests_a["whole"].team_id: requests_a["whole"].team.slug}
        total = _sums(report_rows(user=finance_user, start=START, end=END, group_by=(), now=NOW))
        for group_by in [*groupings, {"day"}, {"month"}]:
            rows = report_rows(user=finance_user, start=START, end=END, group_by=group_by, now=NOW)
            # each row is the sum of its rounded lines, computed independently, exactly
            names = [n for n in GROUP_BY_CHOICES if n in group_by]
            expected = {(slug[k[0]], *k[1:]) if names[:1] == ["team"] else k: row
                        for k, row in reference.rows(lines, names).items()}
            assert _keyed(rows, group_by) == {k: v["cost"] for k, v in expected.items()}, group_by
            for row in rows:
                key = _keyed([row], group_by).popitem()[0]
                assert Fraction(row["device_seconds"]) == expected[key]["device_seconds"]
            # and the rows add up to the total, to the cent
            assert _sums(rows) == total, group_by
        # the CSV's daily rows add up to its monthly lines
        daily = _csv(finance_user, start=START, end=END, group_by=["day"])
        monthly = _csv(finance_user, start=START, end=END, group_by=["month"])
        per_month = defaultdict(Decimal)
        for row in daily:
            if row["cost"]:
                per_month[(row["day"][:7], row["category"], row["currency"])] += Decimal(row["cost"])
        assert dict(per_month) == {(r["month"], r["category"], r["currency"]): Decimal(r["cost"])
                                   for r in monthly if r["cost"]}
        transaction.set_rollback(True)
