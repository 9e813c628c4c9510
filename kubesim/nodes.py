"""Realistic GPU nodes, DRA ResourceSlices, claims and pods for the fake API server.

Labels follow GPU Feature Discovery / GPU Operator (reference §2, §10), allocatable resources follow the device
plugin (§1) and ResourceSlices the NVIDIA DRA driver's `resource.k8s.io/v1` shape (§4.2, §4.5). Every Node has a
complete `status.nodeInfo`, as real API servers fill it. MIG allocatable counts come from the shipped catalogue's
layouts, so a node built with any layout advertises what mig-manager would create.
"""
from __future__ import annotations

import uuid
from typing import Any

from gpu.catalogue import load_catalogue, sanitise_product
from provisioning import contract

KUBELET = "v1.35.2"
H100_CLIQUE = "7b968a6d-0c2e-4b1a-9c51-2f0e8d1b7e11.1"
B200_CLIQUE = "c0ffee00-1111-2222-3333-444455556666.1"
POOL_LABEL = contract.DEFAULT_POOL_LABEL

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

_MODEL_LABELS = {
    "H100-80GB": {"family": "hopper", "compute": ("9", "0"), "machine": "DGX-H100"},
    "H200-141GB": {"family": "hopper", "compute": ("9", "0"), "machine": "HGX-H200"},
    "A100-80GB": {"family": "ampere", "compute": ("8", "0"), "machine": "DGX-A100"},
    "L40S-48GB": {"family": "ada-lovelace", "compute": ("8", "9"), "machine": "SYS-421GE-TNRT"},
    "B200-180GB": {"family": "blackwell", "compute": ("10", "0"), "machine": "DGX-B200"},
    "GB200-186GB": {"family": "blackwell", "compute": ("10", "0"), "machine": "GB200-NVL72"},
}


def node_info(kubelet: str = KUBELET) -> dict[str, str]:
    return {
        "architecture": "amd64",
        "bootID": str(uuid.uuid4()),
        "containerRuntimeVersion": "containerd://2.1.4",
        "kernelVersion": "6.8.0-60-generic",
        "kubeProxyVersion": "",
        "kubeletVersion": kubelet,
        "machineID": uuid.uuid4().hex,
        "operatingSystem": "linux",
        "osImage": "Ubuntu 24.04.2 LTS",
        "systemUUID": str(uuid.uuid4()),
    }


def driver_labels(version: str) -> dict[str, str]:
    major, minor, revision = (version.split(".") + ["", ""])[:3]
    labels = {
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": revision,
        "nvidia.com/cuda.driver-version.full": version,
        # The deprecated duplicates GFD still writes.
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": revision,
        "nvidia.com/cuda.runtime-version.major": "12" if int(major) < 580 else "13",
        "nvidia.com/cuda.runtime-version.minor": "8" if int(major) < 580 else "0",
        "nvidia.com/cuda.runtime-version.full": "12.8" if int(major) < 580 else "13.0",
    }
    return labels


