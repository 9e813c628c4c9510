"""Who a pod is billed to, through the simulated cluster's HTTPS API (issue 23, items 2 and 4): given a cluster the
portal provisions (the Kubernetes applier records the UID of every object it applies) and kubesim runs, when
someone with write access to a team namespace creates pods that copy a request's labels (kubectl-style, over the
API), then usage collection never bills them as that request, whatever its state (approved, completed, another
team's, pending) and whatever the copy (same size, larger, another namespace, the owner reference copied too): they
are billed to the team whose namespace they run in, flagged `found_in_cluster` for the platform team. The portal's
own pods stay billed to their request. And one pod the collector cannot store never stops the pass."""
from __future__ import annotations

import copy
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command

from chargeback.models import UsageCollection
from chargeback.services import usage_collect
from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from kubesim import nodes as k
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.kube.client import ClusterConnection, KubeClient
from provisioning.models import AppliedObject

pytestmark = pytest.mark.django_db

SERVING = {"workload_class": "inference", "tenancy": "dedicated", "latency": "latency_sensitive",
           "gpu_memory_gb": 60, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
REQUEST_LABEL, TEAM_LABEL = "gpu-portal.io/request-id", "gpu-portal.io/team"
INTERVALS = "/api/v1/chargeback/intervals/"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 3, 8, tzinfo=UTC).timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def lab(start_fake_kube, eager_celery, team_a, team_b, engineer, engineer_b, platform_user,
        django_capture_on_commit_callbacks):
    """gpu-lab (device plugin, 2 x 8 H100) with team-a's serving request running (the approved one), one that
    completed, team-b's serving request running, and team-a's request still pending."""
    fake = start_fake_kube(git_version="v1.35.2")
    cluster_declare(name="gpu-lab", kubernetes_version="1.35", scheduling_model="device_plugin",
                    gang_scheduler="none", applier="kubernetes",
                    pools=[{"name": "h100-train", "gpu_model": "H100-80GB", "node_count": 2, "gpus_per_node": 8,
                            "sharing_mode": "exclusive", "node_selector": {"gpu-portal.io/pool": "h100-train"}}])
    call_command("register_cluster", "gpu-lab", "--server", fake.url, "--token", "t", "--ca-cert-file", fake.ca_file,
                 "--kubernetes-version", "1.35", stdout=StringIO())
    for namespace in ("gpu-team-a", "gpu-team-b"):
        fake.put(k.namespace(namespace))
    for i in (0, 1):
        fake.put(k.h100_node(f"h100-{i}", pool="h100-train", taints=[]))
    for team in (team_a, team_b):
        team_quota_set(team=team, strategy="whole_gpu", gpu_equivalents=16)

    def provision(user, team, name):
        gpu_request = request_submit(user=user, team=team, name=name, raw_answers=SERVING)
        if gpu_request.status == "pending_approval":
            with django_capture_on_commit_callbacks(execute=True):
                request_approve(user=platform_user, request_id=gpu_request.pk)
        gpu_request.refresh_from_db()
        assert gpu_request.status == "provisioning", gpu_request.events.last().comment
        assert AppliedObject.objects.filter(request=gpu_request).exclude(uid="").exists()
        return gpu_request

    approved = provision(engineer, team_a, "serve")
    completed = provision(engineer, team_a, "finished")
    other = provision(engineer_b, team_b, "b-serve")
    pending = request_submit(user=engineer, team=team_a, name="waiting", raw_answers=SERVING)
    if pending.status != "pending_approval":
        GpuRequest.objects.filter(pk=pending.pk).update(status="pending_approval")
    clock = Clock()
    simulation = Simulation(fake, Scenario(start_seconds=5, run_seconds=36_000), clock)
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    GpuRequest.objects.filter(pk=completed.pk).update(status="completed")  # its work is done; its pods stay listed
    connection = ClusterConnection(server=fake.url, token="t", ca_cert=fake.ca_pem, request_timeout=10.0)
    return {"fake": fake, "simulation": simulation, "clock": clock, "connection": connection,
            "approved": approved, "completed": completed, "other": other, "pending": pending}


