"""Issue 23 item 1, the admission part of the spoofing matrix: labels alone never admit. For an approved, a
completed, another team's and a pending request, a Job created over the simulated cluster's HTTP API (as kubectl
would) that copies the portal Job's labels -- same size, larger, in another namespace -- is never admitted or
unsuspended as that request; it becomes a request found in the cluster, waiting for the platform team.
The approval admits the work the portal applied for it once (bound to its Workload's uid and pod sets)."""
from __future__ import annotations

import copy

import pytest

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from kubesim import kueue
from kubesim.nodes import namespace
from provisioning.admission import admission_checks_sync
from provisioning.inventory import team_quota_set
from provisioning.models import AdmissionBinding, Cluster

from .test_admission_check import KUEUE, TEAM_NS, TRAINING, admin, kueue_east, portal_check  # noqa: F401

pytestmark = pytest.mark.django_db
TEAM_B_NS = "gpu-team-b"


@pytest.fixture
def east(kueue_east, fake_kube, team_b):
    """gpu-east as a Kueue cluster whose team queue both teams' namespaces use (team-b's LocalQueue too)."""
    Cluster.objects.filter(name="gpu-west").update(enabled=False)
    team_quota_set(team=team_b, strategy="whole_gpu", gpu_equivalents=64)
    fake_kube.put(namespace(TEAM_B_NS))
    for ns in (TEAM_NS, TEAM_B_NS):  # a LocalQueue named as team-a's in both, so a copied queue label resolves
        fake_kube.put({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": ns, "namespace": TEAM_B_NS},
                       "spec": {"clusterQueue": "gpu-portal"}})
        fake_kube.put({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": ns, "namespace": TEAM_NS},
                       "spec": {"clusterQueue": "gpu-portal"}})
    admission_checks_sync(cluster_id=kueue_east.pk)
    return kueue_east


def approved_and_applied(user, team, platform_user, capture, name="train") -> tuple[GpuRequest, dict]:
    """A request submitted and approved through the portal, its Job applied by the worker and admitted."""
    gpu_request = request_submit(user=user, team=team, name=name, raw_answers=TRAINING)
    with capture(execute=True):
        request_approve(user=platform_user, request_id=gpu_request.pk)
    return gpu_request, gpu_request


def portal_job(fake, ns: str) -> dict:
    (job,) = [j for j in fake.find("batch/v1", "Job", ns) if kueue.QUEUE_LABEL in j["metadata"]["labels"]]
    return job


def workload_of(fake, job: dict) -> dict:
    return next(w for w in fake.find(KUEUE, "Workload", job["metadata"]["namespace"])
                if w["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"])


def copy_of(job: dict, *, name: str, ns: str, parallelism: int | None = None, gpus: int | None = None) -> dict:
    """What someone with kubectl writes: the portal Job's labels, annotations and pod template, copied."""
    body = {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": dict(job["metadata"]["labels"]),
                         "annotations": dict(job["metadata"].get("annotations") or {})},
            "spec": {"parallelism": parallelism or job["spec"].get("parallelism", 1),
                     "completions": parallelism or job["spec"].get("completions", 1),
                     "template": copy.deepcopy(job["spec"]["template"])}}
    body["spec"]["template"]["metadata"].pop("ownerReferences", None)
    if gpus is not None:
        for container in body["spec"]["template"]["spec"]["containers"]:
            container["resources"]["limits"]["nvidia.com/gpu"] = gpus
    return body


def kubectl_create(kube_client, body: dict) -> dict:
    created = kube_client.resource("batch/v1", "Job").create(body=body, namespace=body["metadata"]["namespace"])
    return created.to_dict()


def settle(fake, cluster) -> None:
    """Kueue and the portal's check, a few passes each: whatever can be admitted is."""
    for _ in range(3):
        kueue.step(fake)
        admission_checks_sync(cluster_id=cluster.pk)
    kueue.step(fake)


def assert_not_admitted_as(fake, gpu_request: GpuRequest, copied: dict, team_slug: str) -> None:
    job = fake.get("batch/v1", "Job", copied["metadata"]["name"], copied["metadata"]["namespace"])
    workload = workload_of(fake, job)
    check = portal_check(fake, workload)
    assert check["state"] != "Ready" and f"request #{gpu_request.pk} " not in check["message"], check
    assert job["spec"]["suspend"] is True
    conditions = {c["type"]: c["status"] for c in workload["status"].get("conditions") or []}
    assert conditions.get("Admitted") != "True"
    found = GpuRequest.objects.get(origin="cluster", name=copied["metadata"]["name"])
    assert found.status == "pending_approval" and found.team.slug == team_slug
    assert f"request #{found.pk}" in check["message"] and check["message"].startswith("Waiting for approval")
    assert AdmissionBinding.objects.get(request=found).workload_uid == workload["metadata"]["uid"]


