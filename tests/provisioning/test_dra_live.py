"""DRA inventory over HTTP: given a Kubernetes 1.36 cluster under Kueue whose GPUs only the NVIDIA DRA driver serves
(ResourceSlices and DeviceClasses shaped as dra-driver-nvidia-gpu v0.4.1 publishes them; B200 nodes without GPU
Feature Discovery, H200 MIG nodes with it), when the inventory is synced over the fake API server and requests are
rendered, then the devices, drivers and DeviceClasses are read from the driver's objects, and a driver floor is a CEL
selector on `driverVersion`, with GFD's node label added only on the pool whose nodes carry it."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from workflows.services import request_submit
from provisioning.inventory import cluster_declare
from provisioning.inventory_sync import inventory_sync
from provisioning.manifests.validation import validate_objects
from provisioning.models import Cluster, Node, NodePool
from tests.conftest import VALID_ANSWERS
from kubesim import nodes as k
from kubesim.resources import CUSTOM_RESOURCES

pytestmark = pytest.mark.django_db

KUEUE = tuple(r for r in CUSTOM_RESOURCES if r.api_version.startswith("kueue.x-k8s.io/"))
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 150,
            "gpus_per_replica": 4, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
DRIVER_LABEL = "nvidia.com/cuda.driver-version.major"


@pytest.fixture
def lab_fake(start_fake_kube):
    return start_fake_kube(git_version="v1.36.1", custom_resources=KUEUE)


@pytest.fixture
def lab(lab_fake):
    cluster_declare(
        name="gpu-lab", kubernetes_version="1.36", scheduling_model="dra", gang_scheduler="kueue", gang_queue="lab",
        applier="gitops",
        pools=[
            {"name": "b200-train", "gpu_model": "B200-180GB", "node_count": 2, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "node_selector": {"gpu-portal.io/pool": "b200-train"}},
            {"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "mig",
             "mig_layout": "all-balanced", "node_selector": {"gpu-portal.io/pool": "h200-mig"}},
        ],
    )  # fmt: skip
    call_command("register_cluster", "gpu-lab", "--server", lab_fake.url, "--token", "test-token",
                 "--ca-cert-file", lab_fake.ca_file, "--kubernetes-version", "1.36", "--gang-scheduler", "kueue", stdout=StringIO())
    for name in ("dra-b200-1", "dra-b200-2"):
        lab_fake.put(k.dra_only_node(name, pool="b200-train"))
        lab_fake.put(k.resource_slice(name, driver="580.65.06"))
    # GFD runs on the H200s (it labels the MIG layout), the DRA driver hands out their MIG devices.
    lab_fake.put(k.gpu_node("dra-h200-1", model="H200-141GB", driver="570.124.06", pool="h200-mig", gpu_resources={},
                            taints=[], extra_labels={"nvidia.com/mig.config": "all-balanced",
                                                     "nvidia.com/gpu.deploy.device-plugin": "false"}))
    lab_fake.put(k.resource_slice("dra-h200-1", model="H200-141GB", driver="570.124.06",
                                  mig={"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}))
    for device_class in k.nvidia_device_classes():
        lab_fake.put(device_class)
    outcome = inventory_sync(cluster=Cluster.objects.get(name="gpu-lab"))
    assert outcome.status == "synced", outcome.message
    return Cluster.objects.get(name="gpu-lab")


def test_devices_drivers_and_device_classes_come_from_the_dra_driver(api, platform_user, lab):
    assert lab.dra_in_use is True
    (listed,) = api(platform_user).get("/api/v1/clusters/").json()["results"]
    assert listed["dra_device_classes"][0] == {
        "name": "gpu.nvidia.com", "extended_resource_name": "nvidia.com/gpu",
        "selectors": ["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"]}
    assert [(c["name"], c["extended_resource_name"]) for c in lab.dra_device_classes] == [
        ("gpu.nvidia.com", "nvidia.com/gpu"), ("mig.nvidia.com", "")]
    b200 = Node.objects.get(name="dra-b200-1")
    assert (b200.gpu_model.key, b200.scheduling_model, b200.gpu_count) == ("B200-180GB", "dra", 8)
    assert b200.gpu_resources == {"gpu.nvidia.com/gpu": 8}
    assert not any(key.startswith("nvidia.com/") for key in b200.labels)
    pool = NodePool.objects.get(cluster=lab, name="b200-train")
    # The driver version comes from the devices' driverVersion (semver-normalised 580.65.6), no GFD label needed.
    assert (pool.discovered["min_driver_major"], pool.discovered["driver_major_label"]) == (580, False)
    h200 = Node.objects.get(name="dra-h200-1")
    assert h200.mig_devices == {"1g.18gb": 16, "2g.35gb": 8, "3g.71gb": 8}
    assert NodePool.objects.get(cluster=lab, name="h200-mig").discovered["driver_major_label"] is True


def test_a_driver_floor_on_dra_only_nodes_is_a_cel_selector_not_a_node_label(api, engineer, team_a, lab):
    gpu_request = request_submit(user=engineer, team=team_a, name="pretrain",
                                 raw_answers={**TRAINING, "min_driver_major": 575})
    # The floor needs the claim's CEL selector: no extended-resource path although gpu.nvidia.com declares one.
    assert (gpu_request.decision.node_pool, gpu_request.decision.dra_extended_resource) == ("b200-train", None)

    objects = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/manifests/").json()

    template = next(o for o in objects if o["kind"] == "ResourceClaimTemplate")
    selectors = [s["cel"]["expression"] for s in template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]]
    assert ("'driverVersion' in device.attributes['gpu.nvidia.com'] && "
            "device.attributes['gpu.nvidia.com'].driverVersion.major() >= 575") in selectors
    job = next(o for o in objects if o["kind"] == "Job")
    # The B200 nodes have no nvidia.com/cuda.driver-version.major: a required label there would match no node.
    assert DRIVER_LABEL not in str(job["spec"]["template"]["spec"].get("affinity", {}))
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-team-a"
    assert validate_objects(objects, "1.36") == len(objects)


def test_the_gfd_label_joins_the_cel_floor_where_the_pool_nodes_carry_it(api, engineer, team_a, lab):
    gpu_request = request_submit(user=engineer, team=team_a, name="serve",
                                 raw_answers={**VALID_ANSWERS, "min_driver_major": 560})
    assert (gpu_request.decision.node_pool, gpu_request.decision.strategy) == ("h200-mig", "mig")

    objects = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/manifests/").json()

    deployment = next(o for o in objects if o["kind"] == "Deployment")
    terms = deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": DRIVER_LABEL, "operator": "Gt", "values": ["559"]} in terms[0]["matchExpressions"]


def test_a_device_class_with_an_extended_resource_serves_pods_asking_for_it(api, engineer, team_a, lab, lab_fake):
    lab_fake.put(k.device_class("mig-1g-18gb.gpu.nvidia.com", device_type="mig", profile="1g.18gb",
                                extended_resource_name="nvidia.com/mig-1g.18gb"))
    assert inventory_sync(cluster=lab).status == "synced"
    training = request_submit(user=engineer, team=team_a, name="pretrain", raw_answers=TRAINING)
    serving = request_submit(user=engineer, team=team_a, name="serve", raw_answers=VALID_ANSWERS)

    assert training.decision.dra_extended_resource == "nvidia.com/gpu"
    assert serving.decision.dra_extended_resource == "nvidia.com/mig-1g.18gb"
    reason = next(r.text for r in training.decision.reasons if r.field == "scheduling_model")
    assert reason.startswith("GPUs are requested through nvidia.com/gpu limits served from DRA devices (a "
                             "DeviceClass declares it: DRAExtendedResource)")
    for gpu_request, resource, count in ((training, "nvidia.com/gpu", "4"), (serving, "nvidia.com/mig-1g.18gb", "1")):
        objects = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/manifests/").json()
        assert not [o for o in objects if o["kind"].startswith("ResourceClaim")]
        pod = next(o for o in objects if o["kind"] in ("Job", "Deployment"))["spec"]["template"]["spec"]
        assert "resourceClaims" not in pod
        assert pod["containers"][0]["resources"]["limits"][resource] == count
        assert validate_objects(objects, "1.36") == len(objects)


def test_a_pod_served_through_an_extended_resource_holds_its_claims_devices_once(lab, lab_fake):
    lab_fake.put(k.namespace("gpu-team-a"))
    pod = k.gpu_pod("pretrain-0", node="dra-b200-1", resources={"nvidia.com/gpu": 4}, request_id=7)
    claim_name = "pretrain-0-extended-resources-x7k2p"
    # What the scheduler records for a pod whose nvidia.com/gpu it served from DRA (KEP-5004, core/v1 PodStatus).
    pod["status"]["extendedResourceClaimStatus"] = {
        "resourceClaimName": claim_name,
        "requestMappings": [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                             "requestName": "container-0-request-0"}]}
    lab_fake.put(pod)
    claim = k.allocated_claim(claim_name, namespace="gpu-team-a", node="dra-b200-1",
                              devices=["gpu-0", "gpu-1", "gpu-2", "gpu-3"], pod=pod)
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    lab_fake.put(claim)

    assert inventory_sync(cluster=lab).status == "synced"

    node = Node.objects.get(name="dra-b200-1")
    assert node.gpu_used == {"gpu.nvidia.com/gpu": 4}
    assert [p["resources"] for p in node.gpu_pods] == [{"gpu.nvidia.com/gpu": 4}]
