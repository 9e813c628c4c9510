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


class ProbeEndpointsMiddleware:
    """Answers /healthz, /readyz and /metrics before Django's Host check and HTTPS redirect.

    Kubelet probes and Prometheus address pods by IP over plain HTTP: with DEBUG off they would get a 400
    (the pod IP is not in ALLOWED_HOSTS) or a redirect to https. These three endpoints build no URL from the Host
    header, so the check protects nothing there; every other path goes through the full middleware stack.
    Placed right after the request id middleware, so probe responses still carry X-Request-ID.
    """

    def __init__(self, get_response):
        from .metrics import metrics_view

        self.get_response = get_response
        self.views = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics_view}

    def __call__(self, request):
        view = self.views.get(request.path_info)
        return view(request) if view is not None else self.get_response(request)
