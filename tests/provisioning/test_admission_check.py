"""The portal as the admission check of a Kueue cluster, over HTTPS against the fake API server: the controller
installs its AdmissionCheck, lists and watches Workloads, and patches `status.admissionChecks[]` through the
status subresource; a Job applied with kubectl into a team queue becomes a request found in the cluster, held
until the platform team approves it in the admin (then Kueue admits it) or rejects it (then it never starts).
Kueue itself is played by kubesim.kueue (v0.19.2 shapes)."""
from __future__ import annotations

from datetime import datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from kubesim import kueue
from kubesim.nodes import namespace
from provisioning.admission import admission_checks_sync
from provisioning.inventory import team_quota_set
from provisioning.manifests.admission import ADMISSION_CHECK_NAME, CONTROLLER_NAME
from provisioning.models import AdmissionWorkload, Cluster

pytestmark = pytest.mark.django_db

KUEUE = kueue.KUEUE
TEAM_NS = "gpu-team-a"
H100 = "NVIDIA-H100-80GB-HBM3"


@pytest.fixture
def kueue_east(inventory, fake_kube, team_a):
    """gpu-east (the demo's H100 pool) registered against the fake as a Kueue cluster, with what the platform
    made (its ClusterQueue with quota) and what the portal rendered for team-a (namespace, LocalQueue)."""
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "t", "--ca-cert-file",
                 fake_kube.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue", stdout=StringIO())
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=64)
    fake_kube.put(namespace(TEAM_NS))
    fake_kube.put({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "gpu-portal"},
                   "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                            "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu",
                                                                        "nominalQuota": 32}]}]}]}})
    fake_kube.put({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": TEAM_NS, "namespace": TEAM_NS},
                   "spec": {"clusterQueue": "gpu-portal"}})
    return Cluster.objects.get(name="gpu-east")


def kubectl_job(name: str, *, gpus: int = 8, ns: str = TEAM_NS, parallelism: int = 1) -> dict:
    """A Job as an engineer would write it for kubectl apply: into the team's Kueue queue, no portal labels."""
    container = {"name": "train", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["torchrun", "train.py"],
                 "resources": {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": {kueue.QUEUE_LABEL: TEAM_NS}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": {"nvidia.com/gpu.product": H100},
                "containers": [container]}}}}


def portal_check(fake, workload: dict) -> dict:
    live = fake.get(KUEUE, "Workload", workload["metadata"]["name"], workload["metadata"]["namespace"])
    return next(c for c in live["status"]["admissionChecks"] if c["name"] == ADMISSION_CHECK_NAME)


def status_patches(fake) -> list:
    return [r for r in fake.requests if r.method == "PATCH" and r.path.endswith("/status")
            and "/workloads/" in r.path]


def admin(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_controller_installs_its_admission_check_and_the_team_queue_requires_it(kueue_east, fake_kube):
    run = admission_checks_sync(cluster_id=kueue_east.pk)

    assert run.status == "done", run.summary()
    check = fake_kube.get(KUEUE, "AdmissionCheck", ADMISSION_CHECK_NAME)
    assert check["spec"] == {"controllerName": CONTROLLER_NAME}
    assert [(c["type"], c["status"]) for c in check["status"]["conditions"]] == [("Active", "True")]
    queue = fake_kube.get(KUEUE, "ClusterQueue", "gpu-portal")
    assert queue["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": ADMISSION_CHECK_NAME}]}
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["name"] == "h100"  # the platform's quota kept


def test_the_controller_never_creates_a_cluster_queue_the_platform_did_not_make(inventory, fake_kube):
    # Server-side apply of the admissionChecksStrategy field alone would create an empty gpu-portal ClusterQueue (no
    # resourceGroups, no namespaceSelector), which admits nothing. The controller reads it first and reports it.
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "t", "--ca-cert-file",
                 fake_kube.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue", stdout=StringIO())
    cluster = Cluster.objects.get(name="gpu-east")

    run = admission_checks_sync(cluster_id=cluster.pk)

    assert fake_kube.get(KUEUE, "ClusterQueue", "gpu-portal") is None
    assert run.status == "error"
    assert "ClusterQueue gpu-portal does not exist on gpu-east, and the portal never creates one" in run.message
    assert fake_kube.get(KUEUE, "AdmissionCheck", ADMISSION_CHECK_NAME) is not None  # harmless on its own
    assert not [r for r in fake_kube.requests if r.method == "PATCH" and "/clusterqueues/" in r.path]

    # Once the platform makes it, the next run adds the portal's check to it.
    fake_kube.put({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "gpu-portal"},
                   "spec": {"namespaceSelector": {}, "resourceGroups": []}})
    assert admission_checks_sync(cluster_id=cluster.pk).status == "done"
    assert fake_kube.get(KUEUE, "ClusterQueue", "gpu-portal")["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": ADMISSION_CHECK_NAME}]}