def gpu_node(
    name: str,
    *,
    model: str,
    gpus: int = 8,
    driver: str = "570.124.06",
    extra_labels: dict[str, str] | None = None,
    gpu_resources: dict[str, int] | None = None,
    taints: list[dict] | None = None,
    unschedulable: bool = False,
    pool: str | None = None,
    cpu: str = "224",
    memory: str = "2063425Mi",
    sku: str | None = None,
) -> dict[str, Any]:
    """A node with GFD labels for `gpus` GPUs of a catalogue model. `gpu_resources` are the NVIDIA extended
    resources it advertises (default: `nvidia.com/gpu: gpus`); `sku` the NVML name of another card of that model
    (default: its first SKU), labelled as GFD sanitises it."""
    spec = load_catalogue().model(model)
    info = _MODEL_LABELS[model]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": info["machine"].lower(),
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.product": sanitise_product(sku) if sku else spec.product,
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.memory": str(spec.memory_mib),
        "nvidia.com/gpu.family": info["family"],
        "nvidia.com/gpu.compute.major": info["compute"][0],
        "nvidia.com/gpu.compute.minor": info["compute"][1],
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.machine": info["machine"],
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true" if spec.mig else "false",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/gfd.timestamp": "1764460800",
        **driver_labels(driver),
    }
    if spec.mig:
        labels |= {"nvidia.com/mig.config": "all-disabled", "nvidia.com/mig.config.state": "success"}
    if pool:
        labels[POOL_LABEL] = pool
    labels |= extra_labels or {}
    resources = {"nvidia.com/gpu": gpus} if gpu_resources is None else gpu_resources
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "1690202957124",
                   "hugepages-1Gi": "0", "hugepages-2Mi": "0", **{k: str(v) for k, v in resources.items()}}
    node_spec: dict[str, Any] = {"podCIDR": "10.244.3.0/24", "providerID": f"kind://docker/gpu/{name}"}
    if taints is None:
        taints = [GPU_TAINT]
    if taints:
        node_spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        node_spec["unschedulable"] = True
        node_spec.setdefault("taints", []).append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": node_spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status", "lastHeartbeatTime": "2026-11-30T00:00:00Z",
                            "lastTransitionTime": "2026-11-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.3.17"}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": node_info(),
        },
    }


def mig_resources(model: str, layout: str, gpus: int = 8) -> dict[str, int]:
    """What the device plugin advertises under the `mixed` strategy once `layout` is applied."""
    spec = load_catalogue().model(model)
    profiles = load_catalogue().layout_profiles(layout, model)
    return {spec.mig.profiles[p].resource_name: n * gpus for p, n in profiles.items()}


def mig_labels(model: str, layout: str, gpus: int = 8, state: str = "success") -> dict[str, str]:
    spec = load_catalogue().model(model)
    labels = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": layout,
              "nvidia.com/mig.config.state": state, "nvidia.com/gpu.replicas": "0"}
    for profile, count in load_catalogue().layout_profiles(layout, model).items():
        p = spec.mig.profiles[profile]
        prefix = f"nvidia.com/mig-{p.resource_suffix}"
        labels |= {f"{prefix}.count": str(count * gpus), f"{prefix}.memory": str(p.memory_gb * 1024 - 512),
                   f"{prefix}.slices.gi": str(p.compute_slices), f"{prefix}.slices.ci": str(p.compute_slices),
                   f"{prefix}.product": f"{spec.product}-MIG-{profile}", f"{prefix}.replicas": "1",
                   f"{prefix}.sharing-strategy": "none", f"{prefix}.multiprocessors": str(16 * p.compute_slices)}
    return labels


def h100_node(name: str, *, pool: str | None = "h100-train", driver: str = "570.124.06", clique: str = H100_CLIQUE,
              **kwargs: Any) -> dict[str, Any]:
    """8 x H100 80GB HBM3, whole GPUs, on an NVLink fabric (GFD clique label), tainted for GPU work."""
    labels = {"nvidia.com/gpu.clique": clique} if clique else {}
    labels |= kwargs.pop("extra_labels", {})
    return gpu_node(name, model="H100-80GB", driver=driver, pool=pool, extra_labels=labels, **kwargs)


def h200_mig_node(name: str, *, layout: str = "all-balanced", pool: str | None = "h200-mig", gpus: int = 8,
                  state: str = "success", driver: str = "570.124.06", **kwargs: Any) -> dict[str, Any]:
    """8 x H200 under MIG `mixed` with `layout` applied (all-balanced: 16 x 1g.18gb, 8 x 2g.35gb, 8 x 3g.71gb)."""
    labels = mig_labels("H200-141GB", layout, gpus, state) | kwargs.pop("extra_labels", {})
    return gpu_node(name, model="H200-141GB", gpus=gpus, driver=driver, pool=pool, extra_labels=labels,
                    gpu_resources=mig_resources("H200-141GB", layout, gpus), taints=kwargs.pop("taints", []), **kwargs)


