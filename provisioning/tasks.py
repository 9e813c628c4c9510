"""Celery entry points for provisioning: load by id, call the service, classify errors. No business rules.

Services send these by name (portal.dispatch), so they never import this module."""
from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from portal.retrying import RetryingTask

from . import admission, mig_plans, queue_waits, services, wait_refresh
from .appliers.base import PermanentApplyError, TransientApplyError
from .inventory_sync import inventory_sync as sync_cluster
from .inventory_sync import inventory_sync_dispatch
from .kube.errors import KubeError
from .models import Cluster
from .reconcile import watch
from .services import JOB_MAX_ATTEMPTS as MAX_ATTEMPTS

logger = logging.getLogger(__name__)


class KubeRetryingTask(RetryingTask):
    """Backs off from settings.PORTAL_KUBE_RETRY_BASE_SECONDS (tests shorten it)."""
    abstract = True

    def backoff_base(self) -> float:
        return settings.PORTAL_KUBE_RETRY_BASE_SECONDS


def _run(task, service, job_id: int, after_attempt: int | None):
    try:
        return _run_once(task, service, job_id, after_attempt)
    except (OperationalError, InterfaceError) as exc:
        # The database went away mid-task (a restart, a failover), while working or while recording the outcome.
        # The work is idempotent: run it again later, recording nothing now (there is nowhere to record it).
        attempt = task.attempt()
        if attempt >= MAX_ATTEMPTS:
            raise
        logger.warning("job %s: database unavailable (attempt %s), retrying: %s", job_id, attempt, exc)
        raise task.retry(args=[job_id], kwargs={"after_attempt": after_attempt}, countdown=task.backoff(attempt),
                         exc=exc)


def _run_once(task, service, job_id: int, after_attempt: int | None):
    try:
        return service(job_id=job_id, after_attempt=after_attempt).status
    except TransientApplyError as exc:
        # The retry names the attempt it follows: other messages for the job skip it while it waits.
        return task.retry_or_fail(
            exc, args=[job_id], retry_after=getattr(exc, "retry_after", None),
            fail=lambda message: services.allocation_fail(job_id=job_id, message=message),
            retrying=lambda message: {
                "after_attempt": services.allocation_retrying(job_id=job_id, message=message)})
    except PermanentApplyError as exc:
        services.allocation_fail(job_id=job_id, message=f"The cluster refused the objects: {exc}")
        return "failed"


@shared_task(bind=True, base=KubeRetryingTask, name="provisioning.allocation_apply", max_retries=MAX_ATTEMPTS, acks_late=True,
             soft_time_limit=600, time_limit=660)
def allocation_apply(self, job_id: int, after_attempt: int | None = None) -> str:
    return _run(self, services.allocation_apply, job_id, after_attempt)


@shared_task(bind=True, base=KubeRetryingTask, name="provisioning.allocation_teardown", max_retries=MAX_ATTEMPTS, acks_late=True,
             soft_time_limit=600, time_limit=660)
def allocation_teardown(self, job_id: int, after_attempt: int | None = None) -> str:
    return _run(self, services.allocation_teardown, job_id, after_attempt)


# --- inventory discovery and MIG plans -----------------------------------


