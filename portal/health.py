"""Liveness and readiness endpoints for load balancers and Kubernetes probes."""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .metrics import metrics_view
from .roles import is_platform
from .services import token_authenticate

logger = logging.getLogger(__name__)


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


def _shows_details(request) -> bool:
    """Failure details (addresses, driver errors) are for the platform team's token only. This endpoint answers
    before the authentication middleware (see ProbeEndpointsMiddleware), so the token is checked here."""
    keyword, _, secret = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if keyword != "Token" or not secret.strip():
        return False
    try:
        token = token_authenticate(clear=secret.strip())
    except Exception:  # noqa: BLE001 - the database is what may be down
        return False
    return token is not None and token.user.is_active and is_platform(token.user)


@never_cache
@require_GET
def readyz(request):
    """Ready to serve: the database and the Celery broker both answer. Anyone sees ok / not ok per component;
    what failed, and why, goes to the log (and to a platform token)."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    for name, error in checks.items():
        if error is not None:
            logger.warning("readiness: %s unavailable: %s", name, error)
    ready = not any(checks.values())
    details = not ready and _shows_details(request)
    body = {"status": "ready" if ready else "not ready",
            "checks": {name: "ok" if error is None else (error if details else "not ok")
                       for name, error in checks.items()}}
    return JsonResponse(body, status=200 if ready else 503)


class ProbeEndpointsMiddleware:
    """Answers /healthz, /readyz and /metrics before Django's Host check and HTTPS redirect.

    Kubelet probes and Prometheus address pods by IP over plain HTTP: with DEBUG off they would get a 400
    (the pod IP is not in ALLOWED_HOSTS) or a redirect to https. These three endpoints build no URL from the Host
    header, so the check protects nothing there; every other path goes through the full middleware stack.
    Placed right after the request id middleware, so probe responses still carry X-Request-ID.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.views = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics_view}

    def __call__(self, request):
        view = self.views.get(request.path_info)
        return view(request) if view is not None else self.get_response(request)