def a100_mig_node(name: str, *, layout: str = "all-1g.10gb", pool: str | None = "a100-mig-small",
                  driver: str = "550.90.07", **kwargs: Any) -> dict[str, Any]:
    """8 x A100 80GB under MIG `mixed`, all-1g.10gb by default (56 x 1g.10gb)."""
    labels = mig_labels("A100-80GB", layout) | kwargs.pop("extra_labels", {})
    return gpu_node(name, model="A100-80GB", driver=driver, pool=pool, extra_labels=labels,
                    gpu_resources=mig_resources("A100-80GB", layout), taints=kwargs.pop("taints", []), **kwargs)


def l40s_shared_node(name: str, *, replicas: int = 4, pool: str | None = "l40s-shared", driver: str = "550.90.07",
                     **kwargs: Any) -> dict[str, Any]:
    """4 x L40S time-sliced `replicas` ways with renameByDefault: `nvidia.com/gpu.shared: 16`."""
    labels = {"nvidia.com/gpu.replicas": str(replicas), "nvidia.com/gpu.sharing-strategy": "time-slicing",
              "nvidia.com/device-plugin.config": f"ts-{replicas}"} | kwargs.pop("extra_labels", {})
    return gpu_node(name, model="L40S-48GB", gpus=4, driver=driver, pool=pool, extra_labels=labels,
                    gpu_resources={"nvidia.com/gpu.shared": 4 * replicas}, taints=kwargs.pop("taints", []), **kwargs)


def mps_node(name: str, *, model: str = "H100-80GB", gpus: int = 8, replicas: int = 4, renamed: bool = True,
             pool: str | None = None, driver: str = "570.124.06", **kwargs: Any) -> dict[str, Any]:
    """GPUs shared through CUDA MPS `replicas` ways, labelled as GFD labels them (k8s-device-plugin v0.20.0
    `internal/lm/resource.go`, `internal/lm/nvml.go`): sharing-strategy `mps`, `mps.capable=true`, the replicas
    per GPU, and without renameByDefault the `-SHARED` product suffix and `nvidia.com/gpu` as the resource."""
    product = load_catalogue().model(model).product
    labels = {"nvidia.com/gpu.replicas": str(replicas), "nvidia.com/gpu.sharing-strategy": "mps",
              "nvidia.com/mps.capable": "true", "nvidia.com/device-plugin.config": f"mps-{replicas}",
              "nvidia.com/gpu.product": product if renamed else f"{product}-SHARED"}
    if load_catalogue().model(model).mig:
        labels |= {"nvidia.com/mig.config": "all-disabled", "nvidia.com/mig.config.state": "success"}
    labels |= kwargs.pop("extra_labels", {})
    resource = "nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu"
    return gpu_node(name, model=model, gpus=gpus, driver=driver, pool=pool, extra_labels=labels,
                    gpu_resources={resource: gpus * replicas}, taints=kwargs.pop("taints", []), **kwargs)


def h200_nvl_node(name: str, *, pool: str | None = None, gpus: int = 4, **kwargs: Any) -> dict[str, Any]:
    """4 x H200 NVL (PCIe, 141 GB): the H200-141GB model under another NVML name, `NVIDIA-H200-NVL`."""
    return gpu_node(name, model="H200-141GB", gpus=gpus, pool=pool, sku="NVIDIA H200 NVL",
                    taints=kwargs.pop("taints", []), **kwargs)


def h100_pcie_node(name: str, *, pool: str | None = None, gpus: int = 8, **kwargs: Any) -> dict[str, Any]:
    """8 x H100 PCIe (80 GB): the H100-80GB model under another NVML name, `NVIDIA-H100-PCIe`."""
    return gpu_node(name, model="H100-80GB", gpus=gpus, pool=pool, sku="NVIDIA H100 PCIe",
                    taints=kwargs.pop("taints", []), **kwargs)


