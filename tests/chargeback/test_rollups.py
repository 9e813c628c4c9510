"""Rollups: the report read from daily rollups, frozen lines and the few raw rows they cannot hold equals the raw
reference query row by row, over random usage with rate changes, a month close and late data; and the rollup
table always equals the intervals summed from scratch."""
from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from chargeback.models import UsageInterval, UsageRollup
from chargeback.selectors import report_rows, report_rows_regrouped
from chargeback.services import period_close, usage_ingest, usage_mark_waste
from tests.chargeback.conftest import pod_for, utc
from tests.chargeback.test_rounding import REQUESTS, _load_cards, cards_strategy

pytestmark = pytest.mark.django_db

OCT, NOV, DEC = utc(2026, 10, 1).date(), utc(2026, 11, 1).date(), utc(2026, 12, 1).date()
BASE = utc(2026, 9, 28)
FIRST_PASS, CLOSE, LATE_PASS, NOW = utc(2026, 11, 3), utc(2026, 11, 3, 1), utc(2026, 11, 25), utc(2026, 12, 5)
MIDDAY = utc(2026, 11, 27, 13, 17, 5) + timedelta(microseconds=250)  # a report run today: open pods end mid-day
SPAN = int((FIRST_PASS - BASE).total_seconds())
GROUPINGS = [(), ("day",), ("month",), ("request", "day"), ("team", "strategy", "gpu_model"),
             ("cluster", "mig_profile", "month"), ("cost_center", "request")]

