"""Prometheus metrics at `/metrics`, computed from the database (and the shared cache) at scrape time.

Why at scrape time: gunicorn runs several worker processes and Celery several more; counters kept in process
memory would each see a fraction of the traffic. Every value here is a query over shared state, so any web
process answers the same, and a restart loses nothing.

Apps plug their metric families in from `AppConfig.ready()`:

    from portal.metrics import register
    register("provisioning.jobs", provisioning.metrics.collect_jobs)

A collector is a function taking no arguments and returning an iterable of
`prometheus_client.core.*MetricFamily` objects. A collector that raises is reported as
`gpu_portal_collector_up{collector="..."} 0` (and logged) instead of breaking the whole scrape.
"""
from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Iterable

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

PREFIX = "gpu_portal_"

CollectorFunction = Callable[[], Iterable[Metric]]
_COLLECTORS: dict[str, CollectorFunction] = {}


def register(name: str, function: CollectorFunction) -> None:
    """Add (or replace, by name) a collector function. Idempotent, so `ready()` may run twice in tests."""
    _COLLECTORS[name] = function


def unregister(name: str) -> None:
    _COLLECTORS.pop(name, None)


def registered() -> dict[str, CollectorFunction]:
    return dict(_COLLECTORS)


class PortalCollector(Collector):
    """Runs every registered collector function; reports each one's health and duration."""

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily(f"{PREFIX}collector_up", "1 if the collector ran without error", labels=["collector"])
        duration = GaugeMetricFamily(
            f"{PREFIX}collector_duration_seconds", "Time the collector took at this scrape", labels=["collector"]
        )
        for name, function in sorted(_COLLECTORS.items()):
            started = time.monotonic()
            try:
                families = list(function())
            except Exception:  # noqa: BLE001 - one broken collector must not hide the others
                logger.exception("metrics collector %s failed", name)
                families, ok = [], 0
            else:
                ok = 1
            yield from families
            up.add_metric([name], ok)
            duration.add_metric([name], time.monotonic() - started)
        yield up
        yield duration


def portal_registry() -> CollectorRegistry:
    # A registry of our own: the default one carries per-process metrics that mean little behind gunicorn.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector())
    return registry


def _authorised(request) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "")
    if not token:
        return True
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


@never_cache
@require_GET
def metrics_view(request):
    """Prometheus exposition (text or OpenMetrics, by the Accept header). Open unless METRICS_TOKEN is set."""
    if not _authorised(request):
        response = HttpResponse("A bearer token is required for /metrics.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(portal_registry()), content_type=content_type)