def b200_dra_node(name: str, *, pool: str | None = "b200-train", driver: str = "580.65.06", clique: str = B200_CLIQUE,
                  **kwargs: Any) -> dict[str, Any]:
    """8 x B200 handed out by the NVIDIA DRA driver: GFD labels, but no nvidia.com/gpu extended resource."""
    labels = {"nvidia.com/gpu.clique": clique, "nvidia.com/gpu.deploy.device-plugin": "false",
              "nvidia.com/gpu.deploy.dra-driver": "true"} | kwargs.pop("extra_labels", {})
    return gpu_node(name, model="B200-180GB", driver=driver, pool=pool, extra_labels=labels, gpu_resources={},
                    taints=kwargs.pop("taints", []), **kwargs)


def cpu_node(name: str) -> dict[str, Any]:
    node = gpu_node(name, model="H100-80GB", gpu_resources={}, taints=[])
    node["metadata"]["labels"] = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                  "kubernetes.io/arch": "amd64"}
    return node


def dra_semver(version: str) -> str:
    """The DRA driver publishes driverVersion semver-normalised: 580.65.06 -> 580.65.6."""
    return ".".join(str(int(p)) for p in version.split("."))


# NVML GPU-instance profile ids by compute slices (NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0 ... 7_SLICE = 4 in the enum;
# the ids the driver reads back are 19, 14, 9, 5, 0 on Hopper/Blackwell, and 15 for the 1g double-memory profile).
_GI_PROFILE_ID = {1: 19, 2: 14, 3: 9, 4: 5, 7: 0}
_COMPUTE_CAPABILITY = {"hopper": "9.0.0", "ampere": "8.0.0", "ada-lovelace": "8.9.0", "blackwell": "10.0.0"}


def resource_slice(node: str, *, model: str = "B200-180GB", gpus: int = 8, driver: str = "580.65.06",
                   generation: int = 1, mig: dict[str, int] | None = None, sku: str | None = None) -> dict[str, Any]:
    """The NVIDIA DRA GPU plugin's ResourceSlice for one node: `gpus` whole GPUs (or, with `mig`, MIG devices of
    those profiles per GPU), shaped as dra-driver-nvidia-gpu v0.4.1 publishes them
    (cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go): attributes under the driver's domain written bare, full GPUs
    named `gpu-<minor>`, MIG devices `gpu-<minor>-mig-<profile without dots>-<profileID>-<placementStart>` with the
    parent's product, driver and CUDA attributes, and `memory` / `multiprocessors` capacities."""
    spec = load_catalogue().model(model)
    family = _MODEL_LABELS[model]["family"]
    devices = []
    for index in range(gpus):
        gpu_uuid = f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}-{index}')}"
        common = {
            "productName": {"string": sku or spec.dra_product_name},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Ada Lovelace" if family == "ada-lovelace" else family.capitalize()},
            "cudaComputeCapability": {"version": _COMPUTE_CAPABILITY[family]},
            "driverVersion": {"version": dra_semver(driver)},
            "cudaDriverVersion": {"version": "13.0.0" if int(driver.split(".")[0]) >= 580 else "12.8.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index:02x}"},
        }
        if not mig:
            devices.append({"name": f"gpu-{index}",
                            "attributes": {"type": {"string": "gpu"}, "uuid": {"string": gpu_uuid}, **common},
                            "capacity": {"memory": {"value": f"{spec.memory_gb}Gi"}}})
            continue
        placement = 0
        for profile, count in mig.items():
            info = spec.mig.profiles[profile]
            profile_id = 15 if info.compute_slices == 1 and info.memory_gb > spec.memory_gb / 7 * 1.5 else (
                _GI_PROFILE_ID[info.compute_slices])
            for _ in range(count):
                devices.append({
                    "name": f"gpu-{index}-mig-{profile.replace('.', '')}-{profile_id}-{placement}",
                    "attributes": {"type": {"string": "mig"},
                                   "uuid": {"string": f"MIG-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{gpu_uuid}-{placement}')}"},
                                   "parentUUID": {"string": gpu_uuid}, "profile": {"string": profile}, **common},
                    "capacity": {"memory": {"value": f"{info.memory_gb}Gi"},
                                 "multiprocessors": {"value": str(info.compute_slices * 16)}},
                })
                placement += info.compute_slices
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.nvidia.com-{uuid.uuid5(uuid.NAMESPACE_DNS, node).hex[:5]}"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                 "pool": {"name": node, "generation": generation, "resourceSliceCount": 1}, "devices": devices},
    }


