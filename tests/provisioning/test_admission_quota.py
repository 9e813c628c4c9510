"""Issue 23 item 5 on the simulated Kueue (kubesim.kueue, v0.19.2 semantics: quota is reserved before the checks
run; a Retry check releases it and requeues the Workload after `requeueAfterSeconds`): a Job created with kubectl
waits for the platform team holding no quota -- another team's gang is admitted meanwhile -- and is admitted on
approval with exactly the approved size; a CPU-only Job in the same queue is never held."""
from __future__ import annotations

import time

import pytest

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from kubesim import kueue
from kubesim.nodes import namespace
from provisioning.admission import admission_checks_sync
from provisioning.inventory import team_quota_set
from provisioning.models import AdmissionBinding, Cluster

from .test_admission_check import KUEUE, TEAM_NS, TRAINING, admin, kubectl_job, kueue_east, portal_check  # noqa: F401

pytestmark = pytest.mark.django_db


def conditions(fake, workload: dict) -> dict:
    live = fake.get(KUEUE, "Workload", workload["metadata"]["name"], workload["metadata"]["namespace"])
    return {c["type"]: c for c in live["status"].get("conditions") or []}


def workload_of(fake, job: dict) -> dict:
    return next(w for w in fake.find(KUEUE, "Workload", job["metadata"]["namespace"])
                if w["metadata"]["ownerReferences"][0]["name"] == job["metadata"]["name"])


