"""Log formatting: one JSON object per line (`LOG_FORMAT=json`), or plain text for the development server.

Both carry the request context (`portal.request_context`): request id, user, method and path for web requests,
task name and id inside Celery tasks.
"""
from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from . import request_context

CONTEXT_FIELDS = ("request_id", "user", "method", "path", "task_name", "task_id")
# LogRecord's own attributes, and extras that say nothing useful as JSON.
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "request", "server_time", "taskName", *CONTEXT_FIELDS,
}


class RequestContextFilter(logging.Filter):
    """Copies the bound request context onto every record (plain format shows `-` when there is none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = request_context.current()
        for field in CONTEXT_FIELDS:
            if getattr(record, field, None) in (None, ""):
                setattr(record, field, values.get(field))
        if record.request_id is None:
            record.request_id = "-"
        return True


class ForbiddenWithoutTraceback(logging.Filter):
    """Django logs a refused page (403) with the PermissionDenied's traceback; a refusal is not a fault, so the
    warning line stays and the traceback goes (tracebacks are kept for 5xx, where they help)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {
            "timestamp": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            value = getattr(record, field, None)
            if value not in (None, "", "-"):
                data[field] = value
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(data, default=str, ensure_ascii=False)