pods_strategy = st.lists(st.tuples(
    st.sampled_from(REQUESTS),
    st.one_of(st.integers(0, SPAN // 900).map(lambda q: q * 900), st.integers(0, SPAN - 1)),  # start
    st.one_of(st.integers(1, 4 * 96).map(lambda q: q * 900), st.integers(1, 5 * 86400),
              st.none()),  # duration; None: still running at the first pass
), min_size=1, max_size=6)
# a gang: pods of one request started seconds apart on one day, still running (the report sums such open pods
# per line and first day before cutting them into days)
gang_strategy = st.one_of(st.none(), st.tuples(st.sampled_from(REQUESTS), st.integers(0, SPAN - 3600),
                                               st.integers(2, 4)))
late_strategy = st.fixed_dictionaries({
    # what the late pass says of the first pass's pods: finished after this many seconds from its start,
    # or not listed (a complete list then closes it at the first pass)
    "finishes": st.lists(st.one_of(st.integers(1, 40 * 86400), st.none()), max_size=6),
    "complete": st.booleans(),
    # pods of October first seen after the close
    "new": st.lists(st.tuples(st.sampled_from(REQUESTS), st.integers(2 * 86400, 33 * 86400),
                              st.integers(60, 3 * 86400)), max_size=3),
    # a waste window over one request, in October and November
    "waste": st.one_of(st.none(), st.tuples(st.sampled_from(REQUESTS), st.integers(3, 50), st.integers(1, 72))),
})


def _all_reports() -> dict:
    reports = {(window, group_by, source): report_rows(user=None, start=window[0], end=window[1], group_by=group_by,
                                                        now=NOW, source=source)
               for window in ((OCT, NOV), (NOV, DEC), (OCT, DEC)) for group_by in GROUPINGS
               for source in ("rollups", "raw")}
    reports.update({((NOV, DEC), group_by, source, "midday"): report_rows(
        user=None, start=NOV, end=DEC, group_by=group_by, now=MIDDAY, source=source)
        for group_by in GROUPINGS for source in ("rollups", "raw")})
    return reports


def _rollups_from_scratch() -> dict:
    """Microseconds x devices and x equivalents_num per rollup key, summed from the ended intervals."""
    sums = defaultdict(lambda: [0, 0])
    for iv in UsageInterval.objects.filter(ended_at__isnull=False):
        day = iv.started_at.replace(hour=0, minute=0, second=0, microsecond=0)
        while day < iv.ended_at:
            us = (min(iv.ended_at, day + timedelta(days=1)) - max(iv.started_at, day)) // timedelta(microseconds=1)
            if us > 0:
                key = (iv.team_id, iv.cost_center, iv.cluster, iv.strategy, iv.gpu_model, iv.mig_profile,
                       iv.request_id, iv.category, day, iv.equivalents_den)
                sums[key][0] += us * iv.devices
                sums[key][1] += us * iv.equivalents_num
            day += timedelta(days=1)
    return {k: tuple(v) for k, v in sums.items() if v != [0, 0]}


def _rollups_stored() -> dict:
    return {(r.team_id, r.cost_center, r.cluster, r.strategy, r.gpu_model, r.mig_profile, r.request_id, r.category,
             r.day, r.den): (int(r.device_us), int(r.eq_us_num))
            for r in UsageRollup.objects.all() if (r.device_us, r.eq_us_num) != (0, 0)}


def _check(*, closed_october=None) -> dict:
    assert _rollups_stored() == _rollups_from_scratch()
    reports = _all_reports()
    for (window, group_by, source, *when), rows in reports.items():
        if source == "rollups":
            assert rows == reports[(window, group_by, "raw", *when)], (window, group_by, when)
            # the finance page's chart sums the table's rows instead of running its own report
            if group_by == ("team", "strategy", "gpu_model"):
                assert report_rows_regrouped(rows, group_by=()) == reports[(window, (), "raw", *when)]
            if group_by == ("request", "day"):
                assert report_rows_regrouped(rows, group_by=("day",)) == reports[(window, ("day",), "raw", *when)]
    if closed_october is not None:  # a closed month never changes
        assert {k: v for k, v in reports.items() if k[0] == (OCT, NOV)} == closed_october
    return reports


@hypothesis_settings(max_examples=25, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pods=pods_strategy, gang=gang_strategy, cards=cards_strategy, late=late_strategy)
def test_rollups_equal_the_raw_query_through_close_and_late_data(requests_a, finance_user, pods, gang, cards, late):
    with transaction.atomic():
        _load_cards(cards)
        # given a first pass over October and early November, and October closed
        first = [(key, BASE + timedelta(seconds=at), None if length is None else BASE + timedelta(seconds=at + length),
                  f"pod-{n}") for n, (key, at, length) in enumerate(pods)]
        if gang:
            key, at, size = gang
            first += [(key, BASE + timedelta(seconds=at + 7 * n), None, f"gang-{n}") for n in range(size)]
        usage_ingest(cluster_name="gpu-east", now=FIRST_PASS, pods=[
            pod_for(requests_a[key], uid=uid, started_at=s, finished_at=e) for key, s, e, uid in first])
        _check()
        period_close(month=OCT, user=finance_user, now=CLOSE)
        october = {k: v for k, v in _check().items() if k[0] == (OCT, NOV)}
        # when late data arrives: finishes (some inside October), vanished pods, new October pods, waste
        relisted = []
        for (key, s, e, uid), finish in zip(first, late["finishes"] + [None] * len(first)):
            if finish is not None:
                relisted.append(pod_for(requests_a[key], uid=uid, started_at=s,
                                        finished_at=e or min(s + timedelta(seconds=finish), LATE_PASS)))
            elif not late["complete"] or e is not None:
                relisted.append(pod_for(requests_a[key], uid=uid, started_at=s, finished_at=e))
        relisted += [pod_for(requests_a[key], uid=f"late-{n}", started_at=BASE + timedelta(seconds=at),
                             finished_at=BASE + timedelta(seconds=at + length))
                     for n, (key, at, length) in enumerate(late["new"])]
        usage_ingest(cluster_name="gpu-east", now=LATE_PASS, pods=relisted, complete=late["complete"])
        _check(closed_october=october)
        if late["waste"]:
            key, day, hours = late["waste"]
            start = BASE + timedelta(days=day)
            usage_mark_waste(request_id=requests_a[key].pk, started_at=start,
                             ended_at=min(start + timedelta(hours=hours), LATE_PASS), now=LATE_PASS)
            _check(closed_october=october)
        transaction.set_rollback(True)