def test_a_kubectl_job_is_held_until_approved_in_the_admin_then_admitted(kueue_east, fake_kube, platform_user):
    admission_checks_sync(cluster_id=kueue_east.pk)
    job, workload = kueue.submit_job(fake_kube, kubectl_job("adhoc-train"))
    submitted_at = portal_check(fake_kube, workload)["lastTransitionTime"]

    run = admission_checks_sync(cluster_id=kueue_east.pk)

    found = GpuRequest.objects.get(origin="cluster")
    assert run.found == 1 and found.status == "pending_approval" and found.team.slug == "team-a"
    assert found.answers["gpus_per_replica"] == 8 and found.decision.gpu_model == "H100-80GB"
    assert "FoundInCluster" in found.decision.review_reasons and not found.decision.auto_approve
    assert "Found in the cluster: Job gpu-team-a/adhoc-train" in found.events.first().comment
    held = portal_check(fake_kube, workload)
    assert held["state"] == "Pending" and held["message"] == (
        f"Waiting for approval; no quota is held: request #{found.pk} in the GPU portal, for the platform team to "
        "decide.")
    assert held["lastTransitionTime"] == submitted_at  # the state did not change
    kueue.step(fake_kube)
    assert fake_kube.get("batch/v1", "Job", "adhoc-train", TEAM_NS)["spec"]["suspend"] is True

    queue_page = admin(platform_user).get("/admin/intake/pendingapproval/").content.decode()
    assert "adhoc-train" in queue_page
    response = admin(platform_user).post(f"/admin/intake/pendingapproval/{found.pk}/approve/", {"comment": "ok"})
    assert response.status_code == 302
    found.refresh_from_db()
    assert found.status == "approved" and not found.provisioning_jobs.exists()  # nothing is applied again

    admission_checks_sync(cluster_id=kueue_east.pk)

    ready = portal_check(fake_kube, workload)
    assert ready["state"] == "Ready" and ready["message"] == f"Approved: request #{found.pk} in the GPU portal."
    assert datetime.fromisoformat(ready["lastTransitionTime"]) >= datetime.fromisoformat(submitted_at)
    kueue.step(fake_kube)
    live = fake_kube.get(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS)
    assert {c["type"]: c["status"] for c in live["status"]["conditions"]}["Admitted"] == "True"
    assert fake_kube.get("batch/v1", "Job", "adhoc-train", TEAM_NS)["spec"]["suspend"] is False


def test_a_rejected_kubectl_job_is_rejected_with_the_reason_and_never_starts(kueue_east, fake_kube, platform_user):
    admission_checks_sync(cluster_id=kueue_east.pk)
    _, workload = kueue.submit_job(fake_kube, kubectl_job("sneaky"))
    admission_checks_sync(cluster_id=kueue_east.pk)
    found = GpuRequest.objects.get(origin="cluster")

    admin(platform_user).post(f"/admin/intake/pendingapproval/{found.pk}/reject/",
                              {"comment": "Submit it through the portal, with expected hours."})
    admission_checks_sync(cluster_id=kueue_east.pk)

    rejected = portal_check(fake_kube, workload)
    assert rejected["state"] == "Rejected"
    assert rejected["message"] == (f"Rejected by the platform team (request #{found.pk} in the GPU portal): "
                                   "Submit it through the portal, with expected hours.")
    kueue.step(fake_kube)
    live = fake_kube.get(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS)
    assert live["spec"]["active"] is False
    assert fake_kube.get("batch/v1", "Job", "sneaky", TEAM_NS)["spec"]["suspend"] is True
    assert fake_kube.find("v1", "Pod", TEAM_NS) == []


