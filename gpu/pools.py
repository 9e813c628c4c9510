"""A node pool as plain values, the one pool type below the Django apps: what the platform team declared (inventory
discovery compares its nodes with it) and what the decision function places on (declared, or as its nodes offer
it after a sync). Built from `provisioning.models.NodePool` rows by provisioning; read by `intake.decisions` and
`provisioning.discovery`, which is why it lives in the bottom layer."""
from __future__ import annotations

from dataclasses import dataclass, field

from .vocabulary import DEVICE_PLUGIN


@dataclass(frozen=True)
class PoolSpec:
    name: str
    gpu_model: str  # catalogue key
    gpus_per_node: int
    node_count: int
    sharing_mode: str  # exclusive | mig | time_slicing | mps (gpu.vocabulary.SHARING_MODES)
    cluster: str = ""  # the cluster's name; "" where one cluster's pools are read alone (discovery)
    mig_profiles: dict[str, int] = field(default_factory=dict)  # per GPU, from the layout
    mig_layout: str = ""
    mig_strategy: str = "mixed"
    time_slicing_replicas: int | None = None  # replicas per GPU of a time-sliced or MPS pool
    time_slicing_renamed: bool = True  # replicas advertised as nvidia.com/gpu.shared
    device_plugin_config: str = ""  # the nvidia.com/device-plugin.config label its nodes carry
    driver_version: str = ""  # the declared driver, compared with the nodes'
    driver_major: int | None = None  # the driver floor the decision checks against
    nvlink_domain: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    scheduling_model: str = DEVICE_PLUGIN  # effective: the pool's, else the cluster's
    id: int | None = None
    # DRA pools: extended resources (e.g. nvidia.com/gpu) the cluster's DeviceClasses serve from DRA devices
    # (DRAExtendedResource, on by default from Kubernetes 1.36); empty elsewhere.
    dra_extended_resources: tuple[str, ...] = ()
    # MIG pools: does mig-manager's nvidia.com/mig.config.state mark the nodes ready (declared, else seen on every
    # node)? None: not known. Pods require the label only where it is True (provisioning/manifests/affinity.py).
    mig_ready_label: bool | None = None

