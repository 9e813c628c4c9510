"""Logs and metrics.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

from .base import env_bool

# Logs: plain text by default (development server), one JSON object per line with LOG_FORMAT=json. Both carry
# the request id (portal.request_context) in web requests and in the Celery tasks they dispatch.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain")
if LOG_FORMAT not in {"plain", "json"}:
    raise RuntimeError("LOG_FORMAT must be plain or json")
LOG_REQUESTS = env_bool("LOG_REQUESTS", LOG_FORMAT == "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "portal.logs.RequestContextFilter"},
                "forbidden_without_traceback": {"()": "portal.logs.ForbiddenWithoutTraceback"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "portal.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_context"]}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # A logger's filters see its records before any handler (and before pytest's caplog) does.
    "loggers": {"django.request": {"filters": ["forbidden_without_traceback"]}},
}
# Celery workers log through the configuration above instead of replacing the root logger's handlers.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Operations: request ids, metrics, worker heartbeat ------------------------------------------------------
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# --- end of operations settings ------------------------------------------------------------------------------
