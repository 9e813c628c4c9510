"""A GPU fleet of any size for the simulated cluster: the same kinds of node as kubesim.cluster (whole-GPU H100 with
an NVLink clique, H200 under MIG, B200 through the NVIDIA DRA driver with a ResourceSlice each, time-sliced L40S,
MPS-shared H100), in fixed proportions, with the pods and allocated ResourceClaims that hold some of their GPUs.
`bench/inventory.py` syncs 130 and 1,300 of them; tests/provisioning/test_inventory_scale.py a few dozen.
"""
from __future__ import annotations

import uuid
from typing import Any

from kubesim import nodes

# Kind of node -> share of the fleet (tenths of a percent add up to 1,000).
MIX = (("h100", 700), ("h200-mig", 100), ("b200-dra", 100), ("l40s", 50), ("h100-mps", 50))
NAMESPACE = "gpu-fleet"


def _counts(total: int) -> dict[str, int]:
    counts = {kind: total * share // 1000 for kind, share in MIX}
    counts["h100"] += total - sum(counts.values())
    return counts


def _pod(name: str, node: str, resources: dict[str, int], request_id: int, claims=None) -> dict[str, Any]:
    pod = nodes.gpu_pod(name, namespace=NAMESPACE, node=node, resources=resources, request_id=request_id,
                        team="fleet", claims=claims)
    pod["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kubesim-fleet/{name}"))
    return pod


def fleet_objects(total: int) -> list[dict[str, Any]]:
    """`total` GPU nodes (and a ResourceSlice per DRA node), the namespace, DeviceClasses, and the work on them:
    every other H100 node holds an 8-GPU pod of a training gang, every MIG node a 1g and a 3g slice, every other
    DRA node a claim of two GPUs, every time-sliced and MPS node one share. Request ids start at 5000."""
    objects: list[dict[str, Any]] = [nodes.namespace(NAMESPACE), *nodes.nvidia_device_classes()]
    work: list[dict[str, Any]] = []
    counts, request_id = _counts(total), 5000
    for i in range(counts["h100"]):
        name = f"fleet-h100-{i:04d}"
        objects.append(nodes.h100_node(name))
        if i % 2 == 0:
            work.append(_pod(f"train-{i:04d}", name, {"nvidia.com/gpu": 8}, request_id + i // 8))
    for i in range(counts["h200-mig"]):
        name = f"fleet-h200-{i:04d}"
        objects.append(nodes.h200_mig_node(name))
        work.append(_pod(f"serve-{i:04d}-a", name, {"nvidia.com/mig-1g.18gb": 1}, request_id + 2000 + i))
        work.append(_pod(f"serve-{i:04d}-b", name, {"nvidia.com/mig-3g.71gb": 1}, request_id + 2000 + i))
    for i in range(counts["b200-dra"]):
        name = f"fleet-b200-{i:04d}"
        objects += [nodes.b200_dra_node(name), nodes.resource_slice(name)]
        if i % 2 == 0:
            pod = _pod(f"dra-{i:04d}", name, {}, request_id + 4000 + i, claims=["gpu"])
            work += [pod, nodes.allocated_claim(f"dra-{i:04d}-gpu", namespace=NAMESPACE, node=name,
                                                devices=["gpu-0", "gpu-1"], pod=pod)]
    for i in range(counts["l40s"]):
        name = f"fleet-l40s-{i:04d}"
        objects.append(nodes.l40s_shared_node(name))
        work.append(_pod(f"notebook-{i:04d}", name, {"nvidia.com/gpu.shared": 1}, request_id + 6000 + i))
    for i in range(counts["h100-mps"]):
        name = f"fleet-mps-{i:04d}"
        objects.append(nodes.mps_node(name, pool="h100-mps"))
        work.append(_pod(f"mps-{i:04d}", name, {"nvidia.com/gpu.shared": 1}, request_id + 7000 + i))
    return objects + work


def seed(fake, total: int) -> int:
    """Create the fleet on a running FakeKubeAPI; returns how many objects."""
    objects = fleet_objects(total)
    for obj in objects:
        fake.put(obj)
    return len(objects)