CASES = {  # case -> (namespace of the copy, its team, parallelism, gpus per pod; None = as approved)
    "same-size": (TEAM_NS, "team-a", None, None),
    "larger": (TEAM_NS, "team-a", 4, 8),
    "other-namespace": (TEAM_B_NS, "team-b", None, None),
}


@pytest.mark.parametrize("case", CASES)
def test_a_copy_of_an_approved_requests_labels_is_not_admitted_as_it(
    case, east, fake_kube, kube_client, engineer, team_a, platform_user, eager_celery,
    django_capture_on_commit_callbacks,
):
    gpu_request, _ = approved_and_applied(engineer, team_a, platform_user, django_capture_on_commit_callbacks)
    settle(fake_kube, east)
    original = portal_job(fake_kube, TEAM_NS)
    assert portal_check(fake_kube, workload_of(fake_kube, original))["message"] == (
        f"Approved: request #{gpu_request.pk} in the GPU portal.")
    ns, team, parallelism, gpus = CASES[case]
    base = original["metadata"]["name"]

    copied = kubectl_create(kube_client, copy_of(original, name=f"{base}-x", ns=ns, parallelism=parallelism,
                                                 gpus=gpus))
    settle(fake_kube, east)

    assert_not_admitted_as(fake_kube, gpu_request, copied, team)
    assert AdmissionBinding.objects.get(request=gpu_request).workload_uid == workload_of(
        fake_kube, original)["metadata"]["uid"]


def test_a_copy_of_a_completed_requests_labels_is_not_admitted(
    east, fake_kube, kube_client, engineer, team_a, platform_user, eager_celery, django_capture_on_commit_callbacks,
):
    gpu_request, _ = approved_and_applied(engineer, team_a, platform_user, django_capture_on_commit_callbacks)
    settle(fake_kube, east)
    original = portal_job(fake_kube, TEAM_NS)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="completed")  # its work ran and ended

    # The same request again, after it completed: its own Job recreated from a saved manifest.
    again = copy_of(original, name=original["metadata"]["name"] + "-again", ns=TEAM_NS)
    copied = kubectl_create(kube_client, again)
    settle(fake_kube, east)

    assert_not_admitted_as(fake_kube, gpu_request, copied, "team-a")


def test_a_copy_of_another_teams_request_is_a_request_of_the_namespaces_team(
    east, fake_kube, kube_client, engineer_b, team_b, platform_user, eager_celery, django_capture_on_commit_callbacks,
):
    gpu_request, _ = approved_and_applied(engineer_b, team_b, platform_user, django_capture_on_commit_callbacks)
    settle(fake_kube, east)
    original = portal_job(fake_kube, TEAM_B_NS)

    copied = kubectl_create(kube_client, copy_of(original, name=original["metadata"]["name"] + "-x", ns=TEAM_NS))
    settle(fake_kube, east)

    assert_not_admitted_as(fake_kube, gpu_request, copied, "team-a")


def test_a_copy_of_a_pending_requests_labels_is_not_admitted_when_it_is_approved(
    east, fake_kube, kube_client, engineer, team_a, platform_user, eager_celery, django_capture_on_commit_callbacks,
):
    gpu_request, _ = approved_and_applied(engineer, team_a, platform_user, django_capture_on_commit_callbacks)
    settle(fake_kube, east)
    original = portal_job(fake_kube, TEAM_NS)
    pending = request_submit(user=engineer, team=team_a, name="next", raw_answers=TRAINING)
    forged = copy_of(original, name=original["metadata"]["name"].replace(f"-{gpu_request.pk}", f"-{pending.pk}")
                     + "-x", ns=TEAM_NS)
    for labels in (forged["metadata"]["labels"], forged["spec"]["template"]["metadata"]["labels"]):
        labels["gpu-portal.io/request-id"] = str(pending.pk)  # the pending request's labels
    copied = kubectl_create(kube_client, forged)
    settle(fake_kube, east)

    response = admin(platform_user).post(f"/admin/intake/pendingapproval/{pending.pk}/approve/", {"comment": "ok"})
    assert response.status_code == 302
    settle(fake_kube, east)

    assert_not_admitted_as(fake_kube, pending, copied, "team-a")


