"""Metric families about the portal's own machinery (registered in PortalConfig.ready())."""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from .metrics import PREFIX
from .selectors import worker_heartbeat as heartbeat_selector


def worker_heartbeat() -> Iterable[Metric]:
    """Seconds since a Celery worker last ran `portal.ping` (absent until one has). Beat sends one a minute,
    so a value well above 60 means the workers, the broker or beat are stuck."""
    heartbeat = heartbeat_selector()
    family = GaugeMetricFamily(f"{PREFIX}worker_heartbeat_age_seconds",
                               "Seconds since a Celery worker last ran the portal.ping task")
    if heartbeat is not None:
        family.add_metric([], heartbeat["age_seconds"])
    yield family