def test_a_kubectl_job_waits_for_approval_holding_no_quota_and_is_admitted_as_approved(
    kueue_east, fake_kube, kube_client, engineer_b, team_b, platform_user, eager_celery,
    django_capture_on_commit_callbacks, settings,
):
    Cluster.objects.filter(name="gpu-west").update(enabled=False)
    team_quota_set(team=team_b, strategy="whole_gpu", gpu_equivalents=64)
    fake_kube.patch(KUEUE, "ClusterQueue", "gpu-portal", None, {"spec": {"resourceGroups": [{
        "coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100", "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]}})
    admission_checks_sync(cluster_id=kueue_east.pk)
    jobs = kube_client.resource("batch/v1", "Job")
    jobs.create(body=kubectl_job("adhoc", gpus=8, parallelism=2), namespace=TEAM_NS)  # the whole quota
    jobs.create(body=kubectl_job("cpu-prep", gpus=0), namespace=TEAM_NS)

    kueue.step(fake_kube)  # Kueue reserves quota first, then the checks run
    adhoc = workload_of(fake_kube, {"metadata": {"name": "adhoc", "namespace": TEAM_NS}})
    assert conditions(fake_kube, adhoc)["QuotaReserved"]["status"] == "True"
    admission_checks_sync(cluster_id=kueue_east.pk)

    found = GpuRequest.objects.get(origin="cluster")
    check = portal_check(fake_kube, adhoc)
    assert check["state"] == "Retry" and check["requeueAfterSeconds"] == settings.PORTAL_ADMISSION_RETRY_SECONDS
    assert check["message"].startswith(f"Waiting for approval; no quota is held: request #{found.pk}")
    cpu = workload_of(fake_kube, {"metadata": {"name": "cpu-prep", "namespace": TEAM_NS}})
    assert portal_check(fake_kube, cpu)["state"] == "Ready"

    # Another team's gang, approved in the portal and applied by its worker, is admitted meanwhile.
    other = request_submit(user=engineer_b, team=team_b, name="gang", raw_answers=TRAINING)
    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=other.pk)
    for _ in range(2):
        kueue.step(fake_kube)
        admission_checks_sync(cluster_id=kueue_east.pk)
    kueue.step(fake_kube)

    (gang_job,) = [j for j in fake_kube.find("batch/v1", "Job", "gpu-team-b")
                   if kueue.QUEUE_LABEL in j["metadata"]["labels"]]
    assert conditions(fake_kube, workload_of(fake_kube, gang_job))["Admitted"]["status"] == "True"
    assert fake_kube.get("batch/v1", "Job", gang_job["metadata"]["name"], "gpu-team-b")["spec"]["suspend"] is False
    waiting = conditions(fake_kube, adhoc)
    assert waiting["QuotaReserved"]["status"] == "False" and waiting["Evicted"]["reason"] == "AdmissionCheck"
    assert portal_check(fake_kube, adhoc)["message"].startswith("Waiting for approval; no quota is held")
    assert fake_kube.get("batch/v1", "Job", "adhoc", TEAM_NS)["spec"]["suspend"] is True
    assert conditions(fake_kube, cpu)["Admitted"]["status"] == "True"  # the CPU-only Job was never held
    assert fake_kube.get("batch/v1", "Job", "cpu-prep", TEAM_NS)["spec"]["suspend"] is False
    wait = admin(platform_user).get(f"/api/v1/requests/{found.pk}/wait/")
    assert wait.status_code == 200 and "waiting for approval; no quota is held" in wait.json()["approval"]["words"]

    # The gang ends; the platform team approves the found request; once requeued, it is admitted as approved.
    fake_kube.patch_status("batch/v1", "Job", gang_job["metadata"]["name"], "gpu-team-b", {"conditions": [
        {"type": "Complete", "status": "True"}]})
    response = admin(platform_user).post(f"/admin/intake/pendingapproval/{found.pk}/approve/", {"comment": "ok"})
    assert response.status_code == 302
    later = time.time() + settings.PORTAL_ADMISSION_RETRY_SECONDS + 1
    for _ in range(2):
        kueue.step(fake_kube, now=later)
        admission_checks_sync(cluster_id=kueue_east.pk)
    kueue.step(fake_kube, now=later)

    admitted = fake_kube.get(KUEUE, "Workload", adhoc["metadata"]["name"], TEAM_NS)
    assert conditions(fake_kube, adhoc)["Admitted"]["status"] == "True"
    assert portal_check(fake_kube, adhoc)["message"] == f"Approved: request #{found.pk} in the GPU portal."
    (assignment,) = admitted["status"]["admission"]["podSetAssignments"]
    assert (assignment["count"], assignment["resourceUsage"]) == (2, {"nvidia.com/gpu": "16"})
    assert AdmissionBinding.objects.get(request=found).shape == [
        {"count": 2, "devices_per_pod": {"nvidia.com/gpu": 8}, "claims_per_pod": [],
         "images": ["nvcr.io/nvidia/pytorch:25.01-py3"]}]
    assert fake_kube.get("batch/v1", "Job", "adhoc", TEAM_NS)["spec"]["suspend"] is False


def test_a_found_request_is_reviewed_as_exactly_its_pod_sets_and_checked_again_at_admission(
    kueue_east, fake_kube, kube_client, platform_user,
):
    # Issue 23 item 3: two containers of 4 GPUs are 8 per pod; the review says so, and approval admits that only.
    admission_checks_sync(cluster_id=kueue_east.pk)
    body = kubectl_job("two-containers", gpus=4, parallelism=2)
    containers = body["spec"]["template"]["spec"]["containers"]
    containers.append({**containers[0], "name": "sidecar"})
    kube_client.resource("batch/v1", "Job").create(body=body, namespace=TEAM_NS)
    kueue.step(fake_kube)
    admission_checks_sync(cluster_id=kueue_east.pk)
    found = GpuRequest.objects.get(origin="cluster")
    assert found.answers["gpus_per_replica"] == 8 and found.answers["replicas"] == 2

    page = admin(platform_user).get(f"/admin/intake/pendingapproval/{found.pk}/change/").content.decode()
    assert "Exactly 2 pod(s) x {nvidia.com/gpu: 8} (nvcr.io/nvidia/pytorch:25.01-py3)" in page
    assert "Reviewed as exactly its pod sets, which is what approval admits and nothing else" in page

    admin(platform_user).post(f"/admin/intake/pendingapproval/{found.pk}/approve/", {"comment": "ok"})
    workload = workload_of(fake_kube, {"metadata": {"name": "two-containers", "namespace": TEAM_NS}})
    grown = fake_kube.get(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS)["spec"]["podSets"]
    grown[0]["count"] = 4  # its pod sets are not what was reviewed any more
    fake_kube.patch(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS, {"spec": {"podSets": grown}})
    admission_checks_sync(cluster_id=kueue_east.pk)

    check = portal_check(fake_kube, workload)
    assert check["state"] != "Ready"
    assert "its pod sets (4 pod(s) x {nvidia.com/gpu: 8}" in check["message"]
    assert f"are not what request #{found.pk} in the GPU portal was approved for" in check["message"]
