"""Month close: a closed month's lines never change; late data becomes adjustment lines in the next open month."""
from __future__ import annotations

from datetime import date
from decimal import Decimal
from fractions import Fraction

import pytest

from chargeback.models import Adjustment, ClosedPeriod, RateCard, UsageInterval
from chargeback.selectors import report_rows
from chargeback.services import (
    frozen_until,
    period_closable,
    period_close,
    rate_card_create,
    rate_card_delete,
    rate_card_update,
    usage_ingest,
    usage_mark_waste,
)
from portal.errors import Conflict, InvalidInput, PermissionDenied
from tests.chargeback.conftest import pod_for, utc

pytestmark = pytest.mark.django_db

OCT, NOV, DEC = date(2026, 10, 1), date(2026, 11, 1), date(2026, 12, 1)
NOW = utc(2026, 11, 20, 12)


def report(user, start, end, group_by=("request",)):
    return report_rows(user=user, start=start, end=end, group_by=group_by, now=NOW)


@pytest.fixture
def priced(finance_user):
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))


def test_months_close_in_order_once_they_are_over(finance_user, engineer):
    with pytest.raises(PermissionDenied):
        period_close(month=OCT, user=engineer, now=NOW)
    with pytest.raises(InvalidInput, match="not over yet") as exc:
        period_close(month=NOV, user=finance_user, now=NOW)
    assert exc.value.field == "month"
    assert period_closable(now=NOW) == OCT
    period_close(month=OCT, user=finance_user, now=NOW)
    with pytest.raises(Conflict):
        period_close(month=OCT, user=finance_user, now=NOW)
    assert period_closable(now=NOW) is None  # November is still running
    assert period_closable(now=utc(2027, 1, 3)) == NOV
    with pytest.raises(InvalidInput, match="close 2026-11 next"):
        period_close(month=DEC, user=finance_user, now=utc(2027, 1, 3))
    assert frozen_until() == utc(2026, 11, 1)


def test_late_data_for_a_closed_month_is_booked_in_the_next_open_month(requests_a, finance_user, priced):
    # given October with one 1-hour pod (2 GPUs x 2.00 = 4.00), closed
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 10, 30), pods=[
        pod_for(requests_a["whole"], started_at=utc(2026, 10, 10, 8), finished_at=utc(2026, 10, 10, 9))])
    closed = period_close(month=OCT, user=finance_user, now=utc(2026, 11, 2))
    october_at_close = report(finance_user, OCT, NOV)
    assert [r["cost"] for r in october_at_close] == [Decimal("4.00")]
    assert closed.totals == [{"category": "usage", "currency": "EUR", "device_hours": "2.000000",
                              "gpu_equivalent_hours": "2.000000", "cost": "4.00"}]
    # when the collector, down for days, delivers a 30-minute October pod
    late = pod_for(requests_a["whole"], started_at=utc(2026, 10, 20, 8), finished_at=utc(2026, 10, 20, 8, 30))
    result = usage_ingest(cluster_name="gpu-east", pods=[late], now=NOW, complete=False)
    # then October is unchanged, and November carries an adjustment line of 2 GPUs x 0.5 h x 2.00
    assert result.adjustments == 1
    assert report(finance_user, OCT, NOV) == october_at_close
    november = report(finance_user, NOV, DEC, group_by=["request", "month"])
    assert [(r["month"], r["category"], r["cost"], Fraction(r["device_seconds"])) for r in november] == [
        ("2026-11", "adjustment", Decimal("2.00"), 3600)]
    adjustment = Adjustment.objects.get()
    assert (adjustment.closed_month, adjustment.booked_at, adjustment.sign) == (OCT, utc(2026, 11, 1), 1)
    # and both months together count everything once
    both = report(finance_user, OCT, DEC, group_by=[])
    assert [(r["category"], r["cost"]) for r in both] == [("adjustment", Decimal("2.00")), ("usage", Decimal("4.00"))]


def test_a_pod_running_across_the_close_is_not_an_adjustment(requests_a, finance_user, priced):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 10, 31, 12), pods=[
        pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 10, 31, 20))])
    period_close(month=OCT, user=finance_user, now=utc(2026, 11, 1, 6))
    october = report(finance_user, OCT, NOV)
    # it finishes in November: October keeps its 4 hours, nothing is adjusted
    result = usage_ingest(cluster_name="gpu-east", now=NOW, pods=[
        pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 10, 31, 20), finished_at=utc(2026, 11, 1, 2))])
    assert result.updated == 1 and result.adjustments == 0
    assert report(finance_user, OCT, NOV) == october
    assert Fraction(report(finance_user, NOV, DEC)[0]["device_seconds"]) == 2 * 2 * 3600


def test_a_pod_that_vanished_before_the_close_gives_time_back_through_an_adjustment(requests_a, finance_user, priced):
    pod = pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 10, 31, 20))
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 10, 31, 21), pods=[pod])
    period_close(month=OCT, user=finance_user, now=utc(2026, 11, 1, 6))  # the open pod showed 4 h in October
    october = report(finance_user, OCT, NOV)
    result = usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 1, 7), pods=[])
    # it was last seen at 21:00: October loses 3 h, booked as a negative line in November
    assert result.vanished == 1 and result.adjustments == 1
    assert report(finance_user, OCT, NOV) == october
    [line] = report(finance_user, NOV, DEC)
    assert (line["category"], Fraction(line["device_seconds"]), line["cost"]) == ("adjustment", -2 * 3 * 3600, Decimal("-12.00"))


