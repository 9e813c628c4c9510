"""The Celery application: configured from Django settings (CELERY_* names), tasks discovered per app."""
import os

from celery import Celery
from celery.signals import before_task_publish, task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The request id follows work into tasks (portal.request_context); weak=False keeps the receivers alive.
from portal import request_context  # noqa: E402

before_task_publish.connect(request_context.on_before_task_publish, weak=False)
task_prerun.connect(request_context.on_task_prerun, weak=False)
task_postrun.connect(request_context.on_task_postrun, weak=False)

# `--heartbeat-file` for the worker's liveness probe (portal.heartbeat).
from portal import heartbeat  # noqa: E402

heartbeat.register(app)