def dra_only_node(name: str, *, model: str = "B200-180GB", pool: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """A node whose GPUs only the NVIDIA DRA driver serves, without GPU Feature Discovery: NFD's PCI label and the
    platform's pool label, but no nvidia.com/gpu.* or nvidia.com/cuda.* label and no extended resource (GFD is only
    required on DRA nodes for ComputeDomains, dra-driver-nvidia-gpu docs/prerequisites.md)."""
    node = gpu_node(name, model=model, gpu_resources={}, taints=kwargs.pop("taints", []), **kwargs)
    labels = {key: value for key, value in node["metadata"]["labels"].items() if not key.startswith("nvidia.com/")}
    if pool:
        labels[POOL_LABEL] = pool
    node["metadata"]["labels"] = labels
    return node


def device_class(name: str, *, device_type: str = "gpu", extended_resource_name: str | None = None,
                 profile: str | None = None) -> dict[str, Any]:
    """A DeviceClass as the driver's Helm chart creates them (templates/deviceclass-{gpu,mig}.yaml v0.4.1: the
    `gpu.nvidia.com` class declares `extendedResourceName: nvidia.com/gpu` on resource.k8s.io/v1 clusters), or a
    per-profile MIG class as in its demo/specs/extended-resources."""
    expression = f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{device_type}'"
    if profile:
        expression += f" && device.attributes['gpu.nvidia.com'].profile == '{profile}'"
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def nvidia_device_classes() -> list[dict[str, Any]]:
    """The chart's two GPU classes: whole GPUs (with the extended resource) and MIG devices (without)."""
    return [device_class("gpu.nvidia.com", extended_resource_name="nvidia.com/gpu"),
            device_class("mig.nvidia.com", device_type="mig")]


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def gpu_pod(
    name: str,
    *,
    namespace: str = "gpu-team-a",
    node: str | None,
    resources: dict[str, int] | None = None,
    phase: str = "Running",
    request_id: int | None = None,
    team: str = "team-a",
    started_at: str = "2026-11-30T08:00:00Z",
    claims: list[str] | None = None,
) -> dict[str, Any]:
    """A pod asking for NVIDIA extended resources (or DRA claims), bound to `node` (None: Pending, unscheduled)."""
    labels = contract.selector_for_request(request_id, contract.DEFAULT_LABEL_DOMAIN) if request_id else {}
    if request_id:
        labels[contract.domain_key(contract.DEFAULT_LABEL_DOMAIN, contract.TEAM)] = team
    limits = {k: str(v) for k, v in (resources or {}).items()}
    container: dict[str, Any] = {"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                 "resources": {"limits": limits, "requests": dict(limits)} if limits else {}}
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container],
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimTemplateName": c} for c in claims]
        container["resources"]["claims"] = [{"name": c} for c in claims]
    status: dict[str, Any] = {"phase": phase, "qosClass": "Burstable"}
    if node:
        spec["nodeName"] = node
        status |= {"hostIP": "10.0.3.17", "podIP": "10.244.3.9", "startTime": started_at}
    if phase == "Running":
        status["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 0,
                                        "image": container["image"], "imageID": "", "started": True,
                                        "state": {"running": {"startedAt": started_at}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "uid": str(uuid.uuid4())},
        "spec": spec,
        "status": status,
    }


def allocated_claim(name: str, *, namespace: str, node: str, devices: list[str], pod: dict[str, Any]) -> dict:
    """A ResourceClaim the scheduler allocated on `node` (devices of the node's slice pool) and reserved for `pod`."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                      "count": len(devices)}}]}},
        "status": {
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": d}
                                        for d in devices]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}],
        },
    }
