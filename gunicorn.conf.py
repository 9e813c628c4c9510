"""gunicorn settings, read from the working directory by every `gunicorn` the image, compose and the chart run.

Requests are logged by the portal's middleware (with the request id), so gunicorn's access log stays off; with
LOG_FORMAT=json gunicorn's own lines (start-up, worker restarts, timeouts) are JSON too.
"""
import os

accesslog = None
if os.environ.get("LOG_FORMAT") == "json":
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "portal.logs.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {"gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False}},
    }