def portal_pods(lab, gpu_request) -> list[dict]:
    namespace = f"gpu-{gpu_request.team.slug}"
    return [p for p in lab["fake"].find("v1", "Pod", namespace, "app.kubernetes.io/managed-by=gpu-portal")
            if p["metadata"]["labels"].get(REQUEST_LABEL) == str(gpu_request.pk)]


def copy_of(lab, target, *, namespace: str, gpus: int, owner_copied: bool = False) -> dict:
    """A Pod written by hand with the labels, annotations and spec of one of the target's pods (for the pending
    request, of the approved request's pod with the target's id and team); `gpus` per container."""
    model = (portal_pods(lab, target) or portal_pods(lab, lab["approved"]))[0]
    metadata = copy.deepcopy(model["metadata"])
    labels = {**metadata["labels"], REQUEST_LABEL: str(target.pk), TEAM_LABEL: target.team.slug}
    spec = copy.deepcopy(model["spec"])
    spec.pop("nodeName", None)
    for container in spec["containers"]:
        for kind in ("limits", "requests"):
            if "nvidia.com/gpu" in container.get("resources", {}).get(kind, {}):
                container["resources"][kind]["nvidia.com/gpu"] = str(gpus)
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": spec,
           "metadata": {"name": f"copy-{target.name}-{namespace[-1]}-{gpus}{'-o' if owner_copied else ''}",
                        "namespace": namespace, "labels": labels, "annotations": metadata.get("annotations") or {}}}
    if owner_copied:
        pod["metadata"]["ownerReferences"] = metadata["ownerReferences"]
    return pod


def create_and_collect(lab, pod: dict, *, by_hand: bool | None = None) -> dict:
    """Create the pod as kubectl would (POST over HTTPS), let it start, collect usage."""
    created = create(lab, pod, by_hand=by_hand)
    [collection] = usage_collect(cluster_name="gpu-lab")
    assert collection.status == "ok", collection.message
    return created


