"""Approval -> Celery task -> objects in the cluster, over HTTP against the fake Kubernetes API server.

Given a cluster registered with `register_cluster` against the fake API server and the demo pools, when a request
is approved, then the dispatched task renders, validates and applies its objects with server-side apply, records
them, and the request is `provisioning`; transient errors are retried, permanent ones fail the request with the
server's message, and cancelling deletes everything the request created.
"""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.models import GpuRequest
from workflows.services import request_approve, request_cancel, request_submit
from provisioning.models import AppliedObject, Cluster, ProvisioningJob
from tests.conftest import VALID_ANSWERS
from tests.factories import request_approve_now as approve

pytestmark = pytest.mark.django_db

SELECTOR = "app.kubernetes.io/managed-by=gpu-portal"


@pytest.fixture
def east_on_fake(inventory, fake_kube):
    """gpu-east, now a real Kubernetes target: the fake API server."""
    out = StringIO()
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano",
                 stdout=out)
    assert "registered" not in out.getvalue() and "updated" in out.getvalue()
    return Cluster.objects.get(name="gpu-east")


def test_approval_applies_the_objects_with_server_side_apply(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)

    approve(gpu_request, platform_user, django_capture_on_commit_callbacks)

    assert gpu_request.status == "provisioning"
    job = ProvisioningJob.objects.get(request=gpu_request, kind="apply")
    assert (job.status, job.attempts) == ("succeeded", 1)
    stored = {(o["kind"], o["metadata"]["name"]) for o in fake_kube.find("apps/v1", "Deployment", None, SELECTOR)}
    assert stored == {("Deployment", f"chat-r{gpu_request.pk}")}
    writes = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert writes and all(r.content_type == "application/apply-patch+yaml" for r in writes)
    assert all(r.params.get("fieldManager") == "gpu-portal" for r in writes)
    recorded = AppliedObject.objects.filter(request=gpu_request)
    assert {o.kind for o in recorded} == {"Deployment", "Service", "PodDisruptionBudget"}
    assert all(o.uid for o in recorded)
    assert AppliedObject.objects.filter(request=None, kind="Namespace", name="gpu-team-a").exists()
    assert gpu_request.events.filter(kind="cluster", reason="Applied").exists()


def test_a_redelivered_task_changes_nothing(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    from provisioning.tasks import allocation_apply

    gpu_request = approve(request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS),
                          platform_user, django_capture_on_commit_callbacks)
    writes_before = len([r for r in fake_kube.requests if r.method in ("PATCH", "POST", "PUT")])
    job = ProvisioningJob.objects.get(request=gpu_request, kind="apply")

    assert allocation_apply.apply(args=[job.pk]).get() == "skipped"
    assert len([r for r in fake_kube.requests if r.method in ("PATCH", "POST", "PUT")]) == writes_before
    assert ProvisioningJob.objects.get(pk=job.pk).attempts == 1


