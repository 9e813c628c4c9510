"""Prometheus metric families about provisioning jobs, computed in SQL at scrape time (see portal.metrics)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Q, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from portal.metrics import PREFIX

from .choices import JobKind, JobStatus
from .models import ProvisioningJob


def provisioning_jobs() -> Iterable[Metric]:
    rows = {
        row["kind"]: row
        for row in ProvisioningJob.objects.order_by().values("kind").annotate(
            attempts=Sum("attempts"), failed=Count("id", filter=Q(status=JobStatus.FAILED))
        )
    }
    by_status = GaugeMetricFamily(f"{PREFIX}provisioning_jobs", "Provisioning jobs by kind and current status",
                                  labels=["kind", "status"])
    counts = {(r["kind"], r["status"]): r["n"]
              for r in ProvisioningJob.objects.order_by().values("kind", "status").annotate(n=Count("id"))}
    for kind in JobKind.values:
        for status in JobStatus.values:
            by_status.add_metric([kind, status], counts.get((kind, status), 0))
    attempts = CounterMetricFamily(f"{PREFIX}provisioning_attempts", "Apply/teardown attempts made, retries included",
                                   labels=["kind"])
    failures = CounterMetricFamily(f"{PREFIX}provisioning_failures", "Jobs that failed for good", labels=["kind"])
    for kind in JobKind.values:
        attempts.add_metric([kind], (rows.get(kind) or {}).get("attempts") or 0)
        failures.add_metric([kind], (rows.get(kind) or {}).get("failed") or 0)
    yield by_status
    yield attempts
    yield failures


COLLECTORS = {"provisioning.jobs": provisioning_jobs}
