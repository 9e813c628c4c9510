"""The cluster each render-matrix case targets, as discovery would read it: four nodes of the case's pool built
with kubesim's GFD / device-plugin / DRA-driver shapes, the NVIDIA DeviceClasses and ResourceSlices on DRA pools,
the platform's queues, and which scheduler owns the GPU nodes. Plus what approval admits for the case.

The nodes are built from what the pool *is* (sharing mode, MIG layout, fabric, driver), never from the rendered
objects, so a selector or resource the renderer gets wrong matches nothing here.
"""

from __future__ import annotations

from dataclasses import replace

from kubesim.nodes import (
    GPU_TAINT,
    device_class,
    gpu_node,
    mig_labels,
    mig_resources,
    mps_node,
    nvidia_device_classes,
    resource_slice,
)
from gpu.catalogue import load_catalogue
from provisioning.manifests.clusterside import device_classes_for
from provisioning.manifests.spec import ClusterProfile, RequestSpec, TeamSpec
from tests.support.semantic import CHANNEL_DEVICE_CLASS, COMPUTE_DOMAIN_CRD, Admitted, Inventory, device_class_key

MODEL = "H200-141GB"
NODES_PER_POOL = 4
DRIVER = "570.124.06"
SCHEDULER_NAMES = {"volcano": "volcano", "kai": "kai-scheduler"}


def pool_node(cluster: ClusterProfile, index: int, model: str = MODEL) -> dict:
    """One node of the cluster's pool, labelled and advertising what the pool's configuration makes it."""
    pool, dra = cluster.pool, cluster.scheduling_model == "dra"
    name = f"{pool.name}-{index}"
    gpus = 8
    labels = dict(pool.node_selector)
    if pool.nvlink_domain:
        labels["nvidia.com/gpu.clique"] = pool.nvlink_domain
    product = load_catalogue().model(model).product
    if pool.sharing_mode == "mps" and not dra:
        node = mps_node(name, model=model, gpus=gpus, replicas=pool.time_slicing_replicas or 1,
                        renamed=pool.time_slicing_renamed, driver=DRIVER, extra_labels=labels)  # fmt: skip
        if pool.device_plugin_config:
            node["metadata"]["labels"]["nvidia.com/device-plugin.config"] = pool.device_plugin_config
    elif pool.sharing_mode == "mig" and not dra:
        if pool.mig_strategy == "single":
            slices = load_catalogue().layout_profiles(pool.mig_layout, model)
            (profile, per_gpu), = slices.items()
            labels |= {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": pool.mig_layout,
                       "nvidia.com/mig.config.state": "success", "nvidia.com/gpu.product": f"{product}-MIG-{profile}"}
            resources = {"nvidia.com/gpu": per_gpu * gpus}
        else:
            labels = mig_labels(model, pool.mig_layout, gpus) | labels
            resources = mig_resources(model, pool.mig_layout, gpus)
        node = gpu_node(name, model=model, gpus=gpus, driver=DRIVER, extra_labels=labels, gpu_resources=resources)
        if pool.mig_ready_label is not True:  # statically or cloud-configured: no mig-manager, no state label
            node["metadata"]["labels"].pop("nvidia.com/mig.config.state", None)
    elif pool.sharing_mode == "time_slicing" and not dra:
        replicas = pool.time_slicing_replicas or 1
        labels |= {"nvidia.com/gpu.replicas": str(replicas), "nvidia.com/gpu.sharing-strategy": "time-slicing"}
        if pool.device_plugin_config:
            labels["nvidia.com/device-plugin.config"] = pool.device_plugin_config
        resource = "nvidia.com/gpu.shared" if pool.time_slicing_renamed else "nvidia.com/gpu"
        if not pool.time_slicing_renamed:
            labels["nvidia.com/gpu.product"] = f"{product}-SHARED"  # GFD's suffix without renameByDefault
        node = gpu_node(name, model=model, gpus=gpus, driver=DRIVER, extra_labels=labels,
                        gpu_resources={resource: gpus * replicas})  # fmt: skip
    elif dra:
        # GPUs served by the NVIDIA DRA driver: no device-plugin resource on the node.
        labels |= {"nvidia.com/gpu.deploy.device-plugin": "false", "nvidia.com/gpu.deploy.dra-driver": "true"}
        node = gpu_node(name, model=model, gpus=gpus, driver=DRIVER, extra_labels=labels, gpu_resources={})
    else:
        node = gpu_node(name, model=model, gpus=gpus, driver=DRIVER, extra_labels=labels)
    node["spec"]["taints"] = [dict(t) for t in pool.taints] if pool.taints else []
    if not node["spec"]["taints"]:
        del node["spec"]["taints"]
    return node


