"""Least privilege, checked against what the code really does: every workflow that talks to Kubernetes runs
against one fake API server (provisioning with every gang backend and both scheduling models, teardown,
inventory discovery, status reconciliation, usage collection, a MIG plan), the server records each call, and
the recorded calls must be exactly covered by the declared RBAC rules (`deploy/rbac.py`): nothing denied, no
permission unused."""
from __future__ import annotations

from io import StringIO
from urllib.parse import urlencode

import pytest
from django.core.management import call_command

from chargeback.services import usage_collect
from deploy.rbac import Call, assert_least_privilege
from intake.models import GpuRequest
from workflows.services import request_approve, request_cancel, request_submit
from provisioning.admission import admission_checks_sync
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.inventory_sync import inventory_sync
from provisioning.mig_plans import mig_plan_advance, mig_plan_approve, mig_plan_propose
from provisioning.models import Cluster
from provisioning.queue_waits import queue_wait_refresh
from provisioning.reconcile import cluster_status_reconcile
from tests.conftest import VALID_ANSWERS
from kubesim import kueue
from kubesim.resources import ServedResource
from kubesim import nodes as k
from tests.provisioning.live_fixtures import seed_fleet

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 40,
            "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
            "image": "jupyter/base-notebook:latest"}


ADMISSION_POLICY_RESOURCES = (
    ServedResource("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False),
    ServedResource("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings",
                   "ValidatingAdmissionPolicyBinding", False),
)


@pytest.fixture
def fake(start_fake_kube):
    return start_fake_kube(git_version="v1.36.1")  # every GPU-stack CRD installed


def recorded(server) -> list[Call]:
    return [Call(r.method, r.path + (f"?{urlencode(r.params)}" if r.params else ""), r.content_type or None)
            for r in server.requests]


def provision(user, approver, team, name, answers, django_capture_on_commit_callbacks) -> GpuRequest:
    gpu_request = request_submit(user=user, team=team, name=name, raw_answers=answers)
    with django_capture_on_commit_callbacks(execute=True):
        if gpu_request.status == "pending_approval":
            request_approve(user=approver, request_id=gpu_request.pk)
        else:  # approved automatically; its dispatch ran at submit, outside this block
            from provisioning.sweeps import allocation_sweep
            allocation_sweep(older_than_seconds=-1)
    gpu_request.refresh_from_db()
    assert gpu_request.status == "provisioning", (name, gpu_request.status, gpu_request.events.last().comment)
    return gpu_request


def test_every_kubernetes_call_the_portal_makes_is_granted_and_every_grant_is_used(
    inventory, fake, eager_celery, engineer, team_a, platform_user, django_capture_on_commit_callbacks, settings
):
    settings.PORTAL_RECONCILE_WATCH_SECONDS = 1
    # The fake serves ValidatingAdmissionPolicies as a real 1.36 API server does, and discovery saw it: the clusters
    # without Kueue get each team namespace's policy and binding (docs/admission-check.md).
    fake.install(*ADMISSION_POLICY_RESOURCES)
    for name, version, model in (("gpu-east", "1.36", "device_plugin"), ("gpu-west", "1.36", "dra")):
        call_command("register_cluster", name, "--server", fake.url, "--token", "t", "--ca-cert-file", fake.ca_file,
                     "--kubernetes-version", version, "--scheduling-model", model, stdout=StringIO())
    Cluster.objects.update(serves_admission_policies=True)
    cluster_declare(name="gpu-west", pools=[{"name": "b200-shared", "gpu_model": "B200-180GB", "node_count": 1,
                                             "gpus_per_node": 8, "sharing_mode": "time_slicing",
                                             "time_slicing_replicas": 4, "driver_version": "580.65.06"}])
    east = Cluster.objects.get(name="gpu-east")
    for strategy in ("whole_gpu", "mig", "time_slicing"):
        team_quota_set(team=team_a, strategy=strategy, gpu_equivalents=64)
    run = lambda name, answers: provision(engineer, platform_user, team_a, name, answers,  # noqa: E731
                                          django_capture_on_commit_callbacks)

    # Provisioning: every gang backend on the device-plugin cluster, claims and the native gang on the DRA one.
    for backend in ("volcano", "kai", "kueue"):
        Cluster.objects.filter(pk=east.pk).update(gang_scheduler=backend)
        run(f"train-{backend}", TRAINING)
    Cluster.objects.filter(pk=east.pk).update(gang_scheduler="volcano", jobset_installed=True)
    run("train-jobset", TRAINING)
    Cluster.objects.filter(pk=east.pk).update(jobset_installed=False)
    serving = run("serve", VALID_ANSWERS)
    run("notebook", NOTEBOOK)
    run("big-train", {**TRAINING, "gpu_memory_gb": 150})  # only the B200s (DRA, native gang) hold it
    Cluster.objects.filter(name="gpu-east").update(enabled=False)  # the shared notebook goes to the DRA pool
    run("dra-notebook", {**NOTEBOOK, "gpu_memory_gb": 60})
    Cluster.objects.filter(name="gpu-east").update(enabled=True)
    with django_capture_on_commit_callbacks(execute=True):
        request_cancel(user=engineer, request_id=serving.pk)

    # The Kueue admission check: installed on the ClusterQueue the platform made (read first: the portal never
    # creates one), a kubectl Job's Workload decided (listed, then watched).
    Cluster.objects.filter(pk=east.pk).update(gang_scheduler="kueue")
    fake.put({"apiVersion": kueue.KUEUE, "kind": "ClusterQueue", "metadata": {"name": "gpu-portal"},
              "spec": {"namespaceSelector": {}, "resourceGroups": []}})
    assert admission_checks_sync(cluster_id=east.pk).status == "done"
    kueue.submit_job(fake, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "adhoc", "namespace": "gpu-team-a", "labels": {kueue.QUEUE_LABEL: "gpu-team-a"}}, "spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36",
                                                                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})
    # ... and a plain-pod Workload carrying the portal's labels: its Pod is listed by them, for its owner.
    labels = {"app": "web", "app.kubernetes.io/managed-by": "gpu-portal", "gpu-portal.io/request-id": str(serving.pk)}
    pod_spec = {"containers": [{"name": "c", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    pod = fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-5d8f-x", "namespace": "gpu-team-a", "labels": labels, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "rs-1", "controller": True}]},
        "spec": pod_spec})
    fake.put({"apiVersion": kueue.KUEUE, "kind": "Workload", "metadata": {
        "name": "pod-web-5d8f-x", "namespace": "gpu-team-a", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "web-5d8f-x", "uid": pod["metadata"]["uid"], "controller": True}]},
        "spec": {"queueName": "gpu-team-a", "podSets": [{"name": "main", "count": 1, "template": {
            "metadata": {"labels": labels}, "spec": pod_spec}}]},
        "status": {"admissionChecks": [{"name": "gpu-portal-approval", "state": "Pending", "message": "",
                                        "lastTransitionTime": "2026-12-02T00:00:00Z"}]}})
    run_ = admission_checks_sync(cluster_id=east.pk, watch_seconds=1)
    assert run_.status == "done" and run_.patched == 2, run_.summary()
    queue_wait_refresh(cluster=Cluster.objects.get(pk=east.pk))  # why the queued gangs wait: the whole queue
    Cluster.objects.filter(pk=east.pk).update(gang_scheduler="volcano")

    # Live operations and metering.
    seed_fleet(fake)
    for cluster in Cluster.objects.all():
        assert inventory_sync(cluster=cluster).status == "synced"
        cluster_status_reconcile(cluster_id=cluster.pk, watch_seconds=1)
        cluster_status_reconcile(cluster_id=cluster.pk, watch_seconds=1)  # resumes with a watch
    # A failed DRA pod: metering reads its claims, the devices' taint rules and its node for a hardware credit.
    fake.patch_status("v1", "Pod", "dra-0", "gpu-team-a", {"phase": "Failed"})
    # A serving pod as a Deployment's ReplicaSet makes it: metering lists ReplicaSets to follow its owner chain.
    replica_set = fake.put({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "serve-7c5d6b258f", "namespace": "gpu-team-a",
        "labels": {"app.kubernetes.io/managed-by": "gpu-portal"}}, "spec": {"selector": {}, "template": {}}})
    fake.patch("v1", "Pod", "serve-0", "gpu-team-a", {"metadata": {"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "serve-7c5d6b258f",
         "uid": replica_set["metadata"]["uid"], "controller": True}]}})
    usage_collect()
    for name in ("gpu-h200-1", "gpu-h200-2"):
        fake.put(k.h200_mig_node(name, layout="all-1g.18gb"))
    request_submit(user=engineer, team=team_a, name="llm", raw_answers={**VALID_ANSWERS, "gpu_memory_gb": 60})
    assert inventory_sync(cluster=east).status == "synced"
    plan = mig_plan_propose(user=platform_user, cluster=east).plan
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    mig_plan_advance(plan_id=plan.pk)

    # Gang objects applied before they were owned by their Job (an older portal) are not garbage collected with it:
    # teardown still deletes them by label.
    for api_version, kind in (("scheduling.volcano.sh/v1beta1", "PodGroup"), ("scheduling.run.ai/v2alpha2", "PodGroup"),
                              ("scheduling.k8s.io/v1alpha2", "Workload"), ("scheduling.k8s.io/v1alpha2", "PodGroup")):
        for obj in fake.find(api_version, kind, None, "app.kubernetes.io/managed-by=gpu-portal"):
            if obj["kind"] == kind:
                fake.patch(api_version, kind, obj["metadata"]["name"], obj["metadata"]["namespace"],
                           {"metadata": {"ownerReferences": None}})

    # Teardown of every kind that was applied.
    with django_capture_on_commit_callbacks(execute=True):
        for gpu_request in GpuRequest.objects.filter(status__in=["provisioning", "running", "stalled"]):
            request_cancel(user=engineer, request_id=gpu_request.pk)

    assert_least_privilege(recorded(fake))
