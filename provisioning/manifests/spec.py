"""Inputs of the renderer: plain frozen dataclasses, built from the database by provisioning.selectors and
from nothing else. The renderer (this package) imports nothing from Django."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import DEFAULT_LABEL_DOMAIN


@dataclass(frozen=True)
class ApprovedPods:
    """What one approved request's pods may be: who owns them and what GPUs each holds (manifests/admission_policy.py,
    the team's ValidatingAdmissionPolicy on clusters without Kueue)."""

    request_id: int
    owner_kind: str  # "Job" | "ReplicaSet"
    owner_name: str  # the Job's name, or the Deployment's (its ReplicaSets are "<name>-<hash>")
    limits: tuple[tuple[str, int], ...] = ()  # per pod: NVIDIA extended resource -> amount
    claim_templates: tuple[str, ...] = ()  # ResourceClaimTemplates the pods' claims come from


@dataclass(frozen=True)
class TeamSpec:
    slug: str
    cost_center: str = ""
    # GPU resources the team may hold in its namespace, by Kubernetes resource name
    # (e.g. {"nvidia.com/gpu": 16, "nvidia.com/mig-1g.18gb": 14}); empty = no ResourceQuota limits on GPUs.
    gpu_quota: dict[str, int] = field(default_factory=dict)
    # DRA devices the team may hold, by DeviceClass (e.g. {"gpu.nvidia.com": 8, "mig.nvidia.com": 14}): the
    # ResourceQuota counts claims' devices per class, whatever sharing strategy asked for them.
    dra_devices: dict[str, int] = field(default_factory=dict)
    # The team's other approved requests on the cluster whose pods run now (render_all adds the one it renders).
    approved: tuple[ApprovedPods, ...] = ()


@dataclass(frozen=True)
class GangSpec:
    min_members: int
    backend: str  # volcano | kai | kueue | native


@dataclass(frozen=True)
class PrioritySpec:
    """The decision's priority (intake.decisions.Priority), with the value of its tier's PriorityClass."""

    tier: str  # gpu.vocabulary.PRIORITY_TIERS
    value: int
    preemptible: bool
    grace_seconds: int
    preempts: bool = True
    min_runtime_minutes: int | None = None


@dataclass(frozen=True)
class RequestSpec:
    """One approved request, with its decision flattened in."""

    request_id: int
    name: str  # the request's DNS-1123 name, as the engineer gave it
    team: str  # team slug
    cost_center: str
    workload_class: str  # training | inference | development
    image: str
    command: tuple[str, ...]
    replicas: int
    gpus_per_replica: int
    gpu_memory_gb: float  # per replica, from the answers
    strategy: str  # whole_gpu | mig | time_slicing | mps (gpu.vocabulary)
    gpu_model: str  # catalogue key, e.g. H200-141GB
    gpu_product: str  # GFD label value, e.g. NVIDIA-H200
    dra_product_name: str  # NVML name, e.g. "NVIDIA H200"
    mig_profile: str | None  # e.g. "1g.18gb"
    fabric_isolation: str  # shared | tenant_exclusive
    gang: GangSpec | None
    driver_min_major: int | None
    gpu_equivalents_per_replica: str  # exact decimal string, e.g. "0.142857" (annotation for metering)
    driver_branch: int | None = None  # the release branch a rule keeps the class on: the driver major must equal it
    # DRA: the extended resource the decision requests the devices by (DRAExtendedResource), None for a claim.
    dra_extended_resource: str | None = None
    priority: PrioritySpec | None = None  # None: the scheduler's defaults, inherited (nothing rendered)


@dataclass(frozen=True)
class PoolProfile:
    name: str
    gpu_product: str  # the SKU's nvidia.com/gpu.product its nodes carry (e.g. NVIDIA-H200-NVL)
    sharing_mode: str  # exclusive | mig | time_slicing | mps
    mig_strategy: str = "mixed"  # mixed | single
    mig_layout: str = ""  # nvidia.com/mig.config value
    time_slicing_replicas: int | None = None  # replicas per GPU of a time-sliced or MPS pool
    time_slicing_renamed: bool = True  # renameByDefault: nvidia.com/gpu.shared (time-slicing and MPS alike)
    device_plugin_config: str = ""  # nvidia.com/device-plugin.config value
    node_selector: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict, ...] = ()  # [{key, value?, effect}] on the pool's nodes
    nvlink_domain: str = ""  # nvidia.com/gpu.clique value when the pool is on an NVLink fabric
    # Do the pool's nodes carry GFD's nvidia.com/cuda.driver-version.major? None: not known (never synced). DRA-only
    # nodes may run no GFD at all (reference, corrections box item 5), so only a True lets a DRA pod use the label.
    driver_major_label: bool | None = None
    # MIG pools: does mig-manager's nvidia.com/mig.config.state mark the nodes ready (declared, else seen on every
    # node at the last sync)? Only a True makes device-plugin MIG pods require it (affinity.py); None: not known.
    mig_ready_label: bool | None = None
    gpu_memory_mib: int | None = None  # one GPU's memory (MPS splits it between clients)
    gpu_model: str = ""  # catalogue key; when set, the request's model is checked against it (not the SKU)
    dra_product_name: str = ""  # NVML name the pool's DRA devices publish; "" = the request's model's first SKU
    # The GPU model's NVLink spans nodes (GB200/GB300 NVL72): cross-node GPU memory needs a ComputeDomain (IMEX).
    multinode_nvlink: bool = False


@dataclass(frozen=True)
class NetworkPeer:
    """Pods outside a team's namespace that may reach its pods: a namespace, and pod labels in it (empty: all)."""

    namespace: str
    pod_labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    kubernetes_version: str  # "1.34" .. "1.37"
    scheduling_model: str  # device_plugin | dra (the pool's effective model)
    gang_scheduler: str  # volcano | kai | kueue | native | none
    pool: PoolProfile
    gang_queue: str = ""  # Kueue ClusterQueue / KAI or Volcano parent queue, when the platform set one
    dra_mps_support: bool = False  # the NVIDIA DRA driver runs with its MPSSupport feature gate
    # Volcano / KAI schedule every pod on the GPU nodes: non-gang pods use that scheduler too.
    gang_scheduler_owns_gpu_nodes: bool = True
    label_domain: str = DEFAULT_LABEL_DOMAIN
    # NVIDIA DRA driver feature gates the platform declares on (Helm `featureGates`), e.g. ("TimeSlicingSettings",).
    dra_feature_gates: tuple[str, ...] = ()
    # Extended resources the cluster's DeviceClasses declare (`spec.extendedResourceName`), as discovery read them.
    dra_extended_resources: tuple[str, ...] = ()
    # Declared per cluster; None: that peer is not admitted into team namespaces (manifests/network.py).
    ingress_controller: NetworkPeer | None = None  # may reach inference pods' HTTP port
    metrics_scraper: NetworkPeer | None = None  # may reach every port of a team's pods (e.g. Prometheus)
    feature_gates: tuple[str, ...] = ()  # Kubernetes feature gates the platform team turned on
    jobset: bool = False  # the JobSet controller (jobset.x-k8s.io/v1alpha2) is installed
    gang_topology_key: str = ""  # node label a gang is packed into (e.g. nvidia.com/gpu.clique, a rack label)
    gang_topology_name: str = ""  # KAI Topology object / Volcano HyperNode tier that defines the domains
    # The cluster serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (GA since 1.30) and the portal's
    # objects reach it: then, without Kueue, each team namespace gets one (manifests/admission_policy.py).
    admission_policies: bool = False
