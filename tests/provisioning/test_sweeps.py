"""The sweep of provisioning jobs (provisioning.sweeps), run as beat runs it (within the `portal.outbox_sweep`
task), against the test run's real Redis broker. Given a job whose message was lost (a Redis restart) or whose worker
died with its message, when the sweep runs, then the job is sent again and applied once, however many messages
wait in the broker; a job a live worker holds is left alone; a job lost on its last attempt fails for good."""
from __future__ import annotations

from datetime import timedelta
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from portal import celery_app
from provisioning.models import AppliedObject, ProvisioningJob
from provisioning.services import JOB_LOCK_NAMESPACE
from portal.tasks import outbox_sweep
from provisioning.tasks import MAX_ATTEMPTS
from tests.conftest import VALID_ANSWERS
from tests.support.celery_worker import purge_broker


def sweep() -> int:
    """What beat's one sweep of every outbox sent again of the provisioning jobs."""
    return outbox_sweep.apply().get()["provisioning_jobs"]


pytestmark = pytest.mark.django_db

LONG_AGO = timedelta(hours=1)  # past the grace period (60 s) and the stuck timeout (900 s) of the settings


@pytest.fixture
def broker():
    """The test run's Redis broker, empty before and after the test."""
    purge_broker()
    yield
    purge_broker()


@pytest.fixture
def approved(engineer, team_a, platform_user, inventory, fake_kube, api):
    """An approved request on gpu-east (the fake API server) with its queued apply job; in a test transaction its
    after-commit dispatch never runs, as when Redis loses the message."""
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "t", "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    gpu_request = request_submit(user=engineer, team=team_a, name="lost", raw_answers=VALID_ANSWERS)
    request_approve(user=platform_user, request_id=gpu_request.pk)
    return gpu_request


def job_of(gpu_request, kind="apply") -> ProvisioningJob:
    return ProvisioningJob.objects.get(request=gpu_request, kind=kind)


def age(job: ProvisioningJob, **fields) -> None:
    """Move the job's clock back, as if it had sat there for an hour."""
    then = timezone.now() - LONG_AGO
    ProvisioningJob.objects.filter(pk=job.pk).update(created_at=then, updated_at=then, **fields)


def messages_waiting() -> int:
    with celery_app.connection_for_read() as conn:
        return conn.default_channel.client.llen(celery_app.conf.task_default_queue)


def provisioning_of(api, engineer, gpu_request) -> dict:
    body = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/").json()
    [job] = [j for j in body["provisioning"] if j["kind"] == "apply"]
    return job


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # send_task: to the broker, as meant
def test_a_lost_message_is_sent_again_while_other_messages_wait_in_the_broker(
    approved, broker, eager_celery, fake_kube, api, engineer
):
    """The broker is never empty on a busy worker: a sweep that waited for an empty queue never sent anything."""
    job = job_of(approved)
    age(job, dispatched_at=timezone.now() - LONG_AGO)  # sent an hour ago: Redis restarted and lost it
    for _ in range(3):
        celery_app.send_task("portal.ping")  # other work waiting for the (busy) worker
    assert messages_waiting() == 3

    assert sweep() == 1

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 1)
    assert AppliedObject.objects.filter(request=approved).count() == 3
    assert provisioning_of(api, engineer, approved)["status"] == "succeeded"
    assert messages_waiting() == 3  # nothing of ours went through the broker (eager), nothing was taken from it
    assert sweep() == 0  # done: nothing more to send


def test_a_job_sent_recently_is_left_to_its_own_message(approved, broker, eager_celery):
    job = job_of(approved)
    ProvisioningJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - LONG_AGO,
                                                     dispatched_at=timezone.now())

    assert sweep() == 0
    assert job_of(approved).status == "queued"


def test_a_job_whose_worker_died_is_sent_again_with_the_attempt_counted(
    approved, broker, eager_celery, fake_kube, api, engineer
):
    """Its worker was killed while running it (attempt 1 counted when it started) and Redis lost its message."""
    job = job_of(approved)
    GpuRequest.objects.filter(pk=approved.pk).update(status="provisioning")
    age(job, status="running", attempts=1, started_at=timezone.now() - LONG_AGO)

    assert sweep() == 1

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 2)
    assert AppliedObject.objects.filter(request=approved).count() == 3
    shown = provisioning_of(api, engineer, approved)
    assert (shown["status"], shown["attempts"]) == ("succeeded", 2)


def test_a_stuck_job_goes_back_to_queued_and_its_new_message_waits_in_the_broker(approved, broker):
    """No worker here: what the sweep leaves is the row, and one message in Redis."""
    job = job_of(approved)
    GpuRequest.objects.filter(pk=approved.pk).update(status="provisioning")
    age(job, status="running", attempts=1)

    assert sweep() == 1

    job.refresh_from_db()
    assert (job.status, job.attempts, job.message) == (
        "queued", 1, "Attempt 1 did not finish: its worker was lost. Sent again.")
    assert job.dispatched_at > timezone.now() - timedelta(minutes=1)
    assert messages_waiting() == 1
    assert sweep() == 0  # just sent: left to that message


def test_a_job_whose_retry_message_was_lost_is_sent_again(approved, broker, eager_celery):
    job = job_of(approved)
    GpuRequest.objects.filter(pk=approved.pk).update(status="provisioning")
    age(job, status="retrying", attempts=2, message="Attempt 2 failed, retrying: HTTP 503")

    assert sweep() == 1

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 3)


@pytest.fixture
def another_worker():
    """A second database session, as another (live) worker process has."""
    params = connection.settings_dict
    with psycopg.connect(dbname=params["NAME"], host=params["HOST"], port=params["PORT"] or 5432,
                         user=params["USER"], password=params["PASSWORD"] or None, autocommit=True) as other:
        yield other


def test_a_long_running_job_that_a_live_worker_holds_is_left_alone(approved, broker, eager_celery, another_worker,
                                                                   fake_kube):
    job = job_of(approved)
    age(job, status="running", attempts=1)
    another_worker.execute("SELECT pg_advisory_lock(%s, %s)", [JOB_LOCK_NAMESPACE, job.pk])

    assert sweep() == 0

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("running", 1)
    assert not [r for r in fake_kube.requests if r.method == "PATCH"]

    another_worker.execute("SELECT pg_advisory_unlock(%s, %s)", [JOB_LOCK_NAMESPACE, job.pk])  # that worker died
    assert sweep() == 1
    assert job_of(approved).status == "succeeded"


def test_a_job_lost_on_its_last_attempt_fails_and_what_it_applied_is_taken_down(
    approved, broker, eager_celery, fake_kube, api, engineer
):
    job = job_of(approved)
    GpuRequest.objects.filter(pk=approved.pk).update(status="provisioning")
    age(job, status="running", attempts=MAX_ATTEMPTS)

    assert sweep() == 0  # nothing sent again: the teardown went on its own dispatch

    job.refresh_from_db()
    assert job.status == "failed"
    assert job.message.startswith(f"Gave up after {MAX_ATTEMPTS} attempts: its worker was lost")
    assert GpuRequest.objects.get(pk=approved.pk).status == "failed"
    shown = provisioning_of(api, engineer, approved)
    assert (shown["status"], shown["attempts"]) == ("failed", MAX_ATTEMPTS)
    assert job_of(approved, "teardown").status == "queued"  # its own after-commit dispatch sends it
    assert sweep() == 0
