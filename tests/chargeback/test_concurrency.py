"""Several workers ingesting the same (or overlapping) pod lists at once never double count."""
from __future__ import annotations

import threading
from datetime import date

import pytest
from django.db import connection

from chargeback.models import UsageInterval
from chargeback.selectors import report_rows
from chargeback.services import usage_ingest
from tests.chargeback.conftest import pod_for, utc

NOW = utc(2026, 11, 20, 12)


def _run_in_threads(calls):
    errors = []

    def run(kwargs):
        try:
            usage_ingest(**kwargs)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(kwargs,)) for kwargs in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_workers_ingesting_the_same_list_give_the_totals_of_one(requests_a, finance_user):
    pods = [pod_for(requests_a[key], started_at=utc(2026, 11, 2 + n // 20, n % 20), finished_at=utc(2026, 11, 2 + n // 20, n % 20 + 1, 7, 13))
            for n, key in enumerate(["whole", "h200_1g", "h200_3g", "a100_1g", "a100_3g", "ts"] * 40)]
    pods += [pod_for(requests_a["ts"], started_at=utc(2026, 11, 5, 9, 0, n)) for n in range(30)]  # still running

    _run_in_threads([{"cluster_name": "gpu-east", "pods": pods, "now": NOW} for _ in range(2)])
    concurrent = report_rows(user=finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1),
                             group_by=["strategy", "gpu_model"], now=NOW)
    assert UsageInterval.objects.count() == len(pods)

    UsageInterval.objects.all().delete()
    usage_ingest(cluster_name="gpu-east", pods=pods, now=NOW)
    single = report_rows(user=finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1),
                         group_by=["strategy", "gpu_model"], now=NOW)
    assert concurrent == single


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_overlapping_reads_from_several_workers_converge(requests_a, finance_user):
    # the same pods read at three moments: running, then some finished; workers commit in any order
    started = [utc(2026, 11, 2, 8, n) for n in range(50)]
    running = [pod_for(requests_a["whole"], uid=f"p{n}", started_at=s) for n, s in enumerate(started)]
    finished = [pod_for(requests_a["whole"], uid=f"p{n}", started_at=s, finished_at=utc(2026, 11, 2, 12, n))
                if n % 2 else running[n] for n, s in enumerate(started)]
    _run_in_threads([
        {"cluster_name": "gpu-east", "pods": running, "now": utc(2026, 11, 2, 10)},
        {"cluster_name": "gpu-east", "pods": finished, "now": utc(2026, 11, 2, 13)},
        {"cluster_name": "gpu-east", "pods": running[:25] + finished[25:], "now": utc(2026, 11, 2, 12, 30)},
    ])
    assert UsageInterval.objects.count() == 50
    ended = dict(UsageInterval.objects.values_list("pod_uid", "ended_at"))
    assert ended == {f"p{n}": utc(2026, 11, 2, 12, n) if n % 2 else None for n in range(50)}