def test_restarts_never_decide_twice(kueue_east, fake_kube):
    admission_checks_sync(cluster_id=kueue_east.pk)
    _, workload = kueue.submit_job(fake_kube, kubectl_job("adhoc-train"))
    admission_checks_sync(cluster_id=kueue_east.pk)
    patches = len(status_patches(fake_kube))

    # A restarted controller (new process, new client) lists everything again, and also watches.
    again = admission_checks_sync(cluster_id=kueue_east.pk, watch_seconds=1)

    assert again.seen == 1 and again.found == 0 and again.patched == 0, again.summary()
    assert len(status_patches(fake_kube)) == patches
    assert GpuRequest.objects.filter(origin="cluster").count() == 1
    assert AdmissionWorkload.objects.get().uid == workload["metadata"]["uid"]


def test_status_patches_carry_the_read_resource_version_and_keep_other_checks(kueue_east, fake_kube):
    admission_checks_sync(cluster_id=kueue_east.pk)
    _, workload = kueue.submit_job(fake_kube, kubectl_job("adhoc-train"))
    other = {"name": "dws-prov", "state": "Pending", "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z"}
    fake_kube.patch_status(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS, {"admissionChecks": [
        *fake_kube.get(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS)["status"]["admissionChecks"],
        other]})

    admission_checks_sync(cluster_id=kueue_east.pk)

    (patch,) = status_patches(fake_kube)
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body["metadata"]["resourceVersion"]
    live = fake_kube.get(KUEUE, "Workload", workload["metadata"]["name"], TEAM_NS)
    assert other in live["status"]["admissionChecks"]


def test_work_asking_for_no_gpu_is_ready_with_nothing_to_approve(kueue_east, fake_kube):
    # Issue 23 item 6: a CPU-only Job has nothing for the portal to approve; Rejected would deactivate it.
    admission_checks_sync(cluster_id=kueue_east.pk)
    _, workload = kueue.submit_job(fake_kube, kubectl_job("cpu-only", gpus=0))

    admission_checks_sync(cluster_id=kueue_east.pk)

    check = portal_check(fake_kube, workload)
    assert (check["state"], check["message"]) == ("Ready", "Asks for no GPU: nothing for the GPU portal to approve.")
    assert not GpuRequest.objects.filter(origin="cluster").exists()
    kueue.step(fake_kube)
    assert fake_kube.get("batch/v1", "Job", "cpu-only", TEAM_NS)["spec"]["suspend"] is False


def test_gpu_work_of_a_namespace_that_is_no_teams_waits_saying_what_to_do(kueue_east, fake_kube, team_a):
    # Issue 23 item 6: only the platform team's decision rejects; until then it waits, and says how to act.
    fake_kube.put(namespace("gpu-research"))
    fake_kube.put({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": TEAM_NS, "namespace": "gpu-research"},
                   "spec": {"clusterQueue": "gpu-portal"}})
    admission_checks_sync(cluster_id=kueue_east.pk)
    _, workload = kueue.submit_job(fake_kube, kubectl_job("elsewhere", ns="gpu-research"))

    admission_checks_sync(cluster_id=kueue_east.pk)

    check = portal_check(fake_kube, workload)
    assert check["state"] == "Pending" and check["message"].startswith("Waiting; no quota is held.")
    assert "Namespace gpu-research is no GPU portal team's namespace" in check["message"]
    assert "registers the team whose namespace it is" in check["message"]
    assert not GpuRequest.objects.filter(origin="cluster").exists()

    # Once the namespace is a team's, the next pass makes a request of it, for the approval queue.
    team_a.slug = "research"
    team_a.save(update_fields=["slug"])
    admission_checks_sync(cluster_id=kueue_east.pk)
    found = GpuRequest.objects.get(origin="cluster")
    assert found.status == "pending_approval"
    assert portal_check(fake_kube, workload)["message"].startswith(f"Waiting for approval; no quota is held: request #{found.pk}")


TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 40,
            "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def test_work_the_portal_applied_after_approval_is_ready_and_forged_labels_are_not(
    kueue_east, fake_kube, engineer, team_a, platform_user, eager_celery, django_capture_on_commit_callbacks
):
    Cluster.objects.filter(name="gpu-west").update(enabled=False)
    gpu_request = request_submit(user=engineer, team=team_a, name="train", raw_answers=TRAINING)
    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=gpu_request.pk)
    admission_checks_sync(cluster_id=kueue_east.pk)
    (job,) = [j for j in fake_kube.find("batch/v1", "Job", TEAM_NS) if kueue.QUEUE_LABEL in j["metadata"]["labels"]]
    workload = kueue.workload_for(fake_kube, job)
    forged = kubectl_job("copycat")
    forged["spec"]["template"]["metadata"] = job["spec"]["template"]["metadata"]  # the portal's labels, copied
    _, forged_workload = kueue.submit_job(fake_kube, forged)

    admission_checks_sync(cluster_id=kueue_east.pk)

    assert portal_check(fake_kube, workload) | {"lastTransitionTime": None} == {
        "name": ADMISSION_CHECK_NAME, "state": "Ready", "lastTransitionTime": None,
        "message": f"Approved: request #{gpu_request.pk} in the GPU portal."}
    copied = portal_check(fake_kube, forged_workload)
    found = GpuRequest.objects.get(origin="cluster")  # a new request, waiting for review (issue 23 item 1)
    assert copied["state"] == "Pending" and f"request #{found.pk}" in copied["message"]
    assert found.status == "pending_approval" and found.name == "copycat"


def test_the_found_request_is_shown_to_its_team_only(kueue_east, fake_kube, engineer, engineer_b, finance_user, api):
    admission_checks_sync(cluster_id=kueue_east.pk)
    kueue.submit_job(fake_kube, kubectl_job("adhoc-train"))
    admission_checks_sync(cluster_id=kueue_east.pk)
    found = GpuRequest.objects.get(origin="cluster")

    mine = api(engineer).get(f"/api/v1/requests/{found.pk}/")
    assert mine.status_code == 200 and mine.json()["origin"] == "cluster"
    assert api(finance_user).get(f"/api/v1/requests/{found.pk}/").status_code == 200  # finance reads
    assert api(engineer_b).get(f"/api/v1/requests/{found.pk}/").status_code == 404
    assert api(engineer).post(f"/api/v1/requests/{found.pk}/approve/", {}, format="json").status_code == 403


def test_the_platform_team_sees_each_decision_in_the_admin_read_only(kueue_east, fake_kube, platform_user, engineer):
    admission_checks_sync(cluster_id=kueue_east.pk)
    kueue.submit_job(fake_kube, kubectl_job("adhoc-train"))
    admission_checks_sync(cluster_id=kueue_east.pk)

    page = admin(platform_user).get("/admin/provisioning/admissionworkload/")
    assert page.status_code == 200 and "adhoc-train" in page.content.decode() and "Pending" in page.content.decode()
    row = AdmissionWorkload.objects.get()
    assert admin(platform_user).post(f"/admin/provisioning/admissionworkload/{row.pk}/change/",
                                     {"state": "Ready"}).status_code == 403
    assert admin(engineer).get("/admin/provisioning/admissionworkload/").status_code in (302, 403)


def test_the_controller_command_runs_one_pass(kueue_east, fake_kube):
    kueue.submit_job(fake_kube, kubectl_job("adhoc-train"))  # before the check exists: Kueue gave it no entry
    out = StringIO()

    call_command("admission_check_controller", "--once", "--watch-seconds", "0", stdout=out)

    assert "gpu-east: done; 0 workload(s) checked" in out.getvalue()
    assert fake_kube.get(KUEUE, "AdmissionCheck", ADMISSION_CHECK_NAME) is not None


@pytest.mark.parametrize(("name", "limits", "claims", "asks"), [
    ("mig-job", {"nvidia.com/mig-3g.40gb": 1}, [], "nvidia.com/mig-3g.40gb: 1"),
    ("shared-job", {"nvidia.com/gpu.shared": 1}, [], "nvidia.com/gpu.shared: 1"),
    ("dra-job", {}, [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}], "DRA template:one-gpu"),
])
def test_gpu_work_the_portal_cannot_classify_waits_as_a_found_request(kueue_east, fake_kube, name, limits, claims,
                                                                       asks):
    # Issue 23 item 6: MIG, shared-GPU and DRA Jobs from kubectl are not rejected; they wait for a decision.
    admission_checks_sync(cluster_id=kueue_east.pk)
    job = kubectl_job(name)
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": limits}
    job["spec"]["template"]["spec"]["resourceClaims"] = claims
    if claims:
        job["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    _, workload = kueue.submit_job(fake_kube, job)

    admission_checks_sync(cluster_id=kueue_east.pk)

    found = GpuRequest.objects.get(origin="cluster")
    check = portal_check(fake_kube, workload)
    assert check["state"] == "Pending" and f"request #{found.pk}" in check["message"]
    assert found.status == "pending_approval"
    assert f"1 pod(s) x {{{asks}}}" in found.events.get(reason="FoundInCluster").comment
