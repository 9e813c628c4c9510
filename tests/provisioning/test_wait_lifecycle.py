"""Why a request waits, where the readers of provisioning.wait_reasons see nothing: a Kueue Workload held by
waitForPodsReady, by a delayed topology request, evicted or deactivated, and a native gang on Kubernetes 1.35 (a
`v1alpha1` Workload, no PodGroup). Pure readings first, then through the wait API against the fake API server
(the real Celery task, eager)."""
from __future__ import annotations

import copy
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command

from provisioning import wait_lifecycle, wait_reasons
from provisioning.models import Cluster
from provisioning.selectors import request_manifests
from tests.provisioning.live_fixtures import seed_fleet
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.test_waits import applied_workload, approved, kueue_workload, refresh

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def workload(conditions, **spec):
    return {"metadata": {"name": "job-train-1a2b3", "namespace": "gpu-vision"}, "spec": spec,
            "status": {"conditions": conditions}}


def test_waiting_for_pods_ready_is_said_as_kueue_means_it():
    # kueue v0.19.2 workload_types.go: QuotaReserved=False, WaitingForPodsReady (waitForPodsReady on).
    [blocker] = wait_reasons.kueue_blockers(workload([{"type": "QuotaReserved", "status": "False",
                                                      "reason": "WaitingForPodsReady", "message": "waiting"}]))
    assert (blocker.kind, blocker.reason) == ("admission", "WaitingForPodsReady")
    assert "until the workloads admitted before it have all their pods ready" in blocker.words


def test_a_delayed_topology_request_is_said_as_kueue_means_it():
    [blocker] = wait_reasons.kueue_blockers(workload([
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
        {"type": "Admitted", "status": "False", "reason": "PendingDelayedTopologyRequests", "message": "pending"}]))
    assert (blocker.kind, blocker.reason) == ("admission", "PendingDelayedTopologyRequests")
    assert "still choosing the topology domain" in blocker.words


def test_a_deactivated_workload_says_it_is_never_admitted_until_reactivated():
    [blocker] = wait_lifecycle.kueue_lifecycle_blockers(workload([
        {"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout", "message": "Exceeded the PodsReady timeout"},
        {"type": "Requeued", "status": "False", "reason": "RequeuingLimitExceeded", "message": "limit 3 reached"}],
        active=False))
    assert (blocker.kind, blocker.source) == ("admission", "Kueue Workload gpu-vision/job-train-1a2b3: spec.active=false")
    assert blocker.words.startswith("Kueue deactivated it after it was evicted as often as waitForPodsReady's "
                                    "requeuing limit allows")


@pytest.mark.parametrize(("reason", "kind", "words"), [
    ("PodsReadyTimeout", "capacity", "did not all become ready within waitForPodsReady's timeout"),
    ("Preempted", "quota", "preempted it to make room for other work"),
    ("ClusterQueueStopped", "admission", "its ClusterQueue is stopped"),
])
def test_an_evicted_workload_says_why(reason, kind, words):
    [blocker] = wait_lifecycle.kueue_lifecycle_blockers(workload([
        {"type": "Evicted", "status": "True", "reason": reason, "message": "evicted"},
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "requeued"}]))
    assert (blocker.kind, blocker.reason) == (kind, reason) and words in blocker.words
    assert wait_lifecycle.kueue_lifecycle_blockers(workload([])) == []


# --- through the API -------------------------------------------------------------------------------------------


@pytest.fixture
def kueue_fake(start_fake_kube):
    return start_fake_kube(git_version="v1.35.2")


def _register(fake, gang_scheduler, *gates):
    call_command("register_cluster", "gpu-east", "--server", fake.url, "--token", "test-token", "--ca-cert-file",
                 fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", gang_scheduler,
                 *[a for gate in gates for a in ("--feature-gate", gate)], stdout=StringIO())
    seed_fleet(fake)
    return Cluster.objects.get(name="gpu-east")


@pytest.mark.django_db
def test_a_deactivated_kueue_workload_is_explained(api, engineer, team_a, platform_user, inventory, kueue_fake,
                                                    eager_celery):
    _register(kueue_fake, "kueue")
    waiting = approved(engineer, team_a, platform_user, "next")
    job = applied_workload(waiting)
    kueue_fake.put({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                    "metadata": {"name": job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
                                 "namespace": "gpu-team-a"}, "spec": {"clusterQueue": "team-a"}})
    stuck = kueue_workload(job, name="job-next-4c5d6", created="2026-11-30T09:00:00Z", conditions=[
        {"type": "Evicted", "status": "True", "reason": "Deactivated", "message": "The workload is deactivated",
         "lastTransitionTime": "2026-11-30T09:05:00Z"},
        {"type": "QuotaReserved", "status": "False", "reason": "Inactive", "message": "deactivated",
         "lastTransitionTime": "2026-11-30T09:05:00Z"}])
    stuck["spec"]["active"] = False
    kueue_fake.put(stuck)

    refresh(waiting)

    blockers = api(engineer).get(f"/api/v1/requests/{waiting.pk}/wait/").json()["blockers"]
    deactivated = next(b for b in blockers if b["source"].endswith("spec.active=false"))
    assert deactivated["reason"] == "Deactivated" and "until its spec.active is set back to true" in deactivated["words"]


@pytest.mark.django_db
def test_a_1_35_native_gang_is_read_from_its_workload_and_its_pods(api, engineer, team_a, platform_user, inventory,
                                                                   kueue_fake, eager_celery):
    _register(kueue_fake, "native", "GenericWorkload", "GangScheduling")
    waiting = approved(engineer, team_a, platform_user, "wide")
    objects = request_manifests(gpu_request=waiting)
    native = next(o for o in objects if o["kind"] == "Workload")
    assert native["apiVersion"] == "scheduling.k8s.io/v1alpha1" and not [o for o in objects if o["kind"] == "PodGroup"]
    kueue_fake.put(copy.deepcopy(native))
    job = applied_workload(waiting)
    # One rank waits at the GangScheduling plugin; the other is not even created yet.
    pod = k8s.pod_for(job, index=0, created=T0)
    kueue_fake.put(k8s.moved(pod, k8s.unschedulable(
        pod, T0, "waiting for minCount pods from a gang to appear in scheduling queue")))

    refresh(waiting)

    blockers = api(engineer).get(f"/api/v1/requests/{waiting.pk}/wait/").json()["blockers"]
    gang = next(b for b in blockers if b["kind"] == "gang")
    assert gang["source"] == (f"native Workload gpu-team-a/{native['metadata']['name']} (scheduling.k8s.io/v1alpha1): "
                              "podGroups[workers].policy.gang.minCount=2")
    assert gang["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert "0 of 2 are placed and 1 exist" in gang["words"]
