"""Why a request waits, through the API and the request page, with the cluster state served by the fake Kubernetes
API server over HTTPS: one waiting on the team's Kueue quota, one on fragmentation (Volcano), one stalled gang.
The readings are taken by the real Celery task (eager)."""
from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from intake.models import GpuRequest
from intake.services import request_transition
from workflows.services import request_approve, request_submit
from kubesim import nodes as k
from provisioning.inventory import team_quota_set
from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, RequestWait
from provisioning.selectors import request_manifests
from provisioning.tasks import request_wait_refresh
from tests.provisioning.live_fixtures import east_live, live_fake, seed_fleet  # noqa: F401
from tests.provisioning.reconcile import pods as k8s

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SWEEP_END = "2026-11-30T20:00:00Z"  # the running sweep: its pods started 08:00, expected_hours 12
GANG = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
        "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3", "expected_hours": 10}
POD_MESSAGE = ("0/10 nodes are available: 2 Insufficient nvidia.com/gpu, 8 node(s) didn't match Pod's node "
               "affinity/selector. preemption: 0/10 nodes are available: 10 Preemption is not helpful for scheduling.")


def page(user, gpu_request) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/requests/{gpu_request.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def sweep(fake, engineer, team, platform_user) -> GpuRequest:
    """team-a's 2 x 8 GPU sweep, running since 08:00 on gpu-h100-1 and -2 (the fleet's train-0/-1 pods)."""
    gpu_request = request_submit(user=engineer, team=team, name="sweep", raw_answers={**GANG, "expected_hours": 12})
    request_approve(user=platform_user, request_id=gpu_request.pk)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="running",
                                                        status_changed_at=datetime(2026, 11, 30, 8, tzinfo=UTC))
    for pod in ("train-0", "train-1"):
        fake.patch("v1", "Pod", pod, "gpu-team-a",
                   {"metadata": {"labels": {"gpu-portal.io/request-id": str(gpu_request.pk)}}})
    return GpuRequest.objects.get(pk=gpu_request.pk)


def approved(engineer, team, platform_user, name: str) -> GpuRequest:
    gpu_request = request_submit(user=engineer, team=team, name=name, raw_answers=GANG)
    request_transition(request_id=gpu_request.pk, to_status="approved", actor=platform_user, comment="Approved.")
    return GpuRequest.objects.get(pk=gpu_request.pk)


