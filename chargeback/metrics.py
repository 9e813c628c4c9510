"""Prometheus metric families about metering, computed in SQL at scrape time (see portal.metrics)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Max
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from portal.metrics import PREFIX
from provisioning.models import Cluster

from .choices import CollectionStatus
from .models import UsageCollection

# Equivalent-seconds of every interval, open ones counted up to now; exact fractions summed in SQL. Seconds, not
# hours: Prometheus wants base units (promtool check metrics), and dashboards divide by 3600.
EQUIVALENT_SECONDS_SQL = """
SELECT coalesce(t.slug, ''), i.strategy, i.category,
       sum(i.equivalents_num::numeric / i.equivalents_den
           * extract(epoch FROM coalesce(i.ended_at, now()) - i.started_at))
FROM chargeback_usageinterval i LEFT JOIN portal_team t ON t.id = i.team_id
GROUP BY 1, 2, 3
"""


def ingestion_lag() -> Iterable[Metric]:
    """Seconds since each metered cluster's last successful pod read (the age of the newest usage data)."""
    family = GaugeMetricFamily(f"{PREFIX}usage_ingestion_lag_seconds",
                               "Seconds since the cluster's pods were last read successfully", labels=["cluster"])
    last = dict(UsageCollection.objects.filter(status=CollectionStatus.OK).order_by()
                .values_list("cluster").annotate(at=Max("listed_at")))
    now = timezone.now()
    for name in Cluster.objects.filter(enabled=True).exclude(api_server="").values_list("name", flat=True):
        if name in last:
            family.add_metric([name], (now - last[name]).total_seconds())
    yield family


def equivalent_seconds() -> Iterable[Metric]:
    family = CounterMetricFamily(f"{PREFIX}gpu_equivalent_seconds",
                                 "GPU-equivalent-seconds metered, by team, strategy and category (usage or waste)",
                                 labels=["team", "strategy", "category"])
    with connection.cursor() as cursor:
        cursor.execute(EQUIVALENT_SECONDS_SQL)
        for team, strategy, category, seconds in cursor.fetchall():
            family.add_metric([team, strategy, category], float(seconds or 0))
    yield family


COLLECTORS = {"chargeback.ingestion_lag": ingestion_lag, "chargeback.equivalent_seconds": equivalent_seconds}