def create(lab, pod: dict, *, by_hand: bool | None = None) -> dict:
    """Create the pod as kubectl would (POST over HTTPS) and let it start. A pod naming the portal's Deployment as
    its controller is started by hand (and the simulation no longer ticks): the simulated Deployment controller
    would delete it as a surplus replica, as a ReplicaSet controller does."""
    by_hand = bool(pod["metadata"].get("ownerReferences")) if by_hand is None else by_hand
    with KubeClient(lab["connection"]) as kube:
        created = kube.resource("v1", "Pod").create(body=pod, namespace=pod["metadata"]["namespace"]).to_dict()
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
    if by_hand:
        started = datetime.fromtimestamp(lab["clock"].now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lab["fake"].patch_status("v1", "Pod", name, namespace, {"phase": "Running", "containerStatuses": [
            {"name": c["name"], "ready": True, "restartCount": 0, "image": c["image"], "imageID": "",
             "state": {"running": {"startedAt": started}}} for c in pod["spec"]["containers"]]})
    else:
        for _ in range(2):
            lab["clock"].advance(5)
            lab["simulation"].tick()
    running = lab["fake"].get("v1", "Pod", name, namespace)
    assert running["status"]["phase"] == "Running", running["status"]
    return created


def interval_of(api, platform_user, uid: str) -> dict:
    [interval] = api(platform_user).get(INTERVALS, {"pod_uid": uid}).json()["results"]
    return interval


MATRIX = [
    ("approved", "gpu-team-a", 1, False), ("approved", "gpu-team-a", 2, False), ("approved", "gpu-team-b", 1, False),
    ("approved", "gpu-team-a", 2, True), ("approved", "gpu-team-b", 1, True),
    ("completed", "gpu-team-a", 1, False), ("completed", "gpu-team-a", 2, False),
    ("completed", "gpu-team-b", 1, False),
    ("other", "gpu-team-a", 1, False), ("other", "gpu-team-a", 2, False),
    ("pending", "gpu-team-a", 1, False), ("pending", "gpu-team-a", 2, False), ("pending", "gpu-team-b", 1, False),
]


@pytest.mark.parametrize("target, namespace, gpus, owner_copied", MATRIX, ids=[
    f"{t}-request-{'same-size' if g == 1 else 'larger'}-in-{n}{'-owner-reference-copied' if o else ''}"
    for t, n, g, o in MATRIX])
def test_a_pod_copying_a_requests_labels_is_never_billed_as_that_request(lab, api, platform_user, engineer,
                                                                        engineer_b, target, namespace, gpus,
                                                                        owner_copied):
    gpu_request = lab[target]
    created = create_and_collect(lab, copy_of(lab, gpu_request, namespace=namespace, gpus=gpus,
                                              owner_copied=owner_copied))

    interval = interval_of(api, platform_user, created["metadata"]["uid"])
    namespace_team = {"gpu-team-a": "team-a", "gpu-team-b": "team-b"}[namespace]
    assert interval["request"] is None, f"billed as request #{interval['request']}"
    assert interval["team"] == namespace_team and "found_in_cluster" in interval["flags"]
    assert interval["devices"] == gpus
    # The platform team finds it; the request's team sees no such pod on its request, another team none at all.
    flagged = api(platform_user).get(INTERVALS, {"flag": "found_in_cluster"}).json()["results"]
    assert created["metadata"]["uid"] in {i["pod_uid"] for i in flagged}
    on_request = api(platform_user).get(INTERVALS, {"request": gpu_request.pk}).json()["results"]
    assert created["metadata"]["uid"] not in {i["pod_uid"] for i in on_request}
    outsider = engineer_b if namespace_team == "team-a" else engineer
    seen = api(outsider).get(INTERVALS, {"pod_uid": created["metadata"]["uid"]}).json()["results"]
    assert seen == []


def test_the_portals_own_pods_stay_billed_to_their_request(lab, api, platform_user):
    [collection] = usage_collect(cluster_name="gpu-lab")
    assert collection.status == "ok" and collection.found_in_cluster == 0, collection.message
    for name, team in (("approved", "team-a"), ("completed", "team-a"), ("other", "team-b")):
        [pod] = portal_pods(lab, lab[name])
        interval = interval_of(api, platform_user, pod["metadata"]["uid"])
        assert (interval["request"], interval["team"], interval["flags"]) == (lab[name].pk, team, [])


def test_a_pod_in_another_teams_namespace_labelled_with_a_pending_request_is_billed_to_that_namespace(
        lab, api, platform_user, finance_user, client):
    """The issue's case: a pod in team-b's namespace labelled with team-a's pending request; the platform team
    finds it in the admin and on the collection pass."""
    created = create_and_collect(lab, copy_of(lab, lab["pending"], namespace="gpu-team-b", gpus=1))
    interval = interval_of(api, platform_user, created["metadata"]["uid"])
    assert (interval["request"], interval["team"], interval["cost_center"]) == (None, "team-b", "CC-B")
    [collection] = api(finance_user).get("/api/v1/chargeback/collections/").json()["results"][:1]
    assert collection["found_in_cluster"] == 1 and collection["pods_unreadable"] == 0
    client.force_login(platform_user)
    page = client.get("/admin/chargeback/usageinterval/", {"flag": "found_in_cluster"}).content.decode()
    assert created["metadata"]["name"] in page
    assert not [p for p in portal_pods(lab, lab["approved"]) if p["metadata"]["name"] in page]


def test_one_pod_whose_annotations_do_not_fit_never_stops_metering(lab, api, platform_user, finance_user, caplog):
    """An annotation over its column (41 characters of GPU model) used to raise DataError varchar(40) on every
    pass; a malformed start time failed the whole pass. Now the one is read as absent and reported, the other pod
    skipped and reported, and every other pod is metered."""
    pod = copy_of(lab, lab["approved"], namespace="gpu-team-a", gpus=1, owner_copied=True)
    pod["metadata"]["name"] = "long-model"
    pod["metadata"]["annotations"]["gpu-portal.io/gpu-model"] = "H100-80GB-" + "x" * 31
    pod["metadata"]["annotations"]["gpu-portal.io/mig-profile"] = "m" * 300
    created = create_and_collect(lab, pod)
    interval = interval_of(api, platform_user, created["metadata"]["uid"])
    assert (interval["request"], interval["gpu_model"]) == (lab["approved"].pk, "H100-80GB")
    assert "from_request" in interval["flags"]
    [collection] = api(finance_user).get("/api/v1/chargeback/collections/").json()["results"][:1]
    assert "gpu-team-a/long-model: gpu_model over 40 characters, read as absent" in collection["message"]
    assert "mig_profile over 40 characters, read as absent" in collection["message"]

    lab["fake"].patch_status("v1", "Pod", "long-model", "gpu-team-a", {"containerStatuses": [
        {"name": "main", "ready": True, "restartCount": 0, "image": "x", "imageID": "",
         "state": {"running": {"startedAt": "yesterday, around noon"}}}]})
    late = create(lab, copy_of(lab, lab["other"], namespace="gpu-team-b", gpus=1), by_hand=True)
    [collection] = usage_collect(cluster_name="gpu-lab")
    assert collection.status == "ok" and collection.pods_unreadable == 1
    assert "gpu-team-a/long-model: skipped, unreadable status (ValueError)" in collection.message
    assert "gpu-team-a/long-model: skipped, unreadable status" in caplog.text  # and in the worker's log
    assert interval_of(api, platform_user, late["metadata"]["uid"])["team"] == "team-b"  # the others are metered
    health = api(finance_user).get("/api/v1/chargeback/collections/").json()["results"][0]
    assert (health["status"], health["pods_unreadable"]) == ("ok", 1)


TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def test_a_jobsets_pods_are_billed_through_the_jobs_it_made_to_the_request(lab, api, platform_user, engineer,
                                                                          django_capture_on_commit_callbacks):
    """Pod -> Job (made by the JobSet controller, never applied by the portal) -> JobSet (applied): the collector
    reads the Jobs between, and the chain reaches the UID the portal recorded."""
    from provisioning.models import Cluster

    Cluster.objects.filter(name="gpu-lab").update(gang_scheduler="volcano", jobset_installed=True)
    gpu_request = request_submit(user=engineer, team=lab["approved"].team, name="train", raw_answers=TRAINING)
    if gpu_request.status == "pending_approval":
        with django_capture_on_commit_callbacks(execute=True):
            request_approve(user=platform_user, request_id=gpu_request.pk)
    applied = AppliedObject.objects.get(request=gpu_request, kind="JobSet")
    for _ in range(3):
        lab["clock"].advance(5)
        lab["simulation"].tick()
    ranks = portal_pods(lab, gpu_request)
    assert len(ranks) == 2 and {p["status"]["phase"] for p in ranks} == {"Running"}
    [job_ref] = {(r["kind"], r["uid"]) for p in ranks for r in p["metadata"]["ownerReferences"]}
    assert job_ref[0] == "Job" and job_ref[1] != applied.uid  # the JobSet's child Job, not the applied object
    [collection] = usage_collect(cluster_name="gpu-lab")
    assert collection.status == "ok" and collection.found_in_cluster == 0, collection.message
    for rank in ranks:
        interval = interval_of(api, platform_user, rank["metadata"]["uid"])
        assert (interval["request"], interval["flags"]) == (gpu_request.pk, [])


def test_a_copy_that_does_not_say_its_gpu_model_is_priced_by_its_nodes_and_billed_to_the_namespace(
        lab, api, platform_user):
    pod = copy_of(lab, lab["approved"], namespace="gpu-team-a", gpus=2)
    pod["metadata"]["annotations"] = {}
    created = create_and_collect(lab, pod)
    interval = interval_of(api, platform_user, created["metadata"]["uid"])
    assert (interval["request"], interval["team"], interval["gpu_model"], interval["devices"]) == (
        None, "team-a", "H100-80GB", 2)
    assert interval["gpu_equivalents"] == "2" and "found_in_cluster" in interval["flags"]
