"""The simulated cluster's DRA (kubesim.dra): a pod's template claims become ResourceClaims allocated on the node it
is bound to, as resource.k8s.io/v1 writes them (validated against the 1.36 schema), devices are never handed out
twice or while tainted, and a GPU fault taints the device and fails the pods holding it."""
from __future__ import annotations

import kubernetes_validate
import pytest

from kubesim import dra
from kubesim import nodes as k
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario
from tests.kubesim.test_simulation import Clock

ATTR = "device.attributes['gpu.nvidia.com']"


@pytest.fixture
def fake_kube_version() -> str:
    return "v1.36.1"


@pytest.fixture
def sim(fake_kube):
    fake_kube.put(k.namespace("team-a"))
    fake_kube.put(k.gpu_node("h200-dra-0", model="H200-141GB", pool="h200-mig", gpu_resources={}, taints=[]))
    fake_kube.put(k.resource_slice("h200-dra-0", model="H200-141GB", gpus=1, mig={"1g.18gb": 2, "2g.35gb": 1}))
    for device_class in k.nvidia_device_classes():
        fake_kube.put(device_class)
    clock = Clock()
    return Simulation(fake_kube, Scenario(start_seconds=5, run_seconds=60, time_scale=0.1), clock), clock


def _template(fake, name: str, profile: str, *, count: int = 1, first_available: list[str] | None = None) -> None:
    selectors = lambda p: [{"cel": {"expression": f"{ATTR}.productName == 'NVIDIA H200' && {ATTR}.profile == '{p}'"}}]  # noqa: E731
    request = ({"name": "gpu", "firstAvailable": [{"name": p.replace(".", "-"), "deviceClassName": "mig.nvidia.com",
                                                   "selectors": selectors(p)} for p in first_available]}
               if first_available else
               {"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount",
                                           "count": count, "selectors": selectors(profile)}})
    fake.put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
              "metadata": {"name": name, "namespace": "team-a"},
              "spec": {"metadata": {"labels": {"app.kubernetes.io/managed-by": "gpu-portal"}},
                       "spec": {"devices": {"requests": [request]}}}})


def _pod(fake, name: str, template: str) -> dict:
    pod = k.gpu_pod(name, namespace="team-a", node=None, phase="Pending", request_id=7, claims=["gpu"])
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    pod["spec"]["nodeSelector"] = {"gpu-portal.io/pool": "h200-mig"}
    return fake.put(pod)


def _claim_of(fake, pod_name: str) -> dict:
    pod = fake.get("v1", "Pod", pod_name, "team-a")
    [status] = pod["status"]["resourceClaimStatuses"]
    return fake.get("resource.k8s.io/v1", "ResourceClaim", status["resourceClaimName"], "team-a")


def test_a_template_claim_is_created_allocated_and_reserved_for_the_pod(sim, fake_kube):
    simulation, _ = sim
    _template(fake_kube, "slice", "1g.18gb")
    pod = _pod(fake_kube, "serve-0", "slice")
    simulation.tick()
    claim = _claim_of(fake_kube, "serve-0")
    kubernetes_validate.validate(claim, "1.36.0", strict=True)
    assert claim["metadata"]["name"].startswith("serve-0-gpu-")
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    assert claim["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-portal"}
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["request"], result["driver"], result["pool"]) == ("gpu", "gpu.nvidia.com", "h200-dra-0")
    assert "-mig-1g18gb-" in result["device"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "serve-0", "uid": pod["metadata"]["uid"]}]
    assert fake_kube.get("v1", "Pod", "serve-0", "team-a")["spec"]["nodeName"] == "h200-dra-0"


def test_devices_are_not_given_twice_and_a_pod_without_a_device_is_unschedulable(sim, fake_kube):
    simulation, _ = sim
    _template(fake_kube, "slice", "1g.18gb")
    for i in range(3):
        _pod(fake_kube, f"serve-{i}", "slice")
    simulation.tick()
    devices = [_claim_of(fake_kube, f"serve-{i}")["status"]["allocation"]["devices"]["results"][0]["device"]
               for i in range(2)]
    assert len(set(devices)) == 2
    condition = fake_kube.get("v1", "Pod", "serve-2", "team-a")["status"]["conditions"][0]
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def test_first_available_takes_the_first_subrequest_that_fits_and_names_it(sim, fake_kube):
    simulation, _ = sim
    _template(fake_kube, "prefer-small", "", first_available=["3g.71gb", "2g.35gb"])  # no 3g on this GPU
    _pod(fake_kube, "serve-0", "prefer-small")
    simulation.tick()
    [result] = _claim_of(fake_kube, "serve-0")["status"]["allocation"]["devices"]["results"]
    assert result["request"] == "gpu/2g-35gb" and "-mig-2g35gb-" in result["device"]


def test_a_fault_taints_the_device_fails_its_pod_and_the_device_is_not_given_again(sim, fake_kube):
    simulation, clock = sim
    _template(fake_kube, "slice", "2g.35gb")
    _pod(fake_kube, "serve-0", "slice")
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    [result] = _claim_of(fake_kube, "serve-0")["status"]["allocation"]["devices"]["results"]
    failed = dra.fail_device(fake_kube, driver="gpu.nvidia.com", pool="h200-dra-0", device=result["device"],
                             at="2026-05-28T10:00:00Z")
    assert failed == ["serve-0"]
    pod = fake_kube.get("v1", "Pod", "serve-0", "team-a")
    assert pod["status"]["phase"] == "Failed"
    [status] = pod["status"]["containerStatuses"]
    assert status["state"]["terminated"]["exitCode"] == 1
    assert status["allocatedResourcesStatus"] == [{"name": "claim:gpu/gpu", "resources": [
        {"resourceID": f"gpu.nvidia.com/h200-dra-0/{result['device']}", "health": "Unhealthy"}]}]
    kubernetes_validate.validate(pod, "1.36.0", strict=True)
    [slice_] = fake_kube.find("resource.k8s.io/v1", "ResourceSlice")
    kubernetes_validate.validate(slice_, "1.36.0", strict=True)
    [device] = [d for d in slice_["spec"]["devices"] if d["name"] == result["device"]]
    assert device["taints"] == [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
                                 "timeAdded": "2026-05-28T10:00:00Z"}]
    _pod(fake_kube, "serve-1", "slice")  # the only 2g device is tainted now
    simulation.tick()
    assert fake_kube.get("v1", "Pod", "serve-1", "team-a")["status"]["conditions"][0]["reason"] == "Unschedulable"


def test_the_cel_subset_selects_like_the_portal_and_driver_write_it():
    device = {"attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.18gb"},
                             "productName": {"string": "NVIDIA H200"}, "driverVersion": {"version": "580.65.6"}}}
    assert dra.matches(f"device.driver == 'gpu.nvidia.com' && {ATTR}.type == 'mig'", device, "gpu.nvidia.com")
    assert dra.matches(f"'driverVersion' in {ATTR} && {ATTR}.driverVersion.major() >= 580", device, "gpu.nvidia.com")
    assert not dra.matches(f"{ATTR}.driverVersion.major() == 570", device, "gpu.nvidia.com")
    assert dra.matches(f"{ATTR}.productName.startsWith('NVIDIA H')", device, "gpu.nvidia.com")
    assert not dra.matches("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0", device,
                           "gpu.nvidia.com")  # outside the subset: selects nothing
