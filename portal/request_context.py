"""The request id and who/what is being served, carried in a context variable from the HTTP request into the
Celery tasks it dispatches, so that every log line of one piece of work shares one `request_id`.

- `RequestIdMiddleware` accepts a sane incoming `X-Request-ID` (or makes one), binds it for the request,
  returns it in the response header and, when `LOG_REQUESTS` is on, writes one access-log line per request.
- Celery signals (connected in `portal.celery`): `before_task_publish` copies the id into the task message's
  headers; `task_prerun` binds it (or a fresh one) in the worker; `task_postrun` restores the previous context.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from contextvars import ContextVar, Token
from typing import Any

from django.conf import settings
from django.utils.functional import SimpleLazyObject, empty

REQUEST_ID_HEADER = "X-Request-ID"
TASK_HEADER_REQUEST_ID = "portal_request_id"
TASK_HEADER_USER = "portal_user"
# Ids we accept from a client or a proxy: short, and nothing that could forge a log line or a header.
SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$")

_context: ContextVar[dict[str, Any]] = ContextVar("portal_request_context", default={})
access_logger = logging.getLogger("portal.access")


def new_request_id() -> str:
    return uuid.uuid4().hex


def sane_request_id(value: str | None) -> str | None:
    return value if value and SANE_REQUEST_ID.fullmatch(value) else None


def bind(**values: Any) -> Token:
    """Bind values on top of the current context; pass the token to `reset()` to undo."""
    return _context.set({**_context.get(), **values})


def reset(token: Token) -> None:
    _context.reset(token)


def current() -> dict[str, Any]:
    """The bound fields (request_id, user, method, path, task_name, task_id), user resolved if known."""
    values = {key: value for key, value in _context.get().items() if not key.startswith("_")}
    request = _context.get().get("_request")
    if request is not None and "user" not in values:
        user = _username(request)
        if user:
            values["user"] = user
    return values


def request_id() -> str | None:
    return _context.get().get("request_id")


def _username(request) -> str | None:
    # Only report a user that authentication already resolved: a log call must never trigger a session or
    # token lookup. DRF puts the authenticated user on the Django request too.
    user = request.__dict__.get("user")
    if user is None or (isinstance(user, SimpleLazyObject) and user._wrapped is empty):
        return None
    return user.get_username() if getattr(user, "is_authenticated", False) else None


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rid = sane_request_id(request.headers.get(REQUEST_ID_HEADER)) or new_request_id()
        request.request_id = rid
        token = bind(request_id=rid, method=request.method, path=request.path, _request=request)
        started = time.monotonic()
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = rid
            if getattr(settings, "LOG_REQUESTS", False):
                access_logger.info(
                    "%s %s %s", request.method, request.path, response.status_code,
                    extra={"status": response.status_code, "duration_ms": round((time.monotonic() - started) * 1000, 1)},
                )
            return response
        finally:
            reset(token)


# --- Celery ------------------------------------------------------------------------------------------------------

_task_tokens: dict[str, Token] = {}


def on_before_task_publish(sender=None, headers=None, **kwargs) -> None:
    if headers is None:
        return
    values = current()
    if values.get("request_id"):
        headers.setdefault(TASK_HEADER_REQUEST_ID, values["request_id"])
    if values.get("user"):
        headers.setdefault(TASK_HEADER_USER, values["user"])


def on_task_prerun(sender=None, task_id=None, task=None, **kwargs) -> None:
    request = getattr(task, "request", None)
    incoming = sane_request_id(request.get(TASK_HEADER_REQUEST_ID)) if request is not None else None
    if incoming is None and request is not None and isinstance(getattr(request, "headers", None), dict):
        incoming = sane_request_id(request.headers.get(TASK_HEADER_REQUEST_ID))
    # An eager task runs inside the caller's context: keep its id. A task nobody asked for (beat) gets its own.
    rid = incoming or request_id() or new_request_id()
    values = {"request_id": rid, "task_name": getattr(task, "name", None), "task_id": task_id}
    user = request.get(TASK_HEADER_USER) if request is not None else None
    if user:
        values["user"] = user
    _task_tokens[task_id] = bind(**values)


def on_task_postrun(sender=None, task_id=None, **kwargs) -> None:
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        try:
            reset(token)
        except ValueError:  # created in another context (cannot happen with the solo/prefork pools)
            pass
