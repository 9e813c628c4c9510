"""The issue's hand-computed scenarios, exact to the second: given pods, when they are ingested and reported,
then device-seconds, GPU-equivalent-seconds and cost are what a person computes with a pencil."""
from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from django.db import IntegrityError, transaction

from chargeback.models import RateCard, UsageInterval
from chargeback.selectors import report_rows
from chargeback.services import usage_ingest
from tests.chargeback.conftest import pod_for, utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 11, 20, 12, 0, 0)


def exact(value) -> Fraction:
    """A report's Decimal as a fraction (the SQL divides once, at 24 decimal places)."""
    return Fraction(value)


def assert_seconds(row, device_seconds, equivalent_seconds: Fraction):
    assert Fraction(row["device_seconds"]) == device_seconds
    # 24 decimal places: the fraction itself, rounded once.
    assert abs(exact(row["gpu_equivalent_seconds"]) - equivalent_seconds) < Fraction(1, 10**20)
    assert row["device_hours"] == hours(Fraction(device_seconds))
    assert row["gpu_equivalent_hours"] == hours(equivalent_seconds)


def hours(seconds: Fraction) -> Decimal:
    """Seconds as hours, rounded half-up to 6 places, computed from the exact fraction."""
    return (Decimal(seconds.numerator) / Decimal(seconds.denominator) / 3600).quantize(
        Decimal("0.000001"), rounding=ROUND_HALF_UP)


def one_row(finance_user, *, start=date(2026, 11, 1), end=date(2026, 12, 1), group_by=("request",), **filters):
    rows = report_rows(user=finance_user, start=start, end=end, group_by=group_by, now=NOW, filters=filters)
    assert len(rows) == 1, rows
    return rows[0]


def test_a_30_second_pod_counts_30_seconds(requests_a, finance_user):
    # given a one-GPU pod that ran for 30 seconds, and a rate of 3.60 per GPU-hour
    pod = pod_for(requests_a["whole"], devices=1, started_at=utc(2026, 11, 3, 10, 0, 0),
                  finished_at=utc(2026, 11, 3, 10, 0, 30))
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("3.60"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    # when it is ingested
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    # then the report holds exactly 30 device-seconds and 30 equivalent-seconds, costing 0.03
    row = one_row(finance_user)
    assert_seconds(row, 30, Fraction(30))
    assert row["device_hours"] == Decimal("0.008333")
    assert row["cost"] == Decimal("0.03") and row["currency"] == "EUR"


def test_a_pod_spanning_a_month_boundary_is_split_at_midnight_utc(requests_a, finance_user):
    pod = pod_for(requests_a["whole"], devices=1, started_at=utc(2026, 10, 31, 23, 59, 0),
                  finished_at=utc(2026, 11, 1, 0, 1, 30))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    october = one_row(finance_user, start=date(2026, 10, 1), end=date(2026, 11, 1))
    november = one_row(finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1))
    assert_seconds(october, 60, Fraction(60))
    assert_seconds(november, 90, Fraction(90))
    by_month = report_rows(user=finance_user, start=date(2026, 10, 1), end=date(2026, 12, 1), group_by=["month"],
                           now=NOW)
    assert [(r["month"], Fraction(r["device_seconds"])) for r in by_month] == [("2026-10", 60), ("2026-11", 90)]


@pytest.mark.parametrize("key, slices", [("h200_1g", 1), ("h200_3g", 3), ("a100_1g", 1), ("a100_3g", 3)])
def test_mig_slices_count_as_their_share_of_the_gpu(requests_a, finance_user, key, slices):
    # given a MIG pod holding one slice for exactly one hour; both H200 and A100 have 7 compute slices
    pod = pod_for(requests_a[key], started_at=utc(2026, 11, 2, 8, 0, 0), finished_at=utc(2026, 11, 2, 9, 0, 0))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    row = one_row(finance_user)
    # then one device-hour, but slices/7 of a GPU-hour (Run:ai would say one GPU-hour)
    assert_seconds(row, 3600, Fraction(3600 * slices, 7))
    interval = UsageInterval.objects.get()
    assert interval.equivalents == Fraction(slices, 7) and interval.flags == []


