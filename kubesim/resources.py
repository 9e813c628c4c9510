"""What the fake API server serves: the built-in kinds by Kubernetes minor version and the custom resources of the
schedulers and GPU add-ons the portal renders for (CRD versions as in /work/shared/schemas/SOURCES.md)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kmock

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ServedResource:
    api_version: str  # "v1", "batch/v1", ...
    plural: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...] = ("status",)
    custom: bool = False  # served from a CRD: LIST items keep their apiVersion and kind, as real servers do
    verbs: tuple[str, ...] = ALL_VERBS
    default_propagation: str = "Background"  # when a DELETE names no propagationPolicy
    short_names: tuple[str, ...] = ()  # what discovery lists, so that `kubectl get po` works
    categories: tuple[str, ...] = ()  # `kubectl get all` reads the "all" category

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def key(self) -> kmock.resource:
        """The resource as kmock keys its objects: kmock.resource(group, version, plural)."""
        return kmock.resource(self.group, self.version, self.plural)

    @property
    def qualified_plural(self) -> str:
        """"jobs.batch", "pods": how the API server names a resource in its messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(api_version: str, plural: str, kind: str, namespaced: bool, *subresources: str, **kw: Any):
    return ServedResource(api_version, plural, kind, namespaced, subresources, **kw)


def _crd(api_version: str, plural: str, kind: str, namespaced: bool, *subresources: str, **kw: Any):
    return ServedResource(api_version, plural, kind, namespaced, subresources, custom=True, **kw)


