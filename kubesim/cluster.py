"""The simulated GPU cluster's nodes: one pool of each kind the portal places on (docs/simulated-cluster.md).

Pool names match the demo's declared `gpu-east` pools (portal/demo.py) where there is one, so inventory sync
groups the nodes under them; the H100 pool has more nodes than declared, and the MPS, H200 and DRA pools are not
declared at all, so the inventory page has real discrepancies to show.
"""
from __future__ import annotations

from typing import Any

from kubesim import nodes
from kubesim.mig_manager import APPLIED_LAYOUT, MODEL_ANNOTATION

MIG_NODES = {"h200-mig": "H200-141GB", "a100-mig-small": "A100-80GB"}


def _mark_mig(node: dict[str, Any], model: str) -> dict[str, Any]:
    """What the simulated mig-manager needs: the layout in force and the GPU model."""
    labels = node["metadata"]["labels"]
    node["metadata"]["annotations"] |= {APPLIED_LAYOUT: labels["nvidia.com/mig.config"], MODEL_ANNOTATION: model}
    return node


def gpu_cluster_objects() -> list[dict[str, Any]]:
    """Nodes, DRA DeviceClasses and ResourceSlices of the simulated cluster, in the order to create them."""
    objects: list[dict[str, Any]] = []
    # Whole-GPU training on one NVLink domain (GFD's nvidia.com/gpu.clique): the gangs' pool.
    objects += [nodes.h100_node(f"h100-train-{i}") for i in range(6)]
    # Whole H200s without a shared NVLink domain.
    objects += [nodes.gpu_node(f"h200-train-{i}", model="H200-141GB", pool="h200-train") for i in range(2)]
    # MIG (mixed strategy): the MIG planner's nodes.
    # h200-mig-1 runs all-1g.18gb, not the declared all-balanced: fewer 3g.71gb slices than the pool promises, which
    # inventory reports and the MIG planner fixes for the demo's 3g.71gb demand.
    objects += [_mark_mig(nodes.h200_mig_node("h200-mig-0"), "H200-141GB"),
                _mark_mig(nodes.h200_mig_node("h200-mig-1", layout="all-1g.18gb"), "H200-141GB")]
    objects += [_mark_mig(nodes.a100_mig_node(f"a100-mig-{i}"), "A100-80GB") for i in range(2)]
    # Time-sliced L40S (renameByDefault: nvidia.com/gpu.shared) and MPS-shared H100s.
    objects += [nodes.l40s_shared_node(f"l40s-shared-{i}") for i in range(2)]
    objects += [nodes.mps_node(f"h100-mps-{i}", pool="h100-mps") for i in range(2)]
    # B200 through the NVIDIA DRA driver: no extended resource, a ResourceSlice per node.
    objects += nodes.nvidia_device_classes()
    for i in range(2):
        objects.append(nodes.b200_dra_node(f"b200-dra-{i}"))
        objects.append(nodes.resource_slice(f"b200-dra-{i}"))
    objects.append(nodes.cpu_node("system-0"))
    return objects


def seed(fake) -> int:
    """Create the cluster's objects on a running FakeKubeAPI; returns how many."""
    objects = gpu_cluster_objects()
    for obj in objects:
        fake.put(obj)
    return len(objects)
