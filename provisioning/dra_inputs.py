"""What the DRA pools of a cluster mean for the renderer's and the decision's inputs, worked out from rows:
the extended resources DeviceClasses serve, how a time-sliced DRA request is priced, and the namespace quota's
device caps per DeviceClass. Used by provisioning.selectors; reads nothing from the database itself."""
from __future__ import annotations

from dataclasses import dataclass

from .choices import SchedulingModel, SharingMode, Strategy
from .manifests.devices import GPU_DEVICE_CLASS, MIG_DEVICE_CLASS
from .models import Cluster, NodePool


def dra_extended_resources(pool: NodePool) -> tuple[str, ...]:
    """Extended resources the cluster's DeviceClasses serve from this DRA pool's devices, where the Kubernetes minor
    turns DRAExtendedResource on by default (1.36 beta, 1.37 GA); () otherwise."""
    cluster = pool.cluster
    if pool.effective_scheduling_model != SchedulingModel.DRA or int(cluster.kubernetes_version.split(".")[1]) < 36:
        return ()
    return cluster_extended_resources(cluster)


def cluster_extended_resources(cluster: Cluster) -> tuple[str, ...]:
    return tuple(sorted({c["extended_resource_name"] for c in cluster.dra_device_classes or ()
                         if c.get("extended_resource_name")}))


def extended_resource_caps(caps: dict[str, int], dra_caps: dict[str, int], cluster: Cluster) -> dict[str, int]:
    """The device-plugin caps with each extended resource a DRA DeviceClass declares raised by that class's cap. From
    1.36 (DRAExtendedResource on) the API server charges claims of a class with `extendedResourceName` to that
    resource's quota too (KEP-5004 README, "Resource Quota"; the driver's `gpu.nvidia.com` declares `nvidia.com/gpu`,
    chart `templates/deviceclass-gpu.yaml`): on a cluster with pools of both models, `requests.nvidia.com/gpu` counts
    the device-plugin GPUs and the DRA claims together, so it must allow both caps at once, or 16 whole GPUs + 18 DRA
    devices become 16 in all. Each class keeps its own key, which still caps the DRA side alone; as with every cap,
    each side alone may hold the whole quota, and approval enforces the exact figure per strategy."""
    if int(cluster.kubernetes_version.split(".")[1]) < 36:
        return caps
    raised = dict(caps)
    for device_class in cluster.dra_device_classes or ():
        resource = device_class.get("extended_resource_name")
        if resource in caps and device_class.get("name") in dra_caps:
            raised[resource] += dra_caps[device_class["name"]]
    return raised


def decided_replicas(pool: NodePool, replicas: int | None) -> int | None:
    """Shares per GPU as the decision prices them. On DRA a time-sliced request's replicas each hold their devices
    through a claim of their own (manifests/devices.py): nothing divides a GPU into advertised replicas there, so a
    device is one GPU equivalent, which is what quota, metering and the team's ResourceQuota then count."""
    replicated = pool.sharing_mode in (SharingMode.TIME_SLICING, SharingMode.MPS)
    if replicated and pool.effective_scheduling_model == SchedulingModel.DRA:
        return 1
    return replicas


@dataclass(frozen=True)
class _Offered:
    resource_name: str
    compute_slices: int
    total_slices: int


def offered_profiles(pool: NodePool, catalogue) -> list[_Offered]:
    """The MIG profiles a pool offers: its layout's, and those discovery saw on its nodes."""
    model = catalogue.models.get(pool.gpu_model.key)
    if model is None or model.mig is None:
        return []
    offered = set(catalogue.layout_profiles(pool.mig_layout, pool.gpu_model.key))
    offered |= {p for p in (pool.discovered or {}).get("mig_profiles", {}) if p in model.mig.profiles}
    return [_Offered(model.mig.profiles[name].resource_name, model.mig.profiles[name].compute_slices,
                     model.mig.total_slices) for name in sorted(offered)]


def dra_device_caps(quotas: dict, pools, catalogue) -> dict[str, int]:
    """Devices per DeviceClass that the team's quotas (GPU equivalents) can buy on the cluster's DRA pools, matching
    what approval lets it hold. `gpu.nvidia.com` serves whole GPUs, time-sliced and MPS requests alike, each
    replica's claim holding whole devices (manifests/devices.py), so the whole-GPU, time-slicing and MPS quotas add
    up there.
    `mig.nvidia.com` serves every profile under one class, so its cap is the most devices the MIG quota buys: in
    the smallest profile offered (a bigger profile's devices hit the equivalents limit at approval first). Summing
    the profiles, or counting time-sliced shares as devices, would let the namespace hold several times its quota."""
    gpu: dict[str, int] = {}
    mig = None
    for pool in pools:
        if pool.sharing_mode == SharingMode.EXCLUSIVE and Strategy.WHOLE_GPU in quotas:
            gpu[Strategy.WHOLE_GPU] = int(quotas[Strategy.WHOLE_GPU])
        elif pool.sharing_mode == SharingMode.TIME_SLICING and Strategy.TIME_SLICING in quotas:
            gpu[Strategy.TIME_SLICING] = int(quotas[Strategy.TIME_SLICING])
        elif pool.sharing_mode == SharingMode.MPS and Strategy.MPS in quotas:
            # An MPS claim holds whole gpu.nvidia.com devices too (manifests/devices.py): its own line, so a team
            # with only an MPS quota is capped, and MPS pods never eat the whole-GPU cap.
            gpu[Strategy.MPS] = int(quotas[Strategy.MPS])
        elif pool.sharing_mode == SharingMode.MIG and Strategy.MIG in quotas:
            for profile in offered_profiles(pool, catalogue):
                devices = int(quotas[Strategy.MIG] * profile.total_slices / profile.compute_slices)
                mig = max(mig or 0, devices)
    caps = {}
    if gpu:
        caps[GPU_DEVICE_CLASS] = sum(gpu.values())
    if mig is not None:
        caps[MIG_DEVICE_CLASS] = mig
    return caps
