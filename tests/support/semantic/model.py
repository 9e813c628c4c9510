"""What the checker reads and reports: the target cluster, what approval admits, problems; shared names."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_SCHEDULER = "default-scheduler"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
COMPUTE_DOMAIN_CRD = "computedomains.resource.nvidia.com"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
# Resources that are not extended resources (kubernetes pkg/apis/core/helper IsExtendedResourceName).
EXTENDED_RESOURCE_MINOR = 36  # DRAExtendedResource on by default from here
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods", "storage")

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_GROUP_ANNOTATION = "pod-group-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
SHARING_STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"
RULES = (
    "scheduler", "node-selection", "tolerations", "extended-resources", "claims", "device-classes", "devices",
    "quota", "queues", "gang", "feature-gates", "shm", "kueue-dra", "sharing", "kueue-queue",
    "admission-policy", "priority",
)  # fmt: skip




@dataclass(frozen=True, eq=False)  # hashed by identity: device selection is cached per inventory
class Inventory:
    """The target cluster as discovery reads it."""

    nodes: tuple[dict, ...]
    device_classes: tuple[dict, ...] = ()
    resource_slices: tuple[dict, ...] = ()
    # The scheduler the platform runs on its GPU nodes (Volcano / KAI own them when installed for GPUs).
    gpu_node_scheduler: str = DEFAULT_SCHEDULER
    crds: frozenset[str] = frozenset()  # "<plural>.<group>" of installed CRDs
    queues: frozenset[str] = frozenset()  # KAI / Volcano queues the platform created (parents)
    cluster_queues: frozenset[str] = frozenset()  # Kueue ClusterQueues the platform created
    # Kubernetes minor and the gates the platform turned on: DRAExtendedResource (KEP-5004) is alpha and off in
    # 1.34/1.35, beta and on from 1.36. None: not known, the DeviceClass's extendedResourceName is taken as served.
    kubernetes_minor: int | None = None
    feature_gates: frozenset[str] = frozenset()
    # DeviceClasses Kueue's Configuration maps in resources.deviceClassMappings; None: no Kueue, or not known.
    kueue_device_class_mappings: frozenset[str] | None = None
    kueue: bool = False  # Kueue admits the cluster's GPU workloads (its ClusterQueues hold the GPU quota)
    # No Kueue, and the API server serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy: each team
    # namespace with GPU pods must have one the portal applied (provisioning/manifests/admission_policy.py).
    admission_policies: bool = False
    # PriorityClasses (scheduling.k8s.io/v1) and Kueue WorkloadPriorityClasses already on the cluster, as objects.
    priority_classes: tuple[dict, ...] = ()
    workload_priority_classes: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Admitted:
    """What approval admits for the team and this request."""

    quota: dict[str, int] = field(default_factory=dict)  # ResourceQuota hard key -> amount, GPU keys only
    team_gpus: int = 0  # whole GPUs (or gpu.nvidia.com devices) the team may hold: the gang queue's quota
    gang_size: int | None = None  # pods that must start together; None: no gang


@dataclass(frozen=True)
class SemanticProblem:
    rule: str
    object: str  # "Kind/name"
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.object}: {self.message}"


@dataclass
class SemanticReport:
    problems: list[SemanticProblem] = field(default_factory=list)
    checked: set[int] = field(default_factory=set)  # id() of the objects a rule examined

    @property
    def objects_checked(self) -> int:
        return len(self.checked)

    def rules(self) -> set[str]:
        return {p.rule for p in self.problems}


class SemanticInvalid(AssertionError):
    pass


def object_ref(obj: dict) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"



def device_class_key(device_class: str) -> str:
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


def is_gpu_quota_key(key: str) -> bool:
    return key.startswith("requests.nvidia.com/") or key.endswith(".deviceclass.resource.k8s.io/devices")


def fmt_amounts(amounts: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(amounts.items())) + "}"