def test_a_pod_copying_an_approved_requests_labels_is_not_admitted_as_it(
    east, fake_kube, kube_client, engineer, team_a, platform_user, eager_celery, django_capture_on_commit_callbacks,
):
    # A bare Pod into the queue (Kueue's plain-pod integration makes a Workload owned by the Pod, with the pod's
    # spec as its one pod set; kueue v0.19.2 pkg/controller/jobs/pod): the Pod is written over HTTP, its Workload
    # as Kueue would make it.
    gpu_request, _ = approved_and_applied(engineer, team_a, platform_user, django_capture_on_commit_callbacks)
    settle(fake_kube, east)
    original = portal_job(fake_kube, TEAM_NS)
    template = copy.deepcopy(original["spec"]["template"])
    pod = kube_client.resource("v1", "Pod").create(namespace=TEAM_NS, body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lone", "namespace": TEAM_NS,
                                                        "labels": template["metadata"]["labels"]},
        "spec": {**template["spec"], "restartPolicy": "Never"}}).to_dict()
    checks = [{"name": "gpu-portal-approval", "state": "Pending", "message": "",
               "lastTransitionTime": "2026-12-02T00:00:00Z"}]
    workload = fake_kube.put({"apiVersion": KUEUE, "kind": "Workload", "metadata": {
        "name": "pod-lone-1", "namespace": TEAM_NS, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "lone", "uid": pod["metadata"]["uid"], "controller": True}]},
        "spec": {"queueName": TEAM_NS, "active": True, "podSets": [{"name": "main", "count": 1, "template": template}]},
        "status": {"conditions": [], "admissionChecks": checks}})

    admission_checks_sync(cluster_id=east.pk)

    check = portal_check(fake_kube, workload)
    found = GpuRequest.objects.get(origin="cluster", name="lone")
    assert check["state"] != "Ready" and f"request #{found.pk} " in check["message"]
    assert f"request #{gpu_request.pk} " not in check["message"]


SERVING = {"workload_class": "inference", "tenancy": "dedicated", "latency": "latency_sensitive",
           "gpu_memory_gb": 80, "replicas": 2, "image": "vllm/vllm-openai:v0.9.0"}


def plain_pod_workload(fake, kube_client, *, name: str, template: dict, owner: dict | None) -> dict:
    """A Pod written over HTTP and the Workload Kueue's pod integration makes of it (one pod set of one pod)."""
    pod = kube_client.resource("v1", "Pod").create(namespace=TEAM_NS, body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": TEAM_NS, "labels": template["metadata"]["labels"],
            **({"ownerReferences": [{"apiVersion": "apps/v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
                                     "uid": owner["metadata"]["uid"], "controller": True}]} if owner else {})},
        "spec": template["spec"]}).to_dict()
    return fake.put({"apiVersion": KUEUE, "kind": "Workload", "metadata": {
        "name": f"pod-{name}", "namespace": TEAM_NS, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod["metadata"]["uid"], "controller": True}]},
        "spec": {"queueName": TEAM_NS, "active": True, "podSets": [{"name": "main", "count": 1, "template": template}]},
        "status": {"conditions": [], "admissionChecks": [{"name": "gpu-portal-approval", "state": "Pending",
                                                          "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"}]}})


def test_each_pod_of_the_portals_queued_deployment_is_admitted_and_a_copied_pod_is_not(
    east, fake_kube, kube_client, engineer, team_a, platform_user, eager_celery, django_capture_on_commit_callbacks,
):
    # Kueue's deployment integration admits every pod of a queued Deployment as a plain-pod Workload (kueue v0.19.2
    # pkg/controller/jobs/deployment); each is bound through its Pod's owner to the Deployment the portal applied.
    gpu_request = request_submit(user=engineer, team=team_a, name="serve", raw_answers=SERVING)
    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=gpu_request.pk)
    (deployment,) = fake_kube.find("apps/v1", "Deployment", TEAM_NS)
    if kueue.QUEUE_LABEL not in deployment["metadata"]["labels"]:
        pytest.skip("the renderer does not queue Deployments on Kueue clusters yet (issue 23 item 7)")
    template = copy.deepcopy(deployment["spec"]["template"])

    pods = [plain_pod_workload(fake_kube, kube_client, name=f"serve-{i}", template=template, owner=deployment)
            for i in range(2)]
    copied = plain_pod_workload(fake_kube, kube_client, name="serve-copy", template=template, owner=None)
    admission_checks_sync(cluster_id=east.pk)

    for workload in pods:
        assert portal_check(fake_kube, workload)["message"] == f"Approved: request #{gpu_request.pk} in the GPU portal."
    check = portal_check(fake_kube, copied)
    found = GpuRequest.objects.get(origin="cluster", name="serve-copy")
    assert check["state"] != "Ready" and f"request #{found.pk} " in check["message"]