def test_mig_on_h200_and_a100_priced_per_model(requests_a, finance_user):
    RateCard.objects.create(gpu_model="H200-141GB", strategy="mig", price_per_equivalent_hour=Decimal("7.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    RateCard.objects.create(gpu_model="A100-80GB", strategy="mig", price_per_equivalent_hour=Decimal("3.50"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    pods = [pod_for(requests_a[k], started_at=utc(2026, 11, 2, 8), finished_at=utc(2026, 11, 2, 10))
            for k in ("h200_1g", "h200_3g", "a100_1g", "a100_3g")]
    usage_ingest(cluster_name="gpu-east", pods=pods, now=NOW)
    rows = {r["request_name"]: r for r in report_rows(user=finance_user, start=date(2026, 11, 1),
                                                     end=date(2026, 12, 1), group_by=["request"], now=NOW)}
    # 2 h x 1/7 x 7.00 = 2.00; 2 h x 3/7 x 7.00 = 6.00; 2 h x 1/7 x 3.50 = 1.00; 2 h x 3/7 x 3.50 = 3.00
    assert {name: row["cost"] for name, row in rows.items()} == {
        "h200-small": Decimal("2.00"), "h200-medium": Decimal("6.00"),
        "a100-small": Decimal("1.00"), "a100-medium": Decimal("3.00"),
    }


def test_a_time_sliced_pod_on_a_4_replica_pool_is_a_quarter_gpu(requests_a, finance_user):
    pod = pod_for(requests_a["ts"], started_at=utc(2026, 11, 4, 9, 0, 0), finished_at=utc(2026, 11, 4, 17, 0, 0))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    row = one_row(finance_user)
    assert_seconds(row, 8 * 3600, Fraction(8 * 3600, 4))
    assert row["gpu_equivalent_hours"] == Decimal("2.000000")


def test_a_rate_change_mid_month_splits_the_interval_at_the_change(requests_a, finance_user):
    # given 2.00 until the 15th and 3.00 from the 15th (00:00 UTC), and a 2-GPU pod from the 14th 12:00 to the
    # 15th 12:00
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.00"),
                            currency="EUR", valid_from=date(2026, 11, 1))
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("3.00"),
                            currency="EUR", valid_from=date(2026, 11, 15))
    pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 14, 12), finished_at=utc(2026, 11, 15, 12))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    # then 12 h x 2 GPUs x 2.00 + 12 h x 2 GPUs x 3.00 = 48.00 + 72.00
    row = one_row(finance_user)
    assert row["cost"] == Decimal("120.00")
    assert_seconds(row, 2 * 24 * 3600, Fraction(2 * 24 * 3600))
    by_day = report_rows(user=finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1), group_by=["day"], now=NOW)
    assert [(r["day"], r["cost"]) for r in by_day] == [("2026-11-14", Decimal("48.00")), ("2026-11-15", Decimal("72.00"))]


def test_time_before_the_first_rate_card_is_unpriced_not_free(requests_a, finance_user):
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.00"),
                            currency="EUR", valid_from=date(2026, 11, 15))
    pod = pod_for(requests_a["whole"], devices=1, started_at=utc(2026, 11, 14, 23), finished_at=utc(2026, 11, 15, 1))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    rows = report_rows(user=finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1), group_by=[], now=NOW)
    assert [(r["currency"], r["cost"], r["device_hours"]) for r in rows] == [
        ("", None, Decimal("1.000000")), ("EUR", Decimal("2.00"), Decimal("1.000000"))]


def test_ingestion_repeated_three_times_gives_identical_totals(requests_a, finance_user):
    pods = [
        pod_for(requests_a["whole"], started_at=utc(2026, 11, 3, 10), finished_at=utc(2026, 11, 3, 10, 0, 30)),
        pod_for(requests_a["h200_1g"], started_at=utc(2026, 11, 3, 10), finished_at=utc(2026, 11, 5, 7, 13, 11)),
        pod_for(requests_a["ts"], started_at=utc(2026, 11, 10, 9)),  # still running
    ]
    totals, written = [], []
    for attempt in range(3):
        result = usage_ingest(cluster_name="gpu-east", pods=pods, now=utc(2026, 11, 20, 12, 0, attempt))
        written.append(result.rows_written)
        totals.append(report_rows(user=finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1),
                                  group_by=["request"], now=NOW))
    assert written == [3, 0, 0]
    assert totals[0] == totals[1] == totals[2]
    assert UsageInterval.objects.count() == 3
    assert sum(Fraction(r["device_seconds"]) for r in totals[0]) == 2 * 30 + 3600 * 45 + 13 * 60 + 11 + 10 * 86400 + 3 * 3600


def test_an_overlapping_interval_for_the_same_pod_is_rejected_by_the_database(requests_a):
    pod = pod_for(requests_a["whole"], uid="pod-1", started_at=utc(2026, 11, 3, 10), finished_at=utc(2026, 11, 3, 12))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    existing = UsageInterval.objects.get()
    overlapping = UsageInterval(
        pod_uid="pod-1", cluster="gpu-east", strategy="whole_gpu", gpu_model="H100-80GB", devices=2,
        equivalents_num=2, equivalents_den=1, started_at=utc(2026, 11, 3, 11), ended_at=utc(2026, 11, 3, 13),
        first_seen_at=NOW,
    )
    with pytest.raises(IntegrityError, match="chargeback_usageinterval_no_overlap_per_pod"), transaction.atomic():
        overlapping.save()
    # an open interval overlaps everything after its start
    existing.ended_at = None
    existing.save()
    overlapping.started_at, overlapping.ended_at = utc(2026, 11, 30), utc(2026, 12, 1)
    with pytest.raises(IntegrityError, match="chargeback_usageinterval_no_overlap_per_pod"), transaction.atomic():
        overlapping.save()
    # the same stretch of another pod is fine
    overlapping.pod_uid = "pod-2"
    overlapping.save()
