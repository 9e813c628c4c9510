"""Free and used GPUs by strategy over stored nodes (the figures of the clusters API and the metrics)."""
from __future__ import annotations

from gpu.catalogue import load_catalogue

from .. import discovery
from ..models import Node


def node_capacity_row(node: Node) -> discovery.NodeCapacityRow:
    return discovery.NodeCapacityRow(
        name=node.name, gpu_model=node.gpu_model.key if node.gpu_model else None, sharing_mode=node.sharing_mode,
        gpu_replicas=node.gpu_replicas, gpu_resources=dict(node.gpu_resources or {}),
        gpu_used=dict(node.gpu_used or {}), mig_devices=dict(node.mig_devices or {}),
        schedulable=not node.unschedulable, mig_strategy=node.mig_strategy,
    )  # fmt: skip


def capacity_of(nodes) -> dict:
    """Free and used GPUs by strategy over these (prefetched) nodes."""
    return discovery.capacity_by_strategy((node_capacity_row(n) for n in nodes), load_catalogue())
