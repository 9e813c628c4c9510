"""What a cluster's gang backend can do, from its Kubernetes minor and its declared settings (pure, no Django).

One place read by the cluster's validation (`provisioning.models.Cluster.clean`), the placement decision
(`intake.decisions`) and the renderer (`gang.py`), so the three never disagree.

Native Workload API by minor (kubernetes/api tags kubernetes-1.35.0, kubernetes-1.36.0, master 10b39a39 =
1.37-dev; kubernetes-validate 1.37.0 schemas):
- 1.35 `scheduling.k8s.io/v1alpha1` Workload; 1.36 `v1alpha2` Workload + PodGroup.
- 1.37 serves Workload and PodGroup in `v1alpha3` and `v1beta1` (`scheduling/v1beta1/types.go`,
  `+k8s:prerelease-lifecycle-gen:introduced=1.37`; the 1.37.0-beta.0 tag still had them in v1alpha3 only). The
  renderer writes v1beta1, the version that outlives the release. The `GenericWorkload` gate (which absorbed
  `GangScheduling` in 1.37) is off by default and a beta API is not served unless enabled
  (`--runtime-config=scheduling.k8s.io/v1beta1=true`): a 1.37 cluster must declare the gate, or the API server
  rejects every Workload and PodGroup we send.
- 1.35 and 1.36 (KEP-4671 README, "Feature gates merge in v1.37"; kep.yaml alpha v1.35): two alpha gates, both off.
  `GenericWorkload` serves the API (without it the apply fails), `GangScheduling` enables the scheduler plugin that
  holds the pods until `minCount` can be placed (without it the pods start one by one: no gang). Both must be
  declared.
"""

from __future__ import annotations

from dataclasses import dataclass

from .vocabulary import KAI, KUEUE, NATIVE, NO_GANG_SCHEDULER, VOLCANO

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
# 1.36 guards the PodGroup's priorityClassName/priority with it (alpha, off); 1.37 merges it into GenericWorkload.
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
KNOWN_FEATURE_GATES = (GENERIC_WORKLOAD, GANG_SCHEDULING, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, WORKLOAD_AWARE_PREEMPTION)

NATIVE_API_VERSION = {
    35: "scheduling.k8s.io/v1alpha1",
    36: "scheduling.k8s.io/v1alpha2",
    37: "scheduling.k8s.io/v1beta1",
}
# Gates the platform team must have turned on before the portal renders the native gang at that minor.
NATIVE_GATES_REQUIRED = {
    35: (GENERIC_WORKLOAD, GANG_SCHEDULING),
    36: (GENERIC_WORKLOAD, GANG_SCHEDULING),
    37: (GENERIC_WORKLOAD,),
}
# What is lost without each gate, said in the refusal.
_WITHOUT = {
    GENERIC_WORKLOAD: "the API server would reject every Workload and PodGroup",
    GANG_SCHEDULING: "the scheduler would start the pods one by one, with no gang",
}
# schedulingConstraints.topology exists from v1alpha2 (1.36) and is guarded by this gate (alpha, off).
NATIVE_TOPOLOGY_MIN_MINOR = 36



@dataclass(frozen=True)
class NativeShape:
    """What the native gang is at one minor: the API version, the kinds the renderer applies, the pod field that
    joins a pod to its group, and the API's stage (off by default at every minor so far)."""

    api_version: str
    kinds: tuple[str, ...]
    pod_field: str
    stage: str
    on_by_default: bool = False


NATIVE_SHAPES = {
    35: NativeShape(NATIVE_API_VERSION[35], ("Workload",), "spec.workloadRef", "alpha"),
    36: NativeShape(NATIVE_API_VERSION[36], ("Workload", "PodGroup"), "spec.schedulingGroup.podGroupName", "alpha"),
    37: NativeShape(NATIVE_API_VERSION[37], ("Workload", "PodGroup"), "spec.schedulingGroup.podGroupName", "beta"),
}

# The API group each backend's objects are served under (reference §5-§8): discovery finds an installed backend by
# it, the waits tell a PodGroup's backend by it.
API_GROUPS = {VOLCANO: "scheduling.volcano.sh", KAI: "scheduling.run.ai", KUEUE: "kueue.x-k8s.io",
              NATIVE: "scheduling.k8s.io"}

CLIQUE_LABEL = "nvidia.com/gpu.clique"

# How a failed rank is handled.
RESTART_JOBSET = "jobset"  # JobSet failurePolicy: every child Job is recreated (the whole gang restarts)
RESTART_FAIL_JOB = "fail_job"  # batch/v1 cannot restart all indexes: the first failed rank fails the whole Job


def native_gang_refusal(minor: int, feature_gates, cluster: str = "the cluster") -> str | None:
    """Why the native gang cannot be used on this cluster as declared, or None."""
    if minor not in NATIVE_API_VERSION:
        return (
            f"Cluster {cluster} runs Kubernetes 1.{minor}, which has no native gang scheduling (the Workload API "
            "starts in 1.35 as alpha). Use Volcano, KAI or Kueue there, or upgrade the cluster."
        )
    missing = [gate for gate in NATIVE_GATES_REQUIRED.get(minor, ()) if gate not in set(feature_gates or ())]
    if missing:
        gates = " and ".join(missing)
        return (
            f"Cluster {cluster} runs Kubernetes 1.{minor}, where the native Workload API "
            f"({NATIVE_API_VERSION[minor]}) needs the {gates} feature gate{'s' if len(missing) > 1 else ''}, "
            f"{'both' if len(missing) > 1 else 'which is'} off by default: without "
            + "; without ".join(f"{gate} {_WITHOUT[gate]}" for gate in missing)
            + f". Turn {'them' if len(missing) > 1 else 'it'} on"
            + (f" (and --runtime-config={NATIVE_API_VERSION[minor]}=true)" if GENERIC_WORKLOAD in missing else "")
            + f" and add {'them' if len(missing) > 1 else 'it'} to the cluster's feature_gates, or use Volcano, KAI "
            "or Kueue."
        )
    return None


