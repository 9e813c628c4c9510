"""Liveness and readiness endpoints for load balancers and Kubernetes probes."""
from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


@never_cache
@require_GET
def healthz(request):
    """The process answers. Nothing else is checked, so a database outage does not restart every pod."""
    return JsonResponse({"status": "ok"})


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; the message says which
        return f"{type(exc).__name__}: {exc}".strip()


def _check_broker() -> str | None:
    import redis

    try:
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2)
        client.ping()
        return None
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}".strip()


@never_cache
@require_GET
def readyz(request):
    """Ready to serve: the database and the Celery broker both answer."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    ready = not any(checks.values())
    body = {"status": "ready" if ready else "not ready",
            "checks": {name: ("ok" if error is None else error) for name, error in checks.items()}}
    return JsonResponse(body, status=200 if ready else 503)