BUILTIN_RESOURCES: tuple[ServedResource, ...] = (
    _builtin("v1", "namespaces", "Namespace", False, "status", "finalize", short_names=("ns",),
             verbs=tuple(v for v in ALL_VERBS if v != "deletecollection")),
    _builtin("v1", "nodes", "Node", False, "status", short_names=("no",)),
    _builtin("v1", "pods", "Pod", True, "status", short_names=("po",), categories=("all",)),
    _builtin("v1", "services", "Service", True, "status", short_names=("svc",), categories=("all",)),
    _builtin("v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
    _builtin("v1", "secrets", "Secret", True),
    _builtin("v1", "resourcequotas", "ResourceQuota", True, "status", short_names=("quota",)),
    # Only what kubectl describe lists: nothing in the simulator writes Events.
    _builtin("v1", "events", "Event", True, short_names=("ev",)),
    _builtin("apps/v1", "deployments", "Deployment", True, "status", "scale", short_names=("deploy",),
             categories=("all",)),
    _builtin("apps/v1", "statefulsets", "StatefulSet", True, "status", "scale", short_names=("sts",),
             categories=("all",)),
    # What a Deployment's pods belong to on a real cluster; metering follows pods' owner chains through them.
    _builtin("apps/v1", "replicasets", "ReplicaSet", True, "status", "scale", short_names=("rs",),
             categories=("all",)),
    # The API's default for Jobs is to orphan their pods (kubectl passes Background explicitly).
    _builtin("batch/v1", "jobs", "Job", True, "status", default_propagation="Orphan", categories=("all",)),
    _builtin("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "status", short_names=("pdb",)),
    _builtin("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True, short_names=("netpol",)),
    _builtin("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
    _builtin("resource.k8s.io/v1", "deviceclasses", "DeviceClass", False),
    _builtin("resource.k8s.io/v1", "resourceclaims", "ResourceClaim", True, "status"),
    _builtin("resource.k8s.io/v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    _builtin("resource.k8s.io/v1", "resourceslices", "ResourceSlice", False),
)  # fmt: skip

# The native gang-scheduling API changed group version every release (reference/gpu-kubernetes.md, section 5).
WORKLOAD_API_BY_MINOR: dict[int, tuple[ServedResource, ...]] = {
    35: (_builtin("scheduling.k8s.io/v1alpha1", "workloads", "Workload", True),),
    36: (
        _builtin("scheduling.k8s.io/v1alpha2", "workloads", "Workload", True),
        _builtin("scheduling.k8s.io/v1alpha2", "podgroups", "PodGroup", True, "status"),
    ),
    37: (
        _builtin("scheduling.k8s.io/v1beta1", "workloads", "Workload", True),
        _builtin("scheduling.k8s.io/v1beta1", "podgroups", "PodGroup", True, "status"),
    ),
}

# DeviceTaintRule (DRADeviceTaints) by release: kubernetes/api resource/v1alpha3 from 1.33, v1beta2 from 1.36, v1 in
# 1.37 (tags kubernetes-1.34.0, 1.36.0, 1.37.0-beta.0); served here as by a cluster that turns the gate on.
DEVICE_TAINT_RULES_BY_MINOR: dict[int, str] = {34: "v1alpha3", 35: "v1alpha3", 36: "v1beta2", 37: "v1"}

CUSTOM_RESOURCES: tuple[ServedResource, ...] = (
    _crd("scheduling.volcano.sh/v1beta1", "podgroups", "PodGroup", True),  # no status subresource in its CRD
    _crd("scheduling.volcano.sh/v1beta1", "queues", "Queue", False, "status"),
    _crd("batch.volcano.sh/v1alpha1", "jobs", "Job", True, "status"),
    _crd("scheduling.run.ai/v2alpha2", "podgroups", "PodGroup", True, "status"),
    _crd("scheduling.run.ai/v2", "queues", "Queue", False, "status"),
    _crd("kueue.x-k8s.io/v1beta2", "localqueues", "LocalQueue", True, "status", short_names=("queue", "queues", "lq"),
         categories=("kueue",)),
    _crd("kueue.x-k8s.io/v1beta2", "clusterqueues", "ClusterQueue", False, "status", short_names=("cq",),
         categories=("kueue",)),
    _crd("kueue.x-k8s.io/v1beta2", "resourceflavors", "ResourceFlavor", False, short_names=("flavor", "flavors", "rf"),
         categories=("kueue",)),
    _crd("kueue.x-k8s.io/v1beta2", "workloads", "Workload", True, "status", short_names=("wl",), categories=("kueue",)),
    _crd("kueue.x-k8s.io/v1beta2", "admissionchecks", "AdmissionCheck", False, "status", categories=("kueue",)),
    _crd("kueue.x-k8s.io/v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass", False, short_names=("wpc",),
         categories=("kueue",)),
    _crd("jobset.x-k8s.io/v1alpha2", "jobsets", "JobSet", True, "status"),
    _crd("resource.nvidia.com/v1beta1", "computedomains", "ComputeDomain", True, "status"),
)


def builtin_resources(minor: int) -> tuple[ServedResource, ...]:
    taint_rules = DEVICE_TAINT_RULES_BY_MINOR.get(minor)
    return BUILTIN_RESOURCES + WORKLOAD_API_BY_MINOR.get(minor, ()) + (
        (_builtin(f"resource.k8s.io/{taint_rules}", "devicetaintrules", "DeviceTaintRule", False, "status"),)
        if taint_rules else ())


def resources_from_crd(crd: Mapping[str, Any]) -> tuple[ServedResource, ...]:
    """The resources a CustomResourceDefinition makes the API server serve (one per served version)."""
    spec = crd["spec"]
    names = spec["names"]
    return tuple(
        _crd(
            f"{spec['group']}/{version['name']}",
            names["plural"],
            names["kind"],
            spec["scope"] == "Namespaced",
            *sorted((version.get("subresources") or {}).keys()),
        )
        for version in spec["versions"]
        if version.get("served", True)
    )


def version_priority(version: str) -> tuple[int, int, int]:
    """Sort key putting the version an API server prefers first: GA over beta over alpha, newest first."""
    major, _, rest = version[1:].partition("alpha") if "alpha" in version else version[1:].partition("beta")
    stability = 0 if "alpha" in version else 1 if "beta" in version else 2
    try:
        return (-stability, -int(major), -int(rest or 0))
    except ValueError:
        return (1, 0, 0)


# The order the API server lists named groups in (kube-aggregator's version priorities put the built-in groups
# first, kubernetes v1.35 pkg/controlplane/apiserver/aggregator.go); CRD groups follow by name. kubectl resolves a
# plural two groups share (`workloads`) to the first.
BUILTIN_GROUP_ORDER = ("apps", "events.k8s.io", "batch", "networking.k8s.io", "policy", "scheduling.k8s.io",
                       "resource.k8s.io")


def group_order(group: str) -> tuple[int, str]:
    if group in BUILTIN_GROUP_ORDER:
        return (BUILTIN_GROUP_ORDER.index(group), "")
    return (len(BUILTIN_GROUP_ORDER), group)
