"""The provisioning jobs' outbox sweep (run by portal.outbox's one sweep of every outbox; stalled-gang notices are
portal notices, swept with them): a job whose message never reached the broker, or was lost by it (a Redis
restart, a worker killed while Redis lost its copy too), is sent again; one that keeps getting lost fails for good.

Every job the sweep covers has its own message in normal operation, so the sweep can only ever add a duplicate:
the tasks are written for that (a job runs under a PostgreSQL advisory lock and skips a finished job, a job
waiting to retry or a job running elsewhere). The sweep does not try to guess from the broker's queue length
whether a message still waits: on a busy worker the queue is never empty, and a job whose message was lost would
never be sent again. See docs/operations-background-work.md.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from .choices import JobKind, JobStatus
from .models import ProvisioningJob
from .services import JOB_LOCK_NAMESPACE, JOB_MAX_ATTEMPTS, allocation_fail, dispatch_job, job_task

logger = logging.getLogger(__name__)

# A job in one of these states has a worker on it, or a retry message waiting for its countdown (at most
# portal.retrying.BACKOFF_CAP_SECONDS); one left so for longer than the stuck timeout has lost both.
JOB_IN_FLIGHT = (JobStatus.RUNNING, JobStatus.RETRYING)


def allocation_sweep(*, older_than_seconds: float = 60, stuck_after_seconds: float = 900, max_attempts: int = 6) -> int:
    """Send again the provisioning jobs whose message is overdue: queued ones never sent, or sent more than
    `older_than_seconds` ago and still not started; and running or retrying ones unchanged for
    `stuck_after_seconds` that no worker holds (an attempt was counted when they started: after `max_attempts`
    they fail instead). Returns how many were sent."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    overdue = ProvisioningJob.objects.filter(status=JobStatus.QUEUED).filter(
        Q(dispatched_at__isnull=True, created_at__lt=cutoff) | Q(dispatched_at__lt=cutoff))
    due = list(overdue.values_list("pk", "kind"))
    stuck_cutoff = now - timedelta(seconds=stuck_after_seconds)
    for job_id in ProvisioningJob.objects.filter(status__in=JOB_IN_FLIGHT, updated_at__lt=stuck_cutoff).values_list(
            "pk", flat=True):
        kind = _job_recover(job_id=job_id, cutoff=stuck_cutoff, max_attempts=max_attempts)
        if kind:
            due.append((job_id, kind))
    sent = 0
    for job_id, kind in due:
        sent += dispatch_job(job_id=job_id, task=job_task(kind))
    return sent


def _held_by_a_worker(job_id: int) -> bool:
    """Whether some database session holds the job's advisory lock (services._running_alone): a worker that is
    alive and running it, however long it takes. A dead worker's lock went with its connection."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.objsubid = 2"
            " AND d.datname = current_database())",
            [JOB_LOCK_NAMESPACE, job_id],
        )
        return cursor.fetchone()[0]


@transaction.atomic
def _job_recover(*, job_id: int, cutoff, max_attempts: int) -> str | None:
    """A stuck job goes back to queued (its kind is returned, to be sent again), or fails after max_attempts."""
    job = (ProvisioningJob.objects.select_for_update(no_key=True, skip_locked=True, of=("self",))
           .filter(pk=job_id, status__in=JOB_IN_FLIGHT, updated_at__lt=cutoff).first())
    if job is None or _held_by_a_worker(job.pk):
        return None  # it moved meanwhile, or a worker is on it
    running = job.status == JobStatus.RUNNING
    lost = "its worker was lost" if running else "its retry message was lost"
    if job.attempts >= max_attempts:
        logger.warning("job %s: %s after %s attempts; failing it", job.pk, lost, job.attempts)
        allocation_fail(job_id=job.pk, message=f"Gave up after {job.attempts} attempts: {lost} (nothing heard "
                                               f"from it since {job.updated_at:%Y-%m-%d %H:%M:%S} UTC).")
        return None
    logger.warning("job %s: %s (attempt %s); sending it again", job.pk, lost, job.attempts)
    job.status, job.dispatched_at = JobStatus.QUEUED, None
    job.message = (f"Attempt {job.attempts} did not finish: its worker was lost. Sent again." if running
                   else f"The retry after attempt {job.attempts} was lost. Sent again.")
    job.save(update_fields=["status", "dispatched_at", "message", "updated_at"])
    return job.kind


def allocation_sweep_now() -> int:
    """The provisioning jobs' outbox sweep, with the settings' timings (registered with portal.outbox)."""
    return allocation_sweep(older_than_seconds=settings.PORTAL_SWEEP_GRACE_SECONDS,
                            stuck_after_seconds=settings.PORTAL_JOB_STUCK_SECONDS, max_attempts=JOB_MAX_ATTEMPTS)
