"""kubesim's Kueue (v0.19.2): the admission gate keeps a Workload from reserving quota until it is removed, a Retry
check evicts a Workload holding quota and resets its checks to Pending, and a queued Job is suspended on create."""
from __future__ import annotations

import time

import pytest

from kubesim import kueue
from kubesim.nodes import namespace
from kubesim.timestamps import stamp

NS = "gpu-team-a"
KUEUE = kueue.KUEUE


@pytest.fixture
def queue(fake_kube):
    fake_kube.put(namespace(NS))
    fake_kube.put({"apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": "approval"},
                   "spec": {"controllerName": "example.com/approval"}})
    fake_kube.put({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "admissionChecksStrategy": {"admissionChecks": [{"name": "approval"}]},
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}})
    fake_kube.put({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": NS, "namespace": NS},
                   "spec": {"clusterQueue": "cq"}})
    return fake_kube


def job(name: str, annotations: dict | None = None) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {kueue.QUEUE_LABEL: NS},
                         "annotations": annotations or {}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}


def condition(fake, workload: dict, kind: str) -> dict:
    live = fake.get(KUEUE, "Workload", workload["metadata"]["name"], NS)
    return next((c for c in live["status"].get("conditions") or [] if c["type"] == kind), {})


def test_a_gated_workload_reserves_no_quota_until_the_gate_is_removed(queue):
    live_job, workload = kueue.submit_job(queue, job("gated", {kueue.GATE_ANNOTATION: "example.com/approval"}))
    kueue.step(queue)

    reserved = condition(queue, workload, "QuotaReserved")
    assert (reserved["status"], reserved["reason"]) == ("False", "AdmissionGated")
    assert reserved["message"] == "Admission is gated by: example.com/approval"

    queue.patch("batch/v1", "Job", "gated", NS, {"metadata": {"annotations": {kueue.GATE_ANNOTATION: None}}})
    kueue.step(queue)  # the gate leaves the Workload; it then queues for quota
    kueue.step(queue)

    assert condition(queue, workload, "QuotaReserved")["status"] == "True"


def test_a_retry_check_evicts_and_resets_the_checks_to_pending(queue):
    _, workload = kueue.submit_job(queue, job("retried"))
    kueue.step(queue)
    assert condition(queue, workload, "QuotaReserved")["status"] == "True"  # quota before the checks

    queue.patch_status(KUEUE, "Workload", workload["metadata"]["name"], NS, {"admissionChecks": [
        {"name": "approval", "state": "Retry", "message": "later", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    kueue.step(queue)

    live = queue.get(KUEUE, "Workload", workload["metadata"]["name"], NS)
    evictions = [v["status"]["conditions"] for v in queue.emulator._objects[
        (queue.emulator.served_kind(KUEUE, "Workload").key, NS, workload["metadata"]["name"])].history]
    evicted = [c for conditions in evictions for c in conditions if c["type"] == "Evicted"]
    assert evicted[0]["status"] == "True" and evicted[0]["reason"] == "AdmissionCheck"
    # Its quota was given back; with the checks Pending again it queued and got quota back in the same pass.
    assert any(c["type"] == "QuotaReserved" and c["status"] == "False" for conditions in evictions
               for c in conditions)
    assert condition(queue, workload, "Evicted")["message"].startswith(
        "Previously: Evicted due to AdmissionCheck in Retry state: approval: later")
    check = live["status"]["admissionChecks"][0]
    assert (check["state"], check["retryCount"]) == ("Pending", 1)
    assert check["message"] == "Reset to Pending after eviction. Previously: Retry"
    assert queue.get("batch/v1", "Job", "retried", NS)["spec"]["suspend"] is True


def test_a_queued_job_created_over_http_starts_suspended(queue, kube_client):
    created = kube_client.resource("batch/v1", "Job").create(body=job("queued"), namespace=NS)

    assert created.spec.suspend is True


def test_a_retry_with_requeue_after_seconds_keeps_the_workload_out_of_its_queue_until_then(queue):
    # KEP-3258 (kueue v0.19.2 apis/kueue/v1beta2/workload_types.go requeueAfterSeconds; pkg/workload/
    # admissionchecks.go NeedsRequeueAtUpdate): evicted, quota released, and not requeued before the time.
    _, workload = kueue.submit_job(queue, job("later"))
    now = time.time()
    kueue.step(queue, now=now)
    queue.patch_status(KUEUE, "Workload", workload["metadata"]["name"], NS, {"admissionChecks": [
        {"name": "approval", "state": "Retry", "message": "wait", "requeueAfterSeconds": 60,
         "lastTransitionTime": stamp(now)}]})

    kueue.step(queue, now=now + 1)
    kueue.step(queue, now=now + 30)

    live = queue.get(KUEUE, "Workload", workload["metadata"]["name"], NS)
    assert condition(queue, workload, "QuotaReserved")["status"] == "False"
    assert live["status"]["requeueState"]["requeueAt"] == stamp(now + 60)
    assert live["status"]["admissionChecks"][0]["requeueAfterSeconds"] == 60
    kueue.step(queue, now=now + 61)
    assert condition(queue, workload, "QuotaReserved")["status"] == "True"