def test_rates_of_a_closed_month_are_frozen(finance_user, platform_user, engineer):
    card = rate_card_create(user=finance_user, gpu_model="H100-80GB", strategy="whole_gpu",
                            price_per_equivalent_hour=Decimal("2.00"), currency="eur", valid_from=date(2026, 10, 1))
    assert card.currency == "EUR"
    with pytest.raises(PermissionDenied):
        rate_card_create(user=engineer, gpu_model="H100-80GB", strategy="whole_gpu",
                         price_per_equivalent_hour=Decimal("1"), currency="EUR", valid_from=date(2026, 12, 1))
    with pytest.raises(InvalidInput) as exc:
        rate_card_create(user=finance_user, gpu_model="L40S-48GB", strategy="mig",
                         price_per_equivalent_hour=Decimal("1"), currency="EUR", valid_from=date(2026, 12, 1))
    assert exc.value.field == "strategy"
    period_close(month=OCT, user=finance_user, now=NOW)
    with pytest.raises(InvalidInput, match="closed") as exc:
        rate_card_create(user=platform_user, gpu_model="H100-80GB", strategy="whole_gpu",
                         price_per_equivalent_hour=Decimal("3.00"), currency="EUR", valid_from=date(2026, 10, 15))
    assert exc.value.field == "valid_from"
    with pytest.raises(InvalidInput, match="closed month"):
        rate_card_update(user=finance_user, rate_card=card, price_per_equivalent_hour=Decimal("9.99"))
    with pytest.raises(InvalidInput):
        rate_card_delete(user=finance_user, rate_card=card)
    later = rate_card_create(user=platform_user, gpu_model="H100-80GB", strategy="whole_gpu",
                             price_per_equivalent_hour=Decimal("3.00"), currency="EUR", valid_from=date(2026, 11, 15))
    rate_card_update(user=finance_user, rate_card=later, price_per_equivalent_hour=Decimal("2.50"))
    rate_card_delete(user=finance_user, rate_card=later)
    assert list(RateCard.objects.values_list("price_per_equivalent_hour", flat=True)) == [Decimal("2.0000")]


def test_waste_is_its_own_line(requests_a, finance_user, priced):
    pod = pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10))
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 12), pods=[pod])
    # the gang stalled from 10:00 to 10:45: burnt time, reclassified
    assert usage_mark_waste(request_id=requests_a["whole"].pk, started_at=utc(2026, 11, 3, 9),
                            ended_at=utc(2026, 11, 3, 10, 45), now=NOW) == 1
    rows = report_rows(user=finance_user, start=NOV, end=DEC, group_by=[], now=utc(2026, 11, 3, 12))
    assert [(r["category"], Fraction(r["device_seconds"]), r["cost"]) for r in rows] == [
        ("usage", 2 * 75 * 60, Decimal("5.00")), ("waste", 2 * 45 * 60, Decimal("3.00"))]
    # later reads still close the pod's last segment, and the waste stays
    finished = pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10), finished_at=utc(2026, 11, 3, 13))
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 14), pods=[finished])
    assert list(UsageInterval.objects.order_by("started_at").values_list("category", "started_at", "ended_at")) == [
        ("waste", utc(2026, 11, 3, 10), utc(2026, 11, 3, 10, 45)),
        ("usage", utc(2026, 11, 3, 10, 45), utc(2026, 11, 3, 13)),
    ]
    with pytest.raises(InvalidInput):
        usage_mark_waste(request_id=requests_a["whole"].pk, started_at=NOW, ended_at=utc(2026, 12, 1), now=NOW)


def test_waste_found_after_the_close_moves_through_adjustments(requests_a, finance_user, priced):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 10, 30), pods=[
        pod_for(requests_a["whole"], started_at=utc(2026, 10, 10, 8), finished_at=utc(2026, 10, 10, 10))])
    period_close(month=OCT, user=finance_user, now=NOW)
    october = report(finance_user, OCT, NOV, group_by=[])
    usage_mark_waste(request_id=requests_a["whole"].pk, started_at=utc(2026, 10, 10, 8),
                     ended_at=utc(2026, 10, 10, 9), now=NOW)
    assert report(finance_user, OCT, NOV, group_by=[]) == october
    november = report_rows(user=finance_user, start=NOV, end=DEC, group_by=[], now=NOW)
    # -1 h usage and +1 h waste (2 GPUs), booked as adjustments in November
    assert [(r["category"], Fraction(r["device_seconds"]), r["cost"]) for r in november] == [
        ("adjustment", -7200, Decimal("-4.00")), ("waste_adjustment", 7200, Decimal("4.00"))]
    assert sorted(Adjustment.objects.values_list("category", "sign")) == [("usage", -1), ("waste", 1)]