def test_an_injected_500_is_retried_and_then_succeeds(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    fake_kube.fail_next("PATCH", r"/deployments/", 500, times=1, message="etcdserver: request timed out")

    approve(gpu_request, platform_user, django_capture_on_commit_callbacks)

    job = ProvisioningJob.objects.get(request=gpu_request, kind="apply")
    assert (job.status, job.attempts) == ("succeeded", 2)
    assert gpu_request.status == "provisioning"
    assert fake_kube.find("apps/v1", "Deployment", "gpu-team-a", SELECTOR)


def test_an_injected_422_fails_the_request_with_the_servers_message(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    fake_kube.fail_next("PATCH", r"/deployments/", 422, message='Deployment.apps "x" is invalid: spec.replicas')

    approve(gpu_request, platform_user, django_capture_on_commit_callbacks)

    job = ProvisioningJob.objects.get(request=gpu_request, kind="apply")
    assert job.status == "failed" and job.attempts == 1 and "spec.replicas" in job.message
    assert gpu_request.status == "failed"
    assert "spec.replicas" in gpu_request.events.get(to_status="failed").comment


def test_transient_errors_give_up_after_bounded_attempts(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    from provisioning.tasks import MAX_ATTEMPTS

    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    fake_kube.fail_next("PATCH", r"/deployments/", 503, times=50, message="overloaded")

    approve(gpu_request, platform_user, django_capture_on_commit_callbacks)

    job = ProvisioningJob.objects.get(request=gpu_request, kind="apply")
    assert job.status == "failed" and job.attempts == MAX_ATTEMPTS and "Gave up" in job.message
    assert gpu_request.status == "failed"


def test_cancel_deletes_everything_the_request_created(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    gpu_request = approve(request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS),
                          platform_user, django_capture_on_commit_callbacks)
    other = approve(request_submit(user=engineer, team=team_a, name="other", raw_answers=VALID_ANSWERS),
                    platform_user, django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True):
        request_cancel(user=engineer, request_id=gpu_request.pk)

    mine = f"gpu-portal.io/request-id={gpu_request.pk}"
    for api_version, kind in (("apps/v1", "Deployment"), ("v1", "Service"), ("policy/v1", "PodDisruptionBudget")):
        assert fake_kube.find(api_version, kind, None, mine) == []
    assert fake_kube.find("apps/v1", "Deployment", None, f"gpu-portal.io/request-id={other.pk}")
    assert fake_kube.find("v1", "Namespace", None, "") != []  # the team's namespace stays
    teardown = ProvisioningJob.objects.get(request=gpu_request, kind="teardown")
    assert teardown.status == "succeeded"
    assert not AppliedObject.objects.filter(request=gpu_request, deleted_at__isnull=True).exists()
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "cancelled"


def test_training_with_a_volcano_gang_applies_the_pod_group(
    engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    answers = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
               "gpus_per_replica": 8, "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
    gpu_request = approve(request_submit(user=engineer, team=team_a, name="train", raw_answers=answers),
                          platform_user, django_capture_on_commit_callbacks)
    assert gpu_request.status == "provisioning"
    groups = fake_kube.find("scheduling.volcano.sh/v1beta1", "PodGroup", "gpu-team-a", SELECTOR)
    assert [g["spec"]["minMember"] for g in groups] == [4]
    job = fake_kube.find("batch/v1", "Job", "gpu-team-a", SELECTOR)[0]
    assert (job["spec"]["completions"], job["spec"]["parallelism"], job["spec"]["completionMode"]) == (4, 4, "Indexed")


def test_the_gitops_applier_commits_one_commit_per_request(
    engineer, team_a, platform_user, inventory, tmp_path, eager_celery, django_capture_on_commit_callbacks
):
    import subprocess

    Cluster.objects.filter(name="gpu-east").update(gitops_repo=str(tmp_path / "repo"))
    gpu_request = approve(request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS),
                          platform_user, django_capture_on_commit_callbacks)
    assert gpu_request.status == "provisioning"
    log = subprocess.run(["git", "-C", str(tmp_path / "repo"), "log", "--oneline"], capture_output=True, text=True)
    assert len(log.stdout.strip().splitlines()) == 1
    files = sorted(p.name for p in (tmp_path / "repo" / "clusters" / "gpu-east" / "gpu-team-a").rglob("*.yaml"))
    assert any(name.startswith("deployment-chat-r") for name in files)


def test_the_sweep_sends_queued_jobs_whose_dispatch_was_lost(
    engineer, team_a, platform_user, inventory, tmp_path, eager_celery
):
    """An approval whose after-commit dispatch never reached the broker leaves a queued job (the outbox row);
    the beat sweep sends it. (Stopping the real Redis is the fault tests' job.)"""
    from django.utils import timezone

    from provisioning.sweeps import allocation_sweep

    Cluster.objects.filter(name="gpu-east").update(gitops_repo=str(tmp_path / "repo"))
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    request_approve(user=platform_user, request_id=gpu_request.pk)  # on_commit never runs in this test
    job = ProvisioningJob.objects.get(request=gpu_request)
    assert (job.status, job.dispatched_at) == ("queued", None)
    assert allocation_sweep() == 0  # too fresh: its own dispatch may still be on the way

    ProvisioningJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timezone.timedelta(minutes=5))
    assert allocation_sweep() == 1
    assert ProvisioningJob.objects.get(pk=job.pk).status == "succeeded"
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "provisioning"
    assert allocation_sweep() == 0
