"""A job's message can arrive more than once (the sweep re-sends a job not started in time; the broker redelivers
an unacknowledged message). Given a job being run by another worker, when a second message for it arrives, then it
is skipped: nothing is applied twice, no attempt is counted, and the job is run once the other worker is done."""
from __future__ import annotations

from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from workflows.services import request_approve, request_submit
from provisioning.models import ProvisioningJob
from provisioning.services import JOB_LOCK_NAMESPACE, allocation_apply
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued_job(engineer, team_a, platform_user, inventory, fake_kube):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "t",
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    gpu_request = request_submit(user=engineer, team=team_a, name="twice", raw_answers=VALID_ANSWERS)
    request_approve(user=platform_user, request_id=gpu_request.pk)  # its on_commit dispatch never runs here
    return ProvisioningJob.objects.get(request=gpu_request)


@pytest.fixture
def another_worker():
    """A second database session, as another worker process has."""
    params = connection.settings_dict
    with psycopg.connect(dbname=params["NAME"], host=params["HOST"], port=params["PORT"] or 5432,
                         user=params["USER"], password=params["PASSWORD"] or None, autocommit=True) as other:
        yield other


def test_a_second_message_for_a_job_running_elsewhere_is_skipped(queued_job, another_worker, fake_kube):
    another_worker.execute("SELECT pg_advisory_lock(%s, %s)", [JOB_LOCK_NAMESPACE, queued_job.pk])

    outcome = allocation_apply(job_id=queued_job.pk)

    assert outcome.status == "skipped"
    queued_job.refresh_from_db()
    assert (queued_job.status, queued_job.attempts) == ("queued", 0)
    assert not [r for r in fake_kube.requests if r.method == "PATCH"]

    another_worker.execute("SELECT pg_advisory_unlock(%s, %s)", [JOB_LOCK_NAMESPACE, queued_job.pk])
    assert allocation_apply(job_id=queued_job.pk).status == "succeeded"
    assert allocation_apply(job_id=queued_job.pk).status == "skipped"  # finished: a late duplicate changes nothing
    queued_job.refresh_from_db()
    assert (queued_job.status, queued_job.attempts) == ("succeeded", 1)


def test_the_lock_is_released_after_a_run(queued_job, another_worker):
    allocation_apply(job_id=queued_job.pk)

    acquired = another_worker.execute("SELECT pg_try_advisory_lock(%s, %s)",
                                      [JOB_LOCK_NAMESPACE, queued_job.pk]).fetchone()[0]
    assert acquired


def test_a_stale_message_does_not_cut_a_retry_wait_short(queued_job, fake_kube):
    """A job waiting out its backoff (or a server's Retry-After) is run by its own retry message only; a sweep
    re-send or a duplicate arriving meanwhile is skipped."""
    from provisioning.appliers.base import TransientApplyError
    from provisioning.services import allocation_retrying

    fake_kube.fail_next("PATCH", r"/deployments/", 429, message="slow down", headers={"Retry-After": "30"})
    with pytest.raises(TransientApplyError):
        allocation_apply(job_id=queued_job.pk)
    attempts = allocation_retrying(job_id=queued_job.pk, message="Attempt 1 failed, retrying: slow down")
    writes = len([r for r in fake_kube.requests if r.method == "PATCH"])

    assert allocation_apply(job_id=queued_job.pk).status == "skipped"
    assert allocation_apply(job_id=queued_job.pk, after_attempt=attempts - 1).status == "skipped"
    assert len([r for r in fake_kube.requests if r.method == "PATCH"]) == writes
    queued_job.refresh_from_db()
    assert (queued_job.status, queued_job.attempts) == ("retrying", 1)

    assert allocation_apply(job_id=queued_job.pk, after_attempt=attempts).status == "succeeded"
    queued_job.refresh_from_db()
    assert (queued_job.status, queued_job.attempts) == ("succeeded", 2)


def test_the_sweep_sends_a_job_again_once_its_message_is_overdue(queued_job, eager_celery):
    """Never sent (the broker was down at approval): sent. Sent but not started within the grace period: sent
    again, whatever waits in the broker (a duplicate is skipped, a lost message would be lost for good)."""
    from django.utils import timezone

    from provisioning.sweeps import allocation_sweep

    long_ago = timezone.now() - timezone.timedelta(minutes=5)
    ProvisioningJob.objects.filter(pk=queued_job.pk).update(created_at=long_ago, dispatched_at=timezone.now())
    assert allocation_sweep(older_than_seconds=60) == 0  # just sent: its message may be on its way
    assert ProvisioningJob.objects.get(pk=queued_job.pk).status == "queued"

    ProvisioningJob.objects.filter(pk=queued_job.pk).update(dispatched_at=long_ago)
    assert allocation_sweep(older_than_seconds=60) == 1
    assert ProvisioningJob.objects.get(pk=queued_job.pk).status == "succeeded"
    assert allocation_sweep(older_than_seconds=60) == 0