def dra_extended_resource_refusal(backend: str) -> str | None:
    """Why pods of this backend's scheduler cannot ask an extended resource that DRA devices serve (KEP-5004), or
    None. Volcano v1.15.1 fits a pod's scalar resources, and a PodGroup's minResources, against the node's
    allocatable only (`pkg/scheduler/api/node_info.go` NewNodeInfo/setNodeState from `node.Status.Allocatable`;
    `pkg/scheduler/actions/allocate/allocate.go` predicate: `InitResreq.LessEqualWithResourcesName(FutureIdle)`),
    and DRA devices never appear there: such a pod never fits any node. Its claims it does handle (the predicates
    plugin runs the upstream dynamicresources filter)."""
    if backend == VOLCANO:
        return ("Volcano v1.15.1 fits a pod's extended resources (and a PodGroup's minResources) against the node's "
                "allocatable only, where DRA devices never appear: a pod asking nvidia.com/gpu from DRA never fits")
    return None


def kai_counts_device_class(device_class: str) -> bool:
    """Does KAI charge a claim of this DeviceClass to its queue's GPUs? KAI v0.17.0 counts only classes whose name
    contains "gpu" (`pkg/common/resources/dra.go` IsGPUDeviceClass, read by `pkg/scheduler/api/pod_info/pod_info.go`
    for the pod's GPU requirement): `gpu.nvidia.com` yes, `mig.nvidia.com` never."""
    return "gpu" in device_class.lower()


KAI_DRA_MIG_GAP = (
    "KAI v0.17.0 charges DRA devices to a queue only for DeviceClasses whose name contains \"gpu\" "
    "(pkg/common/resources/dra.go): the team's MIG slices from mig.nvidia.com are outside its KAI queue, its quota and "
    "its fair share, so KAI neither limits them nor counts them against the team; only the namespace's ResourceQuota "
    "caps them, and the portal's KAI queue quota leaves them out."
)


def topology_refusal(backend: str, minor: int, key: str, name: str, feature_gates,
                     dra: bool = False) -> tuple[str, str] | None:
    """(field, why) when a declared gang topology cannot be honoured by the backend, or None. `dra`: the gang's GPUs
    are DRA devices (claims, or extended resources DRA serves)."""
    if not key and not name:
        return None
    if backend == KUEUE and dra:
        # kubernetes-sigs/kueue v0.19.2 site/content/en/docs/concepts/dynamic_resource_allocation.md, "No DRA + TAS".
        return "scheduling_model", (
            "Kueue's topology-aware scheduling does not count DRA devices in a domain's capacity (Kueue v0.19.2, "
            "\"No DRA + TAS\"): it would choose the domain without looking at free GPUs."
        )
    if backend == KUEUE and not key:
        return "gang_topology_key", "Kueue packs a gang by a node label (a level of the flavor's Topology)."
    if backend == KAI and not (key and name):
        field = "gang_topology_key" if not key else "gang_topology_name"
        return field, "KAI needs both the Topology object's name and the node label of the required level."
    if backend == VOLCANO and not name:
        return "gang_topology_name", "Volcano packs a gang by a HyperNode tier name (networkTopology.highestTierName)."
    if backend == NATIVE:
        if minor < NATIVE_TOPOLOGY_MIN_MINOR:
            return "gang_topology_key", f"The native Workload API has no topology constraint on 1.{minor} (1.36+)."
        if not key:
            return "gang_topology_key", "The native Workload API packs a gang by a node label key."
        if TOPOLOGY_AWARE_WORKLOAD_SCHEDULING not in set(feature_gates or ()):
            return "feature_gates", (
                f"schedulingConstraints.topology needs the {TOPOLOGY_AWARE_WORKLOAD_SCHEDULING} feature gate "
                "(alpha, off by default); declare it in feature_gates or clear the gang topology."
            )
    if backend == NO_GANG_SCHEDULER:
        return "gang_topology_key", "A cluster without a gang scheduler cannot pack a gang."
    return None


def topology_words(backend: str, key: str, name: str) -> str:
    """How the gang is kept in one domain, for the decision's reasons (assumes topology_refusal was None)."""
    if backend == KUEUE:
        return f"Kueue topology-aware scheduling admits it only into one {key} domain (podset-required-topology)"
    if backend == KAI:
        return f"KAI places the PodGroup inside one {key} domain of Topology {name} (requiredTopologyLevel)"
    if backend == VOLCANO:
        return f"Volcano keeps the PodGroup inside one HyperNode of tier {name} (networkTopology hard)"
    return f"the Kubernetes scheduler keeps the PodGroup inside one {key} domain (schedulingConstraints.topology)"
