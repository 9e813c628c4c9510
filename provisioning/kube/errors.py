"""Kubernetes API errors, classified once: a task retries `TransientKubeError` and gives up on `PermanentKubeError`.

`kube_errors()` / `kube_call()` turn what the `kubernetes` client and urllib3 raise into these two, carrying the API
server's own `message` from its Status body, the HTTP status and, for throttling, the `Retry-After` seconds.
"""
from __future__ import annotations

import contextlib
import email.utils
import json
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from provisioning.appliers.base import ApplyError, PermanentApplyError, TransientApplyError

T = TypeVar("T")

# 408 and 409 (a concurrent writer changed the object) succeed on a later attempt; 429 is throttling.
TRANSIENT_STATUSES = frozenset({408, 409, 429})


class KubeError(ApplyError):
    """An error talking to a Kubernetes API server."""


class TransientKubeError(KubeError, TransientApplyError):
    pass


class PermanentKubeError(KubeError, PermanentApplyError):
    pass


def is_transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUSES or status >= 500


def classify_api_exception(exc: ApiException, context: str = "") -> KubeError:
    """Map an ApiException (or the dynamic client's subclasses) to a transient or permanent error."""
    status = int(exc.status or 0)
    message = _with_context(context, _status_message(exc.body) or exc.reason or f"HTTP {status}")
    # status 0: the client could not even make the request (TLS verification, unusable body): a person must act.
    if status and is_transient_status(status):
        return TransientKubeError(message, status=status, retry_after=retry_after_seconds(exc.headers))
    return PermanentKubeError(message, status=status or None)


@contextlib.contextmanager
def kube_errors(context: str = "") -> Iterator[None]:
    """Translate client and transport errors raised inside the block; `context` prefixes the message."""
    try:
        yield
    except ApiException as exc:
        raise classify_api_exception(exc, context) from exc
    except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as exc:
        # With urllib3 retries disabled these arrive as they are: timeouts, refused or reset connections.
        raise TransientKubeError(_with_context(context, f"{type(exc).__name__}: {exc}")) from exc


def kube_call(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call `fn` with Kubernetes errors classified."""
    with kube_errors():
        return fn(*args, **kwargs)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The Retry-After header in seconds: API servers send a delay; an HTTP date is accepted too."""
    value = (headers or {}).get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status_message(body: Any) -> str:
    """The `message` of a Kubernetes Status body, or "" when the body is not one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body:
        return ""
    try:
        status = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    return str(status.get("message", "")) if isinstance(status, dict) else ""


def _with_context(context: str, message: str) -> str:
    return f"{context}: {message}" if context else message