def pool_slice(cluster: ClusterProfile, node: dict, model: str = MODEL) -> dict:
    pool = cluster.pool
    mig = load_catalogue().layout_profiles(pool.mig_layout, model) if pool.sharing_mode == "mig" else None
    return resource_slice(node["metadata"]["name"], model=model, gpus=8, driver=DRIVER, mig=mig,
                          sku=pool.dra_product_name or None)  # fmt: skip


_INVENTORIES: dict[str, Inventory] = {}


def inventory_for(cluster: ClusterProfile, *, model: str = MODEL, nodes: int = NODES_PER_POOL) -> Inventory:
    """Built once per distinct pool and backend (the matrix has 480), so the checker's device cache is reused."""
    key = repr((cluster.pool, cluster.scheduling_model, cluster.gang_scheduler, cluster.gang_queue,
                cluster.gang_scheduler_owns_gpu_nodes, cluster.kubernetes_version, cluster.feature_gates, model, cluster.admission_policies,
                nodes))  # fmt: skip
    if key not in _INVENTORIES:
        _INVENTORIES[key] = build_inventory(cluster, model=model, nodes=nodes)
    return _INVENTORIES[key]


def build_inventory(cluster: ClusterProfile, *, model: str = MODEL, nodes: int = NODES_PER_POOL) -> Inventory:
    pool_nodes = tuple(pool_node(cluster, i, model) for i in range(nodes))
    dra = cluster.scheduling_model == "dra"
    owns = cluster.gang_scheduler in SCHEDULER_NAMES and cluster.gang_scheduler_owns_gpu_nodes
    classes = list(nvidia_device_classes()) if dra else []
    crds = set()
    if cluster.pool.multinode_nvlink:
        # The DRA driver's ComputeDomain side (installable next to the device plugin).
        classes.append(device_class(CHANNEL_DEVICE_CLASS, device_type="channel"))
        crds.add(COMPUTE_DOMAIN_CRD)
    return Inventory(
        kueue_device_class_mappings=kueue_mappings(cluster) if cluster.gang_scheduler == "kueue" else None,
        kueue=cluster.gang_scheduler == "kueue",
        admission_policies=cluster.admission_policies and cluster.gang_scheduler != "kueue",
        nodes=pool_nodes,
        device_classes=tuple(classes),
        resource_slices=tuple(pool_slice(cluster, n, model) for n in pool_nodes) if dra else (),
        gpu_node_scheduler=SCHEDULER_NAMES[cluster.gang_scheduler] if owns else "default-scheduler",
        crds=frozenset(crds),
        queues=frozenset({cluster.gang_queue} - {""}),
        cluster_queues=frozenset({cluster.gang_queue or "gpu-portal"}),
        kubernetes_minor=int(cluster.kubernetes_version.split(".")[1]),
        feature_gates=frozenset(cluster.feature_gates),
    )


def kueue_mappings(cluster: ClusterProfile) -> frozenset[str]:
    """The DeviceClasses Kueue's Configuration maps: what the register tells the platform to map for this pool
    (manifests/clusterside.py, the advice the platform follows), not what the renderer put in the claims."""
    modes = [cluster.pool.sharing_mode] if cluster.scheduling_model == "dra" else []
    compute_domains = cluster.pool.multinode_nvlink and bool(cluster.pool.nvlink_domain)
    return frozenset(device_classes_for(modes, compute_domains=compute_domains))


def admitted_for(team: TeamSpec, request: RequestSpec) -> Admitted:
    """What approval admits, in the quota keys the API server counts (not read from the renderer)."""
    quota = {f"requests.{resource}": int(n) for resource, n in team.gpu_quota.items()}
    quota |= {device_class_key(name): int(n) for name, n in team.dra_devices.items()}
    team_gpus = int(team.gpu_quota.get("nvidia.com/gpu") or team.dra_devices.get("gpu.nvidia.com", 0))
    return Admitted(quota=quota, team_gpus=team_gpus,
                    gang_size=request.gang.min_members if request.gang else None)  # fmt: skip


def with_taints(cluster: ClusterProfile, *taints: dict) -> ClusterProfile:
    return replace(cluster, pool=replace(cluster.pool, taints=taints))


__all__ = ["GPU_TAINT", "admitted_for", "inventory_for", "pool_node", "pool_slice", "with_taints"]
