"""Celery entry points for provisioning: load by id, call the service, classify errors. No business rules."""
from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from . import services
from .appliers.base import PermanentApplyError, TransientApplyError

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
BACKOFF_CAP_SECONDS = 300


def _backoff(attempt: int, retry_after: float | None) -> float:
    """Exponential backoff from settings.PORTAL_KUBE_RETRY_BASE_SECONDS, capped, never sooner than Retry-After."""
    delay = min(BACKOFF_CAP_SECONDS, settings.PORTAL_KUBE_RETRY_BASE_SECONDS * 2 ** max(attempt - 1, 0))
    return max(delay, min(retry_after or 0, BACKOFF_CAP_SECONDS))


def _run(task, service, job_id: int, after_attempt: int | None):
    try:
        return _run_once(task, service, job_id, after_attempt)
    except (OperationalError, InterfaceError) as exc:
        # The database went away mid-task (a restart, a failover), while working or while recording the outcome.
        # The work is idempotent: run it again later, recording nothing now (there is nowhere to record it).
        attempt = task.request.retries + 1
        if attempt >= MAX_ATTEMPTS:
            raise
        logger.warning("job %s: database unavailable (attempt %s), retrying: %s", job_id, attempt, exc)
        raise task.retry(args=[job_id], kwargs={"after_attempt": after_attempt}, countdown=_backoff(attempt, None),
                         exc=exc)


def _run_once(task, service, job_id: int, after_attempt: int | None):
    try:
        return service(job_id=job_id, after_attempt=after_attempt).status
    except TransientApplyError as exc:
        attempt = task.request.retries + 1
        if attempt >= MAX_ATTEMPTS:
            services.allocation_fail(job_id=job_id, message=f"Gave up after {attempt} attempts: {exc}")
            return "failed"
        attempts = services.allocation_retrying(job_id=job_id, message=f"Attempt {attempt} failed, retrying: {exc}")
        # The retry names the attempt it follows: other messages for the job skip it while it waits.
        raise task.retry(args=[job_id], kwargs={"after_attempt": attempts},
                         countdown=_backoff(attempt, getattr(exc, "retry_after", None)), exc=exc)
    except PermanentApplyError as exc:
        services.allocation_fail(job_id=job_id, message=f"The cluster refused the objects: {exc}")
        return "failed"


@shared_task(bind=True, name="provisioning.allocation_apply", max_retries=MAX_ATTEMPTS, acks_late=True,
             soft_time_limit=600, time_limit=660)
def allocation_apply(self, job_id: int, after_attempt: int | None = None) -> str:
    return _run(self, services.allocation_apply, job_id, after_attempt)


@shared_task(bind=True, name="provisioning.allocation_teardown", max_retries=MAX_ATTEMPTS, acks_late=True,
             soft_time_limit=600, time_limit=660)
def allocation_teardown(self, job_id: int, after_attempt: int | None = None) -> str:
    return _run(self, services.allocation_teardown, job_id, after_attempt)


# --- inventory discovery and MIG plans -----------------------------------


@shared_task(name="provisioning.inventory_sync", acks_late=True, soft_time_limit=300, time_limit=330)
def inventory_sync(cluster_id: int) -> str:
    """Discover one cluster. Failures are recorded on the cluster (last_sync_error); the next beat run retries."""
    from .inventory_sync import inventory_sync as sync
    from .models import Cluster

    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return "gone"
    return sync(cluster=cluster).status


@shared_task(name="provisioning.inventory_sync_all")
def inventory_sync_all() -> int:
    """Beat: one inventory_sync per enabled cluster."""
    from .inventory_sync import inventory_sync_dispatch

    return inventory_sync_dispatch()


@shared_task(name="provisioning.mig_plan_advance", acks_late=True, soft_time_limit=120, time_limit=150)
def mig_plan_advance(plan_id: int) -> str:
    """Advance one MIG plan as far as it can go now (never waits: the beat calls again)."""
    from .mig_plans import mig_plan_advance as advance

    return advance(plan_id=plan_id)


@shared_task(name="provisioning.mig_plans_advance")
def mig_plans_advance() -> int:
    """Beat: advance every approved or executing MIG plan."""
    from .mig_plans import mig_plans_advance_dispatch

    return mig_plans_advance_dispatch()


@shared_task(name="provisioning.admission_checks_sync_all")
def admission_checks_sync_all() -> int:
    """Beat: dispatch one admission check controller run per Kueue cluster."""
    from . import admission

    return len(admission.admission_checks_sync_all())


