"""Celery and beat: the broker, the sweeps that find lost work, and the one beat schedule of the project.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

from portal.schedules import offset_schedule

from .base import env_bool
from .database import REDIS_URL
from .kubernetes import PORTAL_RECONCILE_INTERVAL_SECONDS

# Celery: work is dispatched after commit and acknowledged late, so a killed worker's task is redelivered.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# --- faults: a dead worker's message goes to another worker after the visibility timeout; kombu only looks for
# such messages every unacked_restore_interval x unacked_restore_throttle seconds (100 s by default), so that
# period follows the timeout (a quarter of it, at most 100 s).
_visibility_timeout = int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _visibility_timeout,
    "unacked_restore_interval": max(1, min(100, _visibility_timeout // 4)),
    "unacked_restore_throttle": 1,
}
# --- end faults
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# --- background work: the sweeps and the one beat schedule of the project (docs/operations-background-work.md) ---
# A queued job (or notice) not started this long after its dispatch is sent again by the sweep, however many
# messages wait in the broker: a duplicate is skipped by the task, a lost message is otherwise lost for good.
PORTAL_SWEEP_GRACE_SECONDS = float(os.environ.get("PORTAL_SWEEP_GRACE_SECONDS", "60"))
PORTAL_NOTIFICATION_SWEEP_GRACE_SECONDS = float(os.environ.get("PORTAL_NOTIFICATION_SWEEP_GRACE_SECONDS", "120"))
# A job running (or waiting to retry) with no change for this long, and no worker holding its lock, lost its
# worker and its message: it is sent again (an attempt counted), or failed after its last attempt. Longer than
# the apply task's hard time limit (660 s) and the longest retry backoff (300 s).
PORTAL_JOB_STUCK_SECONDS = float(os.environ.get("PORTAL_JOB_STUCK_SECONDS", "900"))
# Periodic tasks, each at its own second within its period (portal.schedules), so that they never reach the
# workers together: at most one of them is sent in any one second with the default periods. A period of 0 (in
# the environment) turns the entry off.
def _env_every(setting: str, default: str, offset: float) -> offset_schedule | None:
    seconds = float(os.environ.get(setting, default))
    return offset_schedule(seconds, offset=offset) if seconds > 0 else None


CELERY_BEAT_SCHEDULE: dict = {name: entry for name, entry in {
    # Work whose message was lost, in every outbox (portal.outbox): provisioning jobs, stalled-gang notices, notices.
    "outbox-sweep": {
        "task": "portal.outbox_sweep", "schedule": _env_every("PORTAL_SWEEP_SECONDS", "60", offset=5),
    },
    # A worker records a heartbeat every minute; gpu_portal_worker_heartbeat_age_seconds shows when that stops.
    "portal.ping": {"task": "portal.ping", "schedule": offset_schedule(60.0, offset=20)},
    # One pod reconciliation per enabled cluster (a LIST or a bounded WATCH).
    "provisioning-status-reconcile": {
        "task": "provisioning.status_reconcile_all",
        "schedule": offset_schedule(PORTAL_RECONCILE_INTERVAL_SECONDS, offset=50),
    },
    # Kueue admission check: each Kueue cluster's Workloads listed and the portal's check written.
    "admission-checks-sync": {
        "task": "provisioning.admission_checks_sync_all",
        "schedule": _env_every("PORTAL_ADMISSION_SYNC_SECONDS", "15", offset=3),
    },
    # MIG plans: every approved or executing plan moves on as far as it can.
    "mig-plans-advance": {
        "task": "provisioning.mig_plans_advance", "schedule": _env_every("PORTAL_MIG_ADVANCE_SECONDS", "15", offset=12),
    },
    # Inventory discovery of every enabled cluster.
    "inventory-sync": {
        "task": "provisioning.inventory_sync_all",
        "schedule": _env_every("PORTAL_INVENTORY_SYNC_SECONDS", "300", offset=130),
    },
    # Why approved requests wait, and the actual start of those that began running (provisioning.wait_refresh).
    "request-wait-refresh": {
        "task": "provisioning.wait_refresh_all", "schedule": _env_every("PORTAL_WAIT_REFRESH_SECONDS", "60", offset=44),
    },
    # Chargeback: one ingestion pass over every enabled cluster's portal pods.
    "chargeback-usage-collect": {
        "task": "chargeback.usage_collect", "schedule": _env_every("CHARGEBACK_COLLECT_SECONDS", "300", offset=220),
    },
    # Leases: reminders before expiry, teardown at expiry (workflows.leases).
    "intake-lease-sweep": {
        "task": "workflows.lease_sweep", "schedule": _env_every("PORTAL_LEASE_SWEEP_SECONDS", "300", offset=75),
    },
    # Budgets: a notice per threshold crossed, once a month (chargeback.budgets).
    "chargeback-budget-thresholds": {
        "task": "chargeback.budget_thresholds_notify",
        "schedule": _env_every("CHARGEBACK_BUDGET_CHECK_SECONDS", "900", offset=465),
    },
    # Idle GPUs: every cluster with a prometheus_url, its running requests' utilisation (chargeback/idle/).
    "chargeback-idle-scan": {
        "task": "chargeback.idle_scan_all", "schedule": _env_every("PORTAL_IDLE_SCAN_SECONDS", "300", offset=163),
    },
}.items() if entry["schedule"] is not None}
# --- end background work -----------------------------------------------------------------------------------------
