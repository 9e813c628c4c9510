"""A client of Prometheus' HTTP query API (`/api/v1/query`, `/api/v1/query_range`), through the outbound policy.

The answer shapes are Prometheus' documented ones (prometheus/prometheus docs/querying/api.md, v2.42 as Debian
ships it, unchanged through 3.x): `{"status": "success", "data": {"resultType": "vector"|"matrix", "result": [...]}}`
with `value: [unix_seconds, "string"]` per vector sample and `values: [[...], ...]` per matrix series; an error is
`{"status": "error", "errorType", "error"}` with HTTP 400, 422 or 503. The URL is checked against
PORTAL_OUTBOUND_* when it is entered and again here, and the connection goes to the checked address.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

import urllib3
from django.conf import settings

from portal.outbound import OutboundBlocked, check_url, get_pinned

MAX_ANSWER_BYTES = 16 * 1024 * 1024


class PrometheusError(Exception):
    """The query did not give an answer; `transient` when asking again later may (timeouts, 429, 5xx)."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: list[tuple[float, float]]  # (unix seconds, value); NaN values are dropped


def _number(text: str) -> float:
    return float(text)  # Prometheus writes "NaN", "+Inf" as strings; float() reads them


def _get(base_url: str, path: str, params: dict[str, str]) -> dict:
    url = f"{base_url.rstrip('/')}{path}?{urlencode(params)}"
    try:
        destination = check_url(url)
    except OutboundBlocked as exc:
        raise PrometheusError(f"Prometheus is not called: {exc}", transient=False) from None
    try:
        answer = get_pinned(destination, timeout=settings.PORTAL_PROMETHEUS_TIMEOUT_SECONDS,
                            max_bytes=MAX_ANSWER_BYTES)
    except OutboundBlocked as exc:
        raise PrometheusError(f"Prometheus' answer was refused: {exc}", transient=False) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise PrometheusError(f"could not reach Prometheus: {type(exc).__name__}: {exc}", transient=True) from exc
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("status") != "success":
        detail = body.get("error") if isinstance(body, dict) else answer.body[:200].decode(errors="replace")
        transient = answer.status in (408, 429) or answer.status >= 500
        raise PrometheusError(f"Prometheus answered HTTP {answer.status}: {detail}", transient=transient)
    return body["data"]


def _series(data: dict, expected: str) -> list[Series]:
    if data.get("resultType") != expected:
        raise PrometheusError(f"Prometheus answered a {data.get('resultType')}, not a {expected}", transient=False)
    out = []
    for item in data.get("result") or []:
        pairs = item.get("values") if expected == "matrix" else [item.get("value")]
        points = [(float(t), _number(v)) for t, v in (pairs or []) if not math.isnan(_number(v))]
        out.append(Series(labels=dict(item.get("metric") or {}), points=points))
    return out


def query(base_url: str, promql: str, *, at: datetime) -> list[Series]:
    """An instant query evaluated at `at`: one point per series."""
    data = _get(base_url, "/api/v1/query", {"query": promql, "time": f"{at.timestamp():.3f}"})
    return _series(data, "vector")


def query_range(base_url: str, promql: str, *, start: datetime, end: datetime, step_seconds: int) -> list[Series]:
    """A range query: the expression evaluated every `step_seconds` from `start` to `end`."""
    data = _get(base_url, "/api/v1/query_range", {
        "query": promql, "start": f"{start.timestamp():.3f}", "end": f"{end.timestamp():.3f}",
        "step": f"{step_seconds}s",
    })  # fmt: skip
    return _series(data, "matrix")