def applied_workload(gpu_request) -> dict:
    job = copy.deepcopy(k8s.workload_of(request_manifests(gpu_request=gpu_request)))
    job["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"job/{gpu_request.pk}"))
    return job


def refresh(gpu_request) -> RequestWait:
    assert request_wait_refresh.delay(gpu_request.pk).get() == "stored"
    return RequestWait.objects.get(request=gpu_request)


# --- fragmentation (Volcano) ------------------------------------------------------------------------------------


def test_a_gang_waiting_on_fragmentation_says_which_nodes_have_room_and_when(
        api, engineer, engineer_b, team_a, platform_user, east_live, live_fake, eager_celery):
    running = sweep(live_fake, engineer, team_a, platform_user)
    waiting = approved(engineer, team_a, platform_user, "wide")
    objects = request_manifests(gpu_request=waiting)
    podgroup = copy.deepcopy(next(o for o in objects if o["kind"] == "PodGroup"))
    # Volcano's gang plugin writes this condition (volcano v1.15 pkg/scheduler/plugins/gang/gang.go).
    podgroup["status"] = {"phase": "Pending", "conditions": [{
        "type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "transitionID": "t-1",
        "lastTransitionTime": "2026-11-30T09:00:00Z",
        "message": "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
                   "Pending: 1 Unschedulable, 1 Schedulable"}]}
    live_fake.put(podgroup)
    job = applied_workload(waiting)
    for index in (0, 1):
        live_fake.put(k8s.moved(k8s.pod_for(job, index=index, created=T0),
                                k8s.unschedulable(k8s.pod_for(job, index=index, created=T0), T0, POD_MESSAGE)))
    assert inventory_sync(cluster=east_live).status == "synced"

    record = refresh(waiting)

    body = api(engineer).get(f"/api/v1/requests/{waiting.pk}/wait/").json()
    assert body["waiting"] is True
    sources = [(b["kind"], b["reason"], b["source"]) for b in body["blockers"]]
    assert sources[0] == ("capacity", "NotEnoughResources",
                          f"Volcano PodGroup gpu-team-a/{podgroup['metadata']['name']}: condition Unschedulable=True")
    assert [b["reason"] for b in body["blockers"][1:]] == ["Unschedulable", "Unschedulable"]
    assert body["blockers"][1]["message"] == POD_MESSAGE
    assert body["unblock"] == [
        "It needs 2 pods of 8 GPUs; 1 node (gpu-h100-4) has 8 free, 1 node has 6. "
        f"Fits after #{running.pk} team-a/sweep (running) (expected to end 2026-11-30 20:00 UTC) finishes. "
        "1 of 2 could start now; a gang waits for all."]
    assert body["estimated_start"] == SWEEP_END
    assert body["estimate_basis"].startswith(f"#{running.pk} team-a/sweep (running) is expected to end 2026-11-30 20:00")
    assert body["queue_position"] is None  # Volcano exposes none
    assert record.first_estimate == datetime(2026, 11, 30, 20, tzinfo=UTC)

    html = page(engineer, waiting)
    assert "Why it is waiting" in html and "NotEnoughResources" in html
    assert "1 node (gpu-h100-4) has 8 free, 1 node has 6" in html and "2026-11-30 20:00 UTC" in html

    # Another team's engineer gets a 404, as for the request itself.
    assert api(engineer_b).get(f"/api/v1/requests/{waiting.pk}/wait/").status_code == 404


def test_the_wait_endpoint_reads_a_fixed_number_of_queries(api, engineer, team_a, platform_user, east_live,
                                                            live_fake, eager_celery, finance_user):
    waiting = approved(engineer, team_a, platform_user, "wide")
    live_fake.put(k8s.moved(k8s.pod_for(applied_workload(waiting), index=0, created=T0),
                            k8s.unschedulable(k8s.pod_for(applied_workload(waiting), index=0, created=T0), T0)))
    refresh(waiting)
    client = api(engineer)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/api/v1/requests/{waiting.pk}/wait/").status_code == 200
    # token user, request (with team), its wait reading: the same whatever it holds.
    assert len(queries) <= 6, [q["sql"] for q in queries]
    # finance reads it; nobody writes through it.
    assert api(finance_user).get(f"/api/v1/requests/{waiting.pk}/wait/").status_code == 200
    assert api(finance_user).post(f"/api/v1/requests/{waiting.pk}/wait/").status_code == 405


# --- quota (Kueue) ----------------------------------------------------------------------------------------------


@pytest.fixture
def kueue_fake(start_fake_kube):
    """A fake v1.35.2 API server serving every CRD the portal knows, Kueue's included."""
    return start_fake_kube(git_version="v1.35.2")


@pytest.fixture
def east_kueue(inventory, kueue_fake):
    call_command("register_cluster", "gpu-east", "--server", kueue_fake.url, "--token", "test-token",
                 "--ca-cert-file", kueue_fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue",
                 stdout=StringIO())
    seed_fleet(kueue_fake)
    return Cluster.objects.get(name="gpu-east")


def kueue_workload(job: dict, *, name: str, created: str, conditions: list[dict]) -> dict:
    """The Workload Kueue's job integration creates for a Job (owned by it; spec.queueName from its label)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": job["metadata"]["namespace"], "creationTimestamp": created,
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                          "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"queueName": job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "priority": 0,
                 "podSets": [{"name": "main", "count": 2}]},
        "status": {"conditions": conditions},
    }


def test_a_gang_waiting_on_the_team_quota_says_who_holds_it_its_queue_position_and_when(
        api, engineer, team_a, platform_user, east_kueue, kueue_fake, eager_celery):
    running = sweep(kueue_fake, engineer, team_a, platform_user)
    waiting = approved(engineer, team_a, platform_user, "next")
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=16)
    job = applied_workload(waiting)
    queue = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    kueue_fake.put({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                    "metadata": {"name": queue, "namespace": "gpu-team-a"}, "spec": {"clusterQueue": "team-a"}})
    # Kueue's scheduler writes this (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go).
    shortage = ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
                "h100-80gb, 16 more needed")
    waiting_for_quota = [{"type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota",
                          "message": shortage, "lastTransitionTime": "2026-11-30T09:00:00Z"}]
    earlier = copy.deepcopy(job)
    earlier["metadata"].update(name="other-job", uid="u-other")
    kueue_fake.put(kueue_workload(earlier, name="job-other-job-1a2b3", created="2026-11-30T08:30:00Z",
                                  conditions=waiting_for_quota))
    mine = kueue_workload(job, name="job-next-4c5d6", created="2026-11-30T09:00:00Z", conditions=waiting_for_quota)
    kueue_fake.put(mine)
    assert inventory_sync(cluster=east_kueue).status == "synced"

    refresh(waiting)

    body = api(engineer).get(f"/api/v1/requests/{waiting.pk}/wait/").json()
    assert body["blockers"] == [{
        "kind": "quota", "reason": "WaitingForQuota", "message": shortage,
        "source": "Kueue Workload gpu-team-a/job-next-4c5d6: condition QuotaReserved=False",
        "words": "Not admitted by Kueue: the team's queue has no unused quota for it yet."}]
    assert body["unblock"] == [f"Team team-a holds 16 of 16 whole-GPU H100-80GB GPU equivalents; 16 free up when "
                               f"#{running.pk} team-a/sweep finishes."]
    assert body["queue_position"] == {"local_queue": queue, "pending_in_local_queue": 2,
                                      "position_in_local_queue": 1, "position_in_cluster_queue": 1}
    assert body["estimated_start"] == SWEEP_END
    assert "its start plus its expected_hours" in body["estimate_basis"]

    html = page(engineer, waiting)
    assert "the team&#x27;s queue has no unused quota for it yet" in html
    assert "16 free up when" in html and "Position 2 of 2 in queue" in html and "2026-11-30 20:00 UTC" in html

    # When it runs, the actual start is recorded against the first estimate.
    kueue_fake.put(k8s.moved(k8s.pod_for(job, index=0, created=T0),
                             k8s.running(k8s.pod_for(job, index=0, created=T0), "gpu-h100-1",
                                         datetime(2026, 11, 30, 20, 30, tzinfo=UTC))))
    GpuRequest.objects.filter(pk=waiting.pk).update(status="running")
    assert request_wait_refresh.delay(waiting.pk).get() == "stored"
    record = RequestWait.objects.get(request=waiting)
    assert (record.actual_start, record.error_seconds) == (datetime(2026, 11, 30, 20, 30, tzinfo=UTC), 1800)
    assert api(engineer).get(f"/api/v1/requests/{waiting.pk}/wait/").json()["waiting"] is False
    # The platform page shows the median error.
    register = Client()
    register.force_login(platform_user)
    assert "median error <strong>30.0 minutes</strong> over 1 request" in register.get("/register/").content.decode()


# --- a stalled gang (Volcano) -----------------------------------------------------------------------------------


def test_a_stalled_gang_says_which_member_is_missing_why_and_when_it_can_start(
        api, engineer, team_a, platform_user, east_live, live_fake, eager_celery):
    running = sweep(live_fake, engineer, team_a, platform_user)
    stalled = approved(engineer, team_a, platform_user, "half")
    GpuRequest.objects.filter(pk=stalled.pk).update(status="stalled")
    job = applied_workload(stalled)
    first, second = (k8s.pod_for(job, index=i, created=T0) for i in (0, 1))
    live_fake.put(k8s.moved(first, k8s.running(first, "gpu-h100-4", T0)))
    live_fake.put(k8s.moved(second, k8s.unschedulable(second, T0, POD_MESSAGE)))
    assert inventory_sync(cluster=east_live).status == "synced"

    refresh(stalled)

    body = api(engineer).get(f"/api/v1/requests/{stalled.pk}/wait/").json()
    assert body["missing_members"] == [f"{second['metadata']['name']} (rank 1) is Pending: {POD_MESSAGE}"]
    assert [(b["reason"], b["message"]) for b in body["blockers"]] == [("Unschedulable", POD_MESSAGE)]
    assert body["unblock"] == [
        "No node has 8 free GPUs; 1 node has 6. "
        f"Fits after #{running.pk} team-a/sweep (running) (expected to end 2026-11-30 20:00 UTC) finishes. "
        "0 of 1 could start now; a gang waits for all."]
    assert body["estimated_start"] == SWEEP_END

    html = page(engineer, stalled)
    assert "Missing from the gang" in html and f"{second['metadata']['name']} (rank 1) is Pending" in html
    assert "No node has 8 free GPUs; 1 node has 6." in html and "2026-11-30 20:00 UTC" in html

    # The missing rank starts: the gang started then, not when its first rank did.
    late = datetime(2026, 11, 30, 20, 10, tzinfo=UTC)
    live_fake.put(k8s.moved(second, k8s.running(second, "gpu-h100-1", late)))
    GpuRequest.objects.filter(pk=stalled.pk).update(status="running")
    assert request_wait_refresh.delay(stalled.pk).get() == "stored"
    record = RequestWait.objects.get(request=stalled)
    assert (record.actual_start, record.error_seconds) == (late, 600)
