"""Fixtures for reconciliation tests: provisioned requests, their pods, a webhook receiver, notification settings."""
from __future__ import annotations

import copy
import io
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from intake.choices import RequestStatus
from intake.services import request_transition
from workflows.services import request_approve, request_submit
from provisioning.reconcile import watch
from provisioning.selectors import request_manifests
from provisioning.services import allocation_on_approved
from tests.provisioning.reconcile import pods as k8s

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def minutes(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


@pytest.fixture(autouse=True)
def _fresh_pod_caches():
    watch._POD_STORES.clear()
    yield
    watch._POD_STORES.clear()


@pytest.fixture
def notified_team(team_a, webhook, settings):
    """team-a with an e-mail address and a webhook; the platform team's address configured."""
    team_a.notification_email = "team-a@example.com"
    team_a.webhook_url = webhook.url
    team_a.save()
    settings.PLATFORM_NOTIFICATION_EMAIL = ["gpu-platform@example.com"]
    settings.PORTAL_BASE_URL = "https://portal.example.com"
    return team_a


@pytest.fixture
def provision(engineer, team_a, platform_user, inventory):
    """`provision(name, answers)` -> a request on gpu-east that is `provisioning` (its apply job recorded)."""

    def make(name: str = "train", answers: dict | None = None, *, team=None, user=None):
        gpu_request = request_submit(user=user or engineer, team=team or team_a, name=name,
                                     raw_answers=answers or TRAINING)
        if gpu_request.status == RequestStatus.PENDING_APPROVAL:
            # Straight through the transition and the apply job the approval workflow records after it: these
            # requests are sized for reconciliation tests (100 pods), not for the capacity and quota checks of an
            # approval. Its dispatch never runs here.
            approved = request_transition(request_id=gpu_request.pk, to_status=RequestStatus.APPROVED,
                                          actor=platform_user, comment="Approved.")
            allocation_on_approved(gpu_request=approved)
        return request_transition(request_id=gpu_request.pk, to_status=RequestStatus.PROVISIONING, actor=None)

    return make


def workload(gpu_request) -> dict:
    found = copy.deepcopy(k8s.workload_of(request_manifests(gpu_request=gpu_request)))
    found["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"test-workload/{gpu_request.pk}"))
    return found


def pods_of(gpu_request, count: int | None = None, *, created=T0) -> list[dict]:
    """The pods its controller would create: one per replica (or `count`), Pending, created at `created`."""
    found = workload(gpu_request)
    replicas = count if count is not None else gpu_request.decision.replicas
    return [k8s.pod_for(found, index=i, created=created) for i in range(replicas)]


# --- against the fake Kubernetes API server ---------------------------------------------------------------------


@pytest.fixture
def east_on_fake(inventory, fake_kube):
    """gpu-east, a real Kubernetes target: the fake API server."""
    from django.core.management import call_command

    from provisioning.models import Cluster

    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano",
                 stdout=io.StringIO())
    return Cluster.objects.get(name="gpu-east")


@pytest.fixture
def applied(engineer, team_a, platform_user, east_on_fake, fake_kube, eager_celery,
            django_capture_on_commit_callbacks):
    """`applied(name, answers)` -> (request, workload as stored in the fake): approved, its objects applied to the
    fake API server by the real provisioning task, the request `provisioning`."""

    def make(name: str = "train", answers: dict | None = None):
        gpu_request = request_submit(user=engineer, team=team_a, name=name, raw_answers=answers or TRAINING)
        with django_capture_on_commit_callbacks(execute=True):
            if gpu_request.status == RequestStatus.PENDING_APPROVAL:
                request_approve(user=platform_user, request_id=gpu_request.pk)
        gpu_request.refresh_from_db()
        assert gpu_request.status == RequestStatus.PROVISIONING
        selector = f"gpu-portal.io/request-id={gpu_request.pk}"
        stored = [o for kind in (("batch/v1", "Job"), ("apps/v1", "Deployment"))
                  for o in fake_kube.find(*kind, None, selector)]
        return gpu_request, stored[0]

    return make


def seed(fake_kube, pod: dict, patch: dict | None = None) -> dict:
    """Create the pod in the fake as its controller would, optionally already moved by `patch`."""
    return fake_kube.put(k8s.moved(pod, patch) if patch else pod)


def move(fake_kube, pod: dict, patch: dict) -> dict:
    """The scheduler or kubelet moving a stored pod on (a JSON merge patch of spec.nodeName and status)."""
    return fake_kube.patch("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], patch)


class Clock:
    """The time reconciliation sees, set by the test."""

    def __init__(self, now: datetime = T0):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def at(self, moment: datetime) -> Clock:
        self.now = moment
        return self