@shared_task(name="provisioning.admission_checks_sync", acks_late=False, soft_time_limit=120, time_limit=180)
def admission_checks_sync(cluster_id: int) -> str:
    """List one Kueue cluster's Workloads and write the portal's check. Not retried: the next beat is the retry."""
    from . import admission

    run = admission.admission_checks_sync(cluster_id=cluster_id)
    if run.status == "error":
        logger.warning("admission check: %s", run.summary())
    return run.summary()


# --- status reconciliation and stalled gangs (reconcile) --------------------------------------------------------

NOTIFY_MAX_ATTEMPTS = 6


@shared_task(name="provisioning.status_reconcile_all")
def status_reconcile_all() -> int:
    """Beat: dispatch one reconciliation run per enabled cluster."""
    from .reconcile import watch

    return len(watch.status_reconcile_all())


@shared_task(name="provisioning.cluster_status_reconcile", acks_late=False,
             soft_time_limit=settings.PORTAL_RECONCILE_WATCH_SECONDS + 120,
             time_limit=settings.PORTAL_RECONCILE_WATCH_SECONDS + 180)
def cluster_status_reconcile(cluster_id: int) -> str:
    """List or resume the watch of one cluster's pods and reconcile its requests. Not retried: the next beat is
    the retry, and acknowledged early: a run lost with its worker is simply the next run."""
    from .reconcile import watch

    outcome = watch.cluster_status_reconcile(cluster_id=cluster_id)
    if outcome.status == "error":
        logger.warning("status reconciliation: %s", outcome.summary())
    return outcome.summary()


@shared_task(bind=True, name="provisioning.gang_notification_deliver", max_retries=NOTIFY_MAX_ATTEMPTS,
             acks_late=True)
def gang_notification_deliver(self, notification_id: int) -> str:
    from .reconcile import notifications

    try:
        return notifications.gang_notification_deliver(notification_id=notification_id)
    except notifications.TransientDeliveryError as exc:
        attempt = self.request.retries + 1
        if attempt >= NOTIFY_MAX_ATTEMPTS:
            notifications.gang_notification_fail(notification_id=notification_id,
                                                 message=f"Gave up after {attempt} attempts: {exc}")
            return "failed"
        raise self.retry(countdown=_backoff(attempt, None), exc=exc)


# --- why requests wait (waits) ------------------------------------------------------------------------------------


@shared_task(name="provisioning.request_wait_refresh", acks_late=True, soft_time_limit=60, time_limit=90)
def request_wait_refresh(request_id: int) -> str:
    """Read and store why one request waits; a cluster that cannot be read is recorded on the reading."""
    from .waits import request_wait_refresh as refresh

    record = refresh(request_id=request_id)
    return "skipped" if record is None else ("read_error" if record.read_error else "stored")


@shared_task(name="provisioning.wait_refresh_all")
def wait_refresh_all() -> int:
    """Beat: one queue_wait_refresh per Kueue cluster (its whole queue at once), one request_wait_refresh per other
    waiting request (and per running one whose start is not recorded)."""
    from .queue_waits import kueue_clusters, on_clusters
    from .waits import refresh_candidates

    clusters = list(kueue_clusters())
    for cluster in clusters:
        queue_wait_refresh.delay(cluster.pk)
    ids = refresh_candidates()
    queued = on_clusters(ids, [c.name for c in clusters])
    for request_id in ids:
        if request_id not in queued:
            request_wait_refresh.delay(request_id)
    return len(ids)


@shared_task(name="provisioning.queue_wait_refresh", acks_late=True, soft_time_limit=60, time_limit=90)
def queue_wait_refresh(cluster_id: int) -> str:
    """Read and store why the requests queued in one Kueue cluster wait, the whole queue at once; its other waiting
    requests (a stalled gang, a single pod, a running one whose start is not recorded) one by one. A cluster that
    cannot be read: each of its requests one by one, which records the error on its reading."""
    from .kube.errors import KubeError
    from .models import Cluster
    from .queue_waits import on_clusters
    from .queue_waits import queue_wait_refresh as refresh
    from .waits import refresh_candidates

    cluster = Cluster.objects.get(pk=cluster_id)
    try:
        done = refresh(cluster=cluster)
    except KubeError:
        done = set()
    rest = [pk for pk in on_clusters(refresh_candidates(), [cluster.name]) if pk not in done]
    for request_id in sorted(rest):
        request_wait_refresh.delay(request_id)
    return f"{len(done)} queued, {len(rest)} one by one"
