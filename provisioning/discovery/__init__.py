"""Inventory discovery as pure functions: what the cluster's objects say, turned into node facts, pools and the
differences from what the platform team declared. No Django, no network: `provisioning.inventory_sync` reads the
cluster and writes the rows; everything between is here and tested without either.

Reading a node (reference §1-§4, §10):
- GPU model from `nvidia.com/gpu.product` (GFD; `-SHARED` / `-MIG-<profile>` suffixes ignored) or the DRA devices'
  `productName`, matched against every SKU of every catalogue model (an H200 NVL is an H200-141GB); physical GPU count from `nvidia.com/gpu.count` (under MIG `single` it counts slices, so it is
  derived from the layout there);
- sharing mode: `mig` when MIG devices are advertised (allocatable `nvidia.com/mig-<profile>`, a `-MIG-<profile>`
  product under `single`, GFD `nvidia.com/mig-<profile>.count` labels, DRA devices of type `mig`) or the node's
  `nvidia.com/mig.config` names a layout that creates devices; `mps` when `nvidia.com/gpu.sharing-strategy` is
  `mps` (GFD, k8s-device-plugin v0.20.0 `api/config/v1/sharing.go`); `time_slicing` when it is `time-slicing`,
  `nvidia.com/gpu.replicas` > 1 or `nvidia.com/gpu.shared` is advertised; else `exclusive`;
- scheduling model: `device_plugin` when NVIDIA extended resources are allocatable, `dra` when a `gpu.nvidia.com`
  ResourceSlice names the node, `both` (a conflict) when both are true;
- driver from `nvidia.com/cuda.driver-version.full` (else `.major/.minor/.revision`, else the DRA devices'
  `driverVersion`), NVLink domain from `nvidia.com/gpu.clique`.

Grouping rule (docs/inventory.md, "Inventory discovery"): a node belongs to the declared pool whose `node_selector` its
labels satisfy (a declared pool without a selector takes the nodes labelled `<label-domain>/pool=<its name>`; when
several match, the most specific selector wins, then the name, and the overlap is flagged). Other GPU nodes form
discovered pools: by the portal's pool label when present, else by (GPU model, sharing mode with MIG layout or
time-slicing / MPS replicas, scheduling model). Nodes whose GPU the catalogue does not know are not pooled (flagged).
"""
from __future__ import annotations

from .capacity import NodeCapacityRow, capacity_by_strategy, equivalents_per_unit, key_profile, key_strategy
from .discrepancies import cluster_discrepancies, pool_discrepancies
from .grouping import (
    DiscoveredGroup,
    Grouping,
    as_declared,
    group_nodes,
    pool_name,
    selector_matches,
    usable_for,
)
from .nodes import NodeFacts, dra_devices_by_node, parse_node
from .pods import PodUse, device_classes, dra_device_keys, parse_pods
from .resources import (
    BOTH,
    DEVICE_PLUGIN,
    DRA,
    DRA_DRIVER,
    DRA_GPU,
    DRA_MIG_PREFIX,
    DRIVER_MAJOR_LABEL,
    EXCLUSIVE,
    GPU,
    GPU_SHARED,
    MIG,
    MIG_PREFIX,
    NVIDIA,
    TIME_SLICING,
)
from .summary import summarise_pool

__all__ = [
    "NodeFacts", "PodUse", "DiscoveredGroup", "Grouping", "NodeCapacityRow", "parse_node",
    "parse_pods", "dra_devices_by_node", "dra_device_keys", "device_classes", "group_nodes", "as_declared", "usable_for",
    "summarise_pool", "pool_discrepancies", "cluster_discrepancies", "capacity_by_strategy", "key_strategy",
    "key_profile", "equivalents_per_unit", "pool_name", "selector_matches",
    "NVIDIA", "GPU", "GPU_SHARED", "MIG_PREFIX", "DRA_DRIVER", "DRA_GPU", "DRA_MIG_PREFIX", "DRIVER_MAJOR_LABEL",
    "EXCLUSIVE", "MIG", "TIME_SLICING", "DEVICE_PLUGIN", "DRA", "BOTH",
]
