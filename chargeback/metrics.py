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

# Equivalent-hours of every interval, open ones counted up to now; exact fractions summed in SQL.
EQUIVALENT_HOURS_SQL = """
SELECT coalesce(t.slug, ''), i.strategy, i.category,
       sum(i.equivalents_num::numeric / i.equivalents_den
           * extract(epoch FROM coalesce(i.ended_at, now()) - i.started_at) / 3600)
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


def equivalent_hours() -> Iterable[Metric]:
    family = CounterMetricFamily(f"{PREFIX}gpu_equivalent_hours",
                                 "GPU-equivalent-hours metered, by team, strategy and category (usage or waste)",
                                 labels=["team", "strategy", "category"])
    with connection.cursor() as cursor:
        cursor.execute(EQUIVALENT_HOURS_SQL)
        for team, strategy, category, hours in cursor.fetchall():
            family.add_metric([team, strategy, category], float(hours or 0))
    yield family


COLLECTORS = {"chargeback.ingestion_lag": ingestion_lag, "chargeback.equivalent_hours": equivalent_hours}