@shared_task(name="provisioning.inventory_sync", acks_late=True, soft_time_limit=300, time_limit=330)
def inventory_sync(cluster_id: int) -> str:
    """Discover one cluster. Failures are recorded on the cluster (last_sync_error); the next beat run retries."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return "gone"
    return sync_cluster(cluster=cluster).status


@shared_task(name="provisioning.inventory_sync_all")
def inventory_sync_all() -> int:
    """Beat: one inventory_sync per enabled cluster."""
    return inventory_sync_dispatch()


@shared_task(name="provisioning.mig_plan_advance", acks_late=True, soft_time_limit=120, time_limit=150)
def mig_plan_advance(plan_id: int) -> str:
    """Advance one MIG plan as far as it can go now (never waits: the beat calls again)."""
    return mig_plans.mig_plan_advance(plan_id=plan_id)


@shared_task(name="provisioning.mig_plans_advance")
def mig_plans_advance() -> int:
    """Beat: advance every approved or executing MIG plan."""
    return mig_plans.mig_plans_advance_dispatch()


@shared_task(name="provisioning.admission_checks_sync_all")
def admission_checks_sync_all() -> int:
    """Beat: dispatch one admission check controller run per Kueue cluster."""
    return len(admission.admission_checks_sync_all())


@shared_task(name="provisioning.admission_checks_sync", acks_late=False, soft_time_limit=120, time_limit=180)
def admission_checks_sync(cluster_id: int) -> str:
    """List one Kueue cluster's Workloads and write the portal's check. Not retried: the next beat is the retry."""
    run = admission.admission_checks_sync(cluster_id=cluster_id)
    if run.status == "error":
        logger.warning("admission check: %s", run.summary())
    return run.summary()


# --- status reconciliation and stalled gangs (reconcile) --------------------------------------------------------


@shared_task(name="provisioning.status_reconcile_all")
def status_reconcile_all() -> int:
    """Beat: dispatch one reconciliation run per enabled cluster."""
    return len(watch.status_reconcile_all())


@shared_task(name="provisioning.cluster_status_reconcile", acks_late=False,
             soft_time_limit=settings.PORTAL_RECONCILE_WATCH_SECONDS + 120,
             time_limit=settings.PORTAL_RECONCILE_WATCH_SECONDS + 180)
def cluster_status_reconcile(cluster_id: int) -> str:
    """List or resume the watch of one cluster's pods and reconcile its requests. Not retried: the next beat is
    the retry, and acknowledged early: a run lost with its worker is simply the next run."""
    outcome = watch.cluster_status_reconcile(cluster_id=cluster_id)
    if outcome.status == "error":
        logger.warning("status reconciliation: %s", outcome.summary())
    return outcome.summary()


# --- why requests wait (waits) ------------------------------------------------------------------------------------


@shared_task(name="provisioning.request_wait_refresh", acks_late=True, soft_time_limit=60, time_limit=90)
def request_wait_refresh(request_id: int) -> str:
    """Read and store why one request waits; a cluster that cannot be read is recorded on the reading."""
    record = wait_refresh.request_wait_refresh(request_id=request_id)
    return "skipped" if record is None else ("read_error" if record.read_error else "stored")


@shared_task(name="provisioning.wait_refresh_all")
def wait_refresh_all() -> int:
    """Beat: one queue_wait_refresh per Kueue cluster (its whole queue at once), one request_wait_refresh per other
    waiting request (and per running one whose start is not recorded)."""
    clusters = list(queue_waits.kueue_clusters())
    for cluster in clusters:
        queue_wait_refresh.delay(cluster.pk)
    ids = wait_refresh.refresh_candidates()
    queued = queue_waits.on_clusters(ids, [c.name for c in clusters])
    for request_id in ids:
        if request_id not in queued:
            request_wait_refresh.delay(request_id)
    return len(ids)


@shared_task(name="provisioning.queue_wait_refresh", acks_late=True, soft_time_limit=60, time_limit=90)
def queue_wait_refresh(cluster_id: int) -> str:
    """Read and store why the requests queued in one Kueue cluster wait, the whole queue at once; its other waiting
    requests (a stalled gang, a single pod, a running one whose start is not recorded) one by one. A cluster that
    cannot be read: each of its requests one by one, which records the error on its reading."""
    cluster = Cluster.objects.get(pk=cluster_id)
    try:
        done = queue_waits.queue_wait_refresh(cluster=cluster)
    except KubeError:
        done = set()
    rest = [pk for pk in queue_waits.on_clusters(wait_refresh.refresh_candidates(), [cluster.name]) if pk not in done]
    for request_id in sorted(rest):
        request_wait_refresh.delay(request_id)
    return f"{len(done)} queued, {len(rest)} one by one"
