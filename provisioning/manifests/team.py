"""Per-team objects: the namespace, its GPU ResourceQuota, its NetworkPolicies, the gang backend's queue and, on
clusters without Kueue, the ValidatingAdmissionPolicy of its GPU pods (manifests/admission_policy.py).

NetworkPolicies (manifests/network.py): default-deny ingress but for the team's own pods and the cluster's
metrics scraper, and the cluster's ingress controller to inference pods when it declares one.

Queues, by backend:
- kueue: a namespaced LocalQueue (named like the namespace) pointing at `cluster.gang_queue`, or at the
  ClusterQueue `DEFAULT_CLUSTER_QUEUE` the platform is expected to create when it set none.
- kai: a cluster-scoped `scheduling.run.ai/v2` Queue per team. KAI admits workloads only into *leaf* queues,
  and `cluster.gang_queue` names the platform's parent queue, so each team gets a leaf under it. Its GPU
  quota (the fair share KAI divides by) is what KAI will count for the team's work: device-plugin whole GPUs plus
  the DRA devices of classes KAI charges to a queue (gangapi.kai_counts_device_class: `gpu.nvidia.com`, which on a
  DRA cluster holds whole-GPU, time-sliced and MPS claims alike). `mig.nvidia.com` is left out: KAI v0.17.0 never
  charges it, so a quota for it would be a share no pod can use. Hard limits stay in the namespace's
  ResourceQuota, the single enforcement point (and the only one DRA MIG has).
- volcano: a cluster-scoped `scheduling.volcano.sh/v1beta1` Queue per team, child of `cluster.gang_queue`
  when set, so teams get proportional shares instead of all landing in `default`. No capability: again the
  ResourceQuota caps.
- native / none: nothing; the native Workload API has no queue object.
"""

from __future__ import annotations

from gpu import gangapi
from gpu.vocabulary import KAI, KUEUE, VOLCANO

from .admission_policy import admission_policy_objects
from .devices import GPU
from .errors import RenderError
from .labels import team_labels
from .names import team_namespace, team_queue_name
from .network import build_network_policies
from .spec import ClusterProfile, TeamSpec

QUOTA_NAME = "gpu-quota"
DEFAULT_CLUSTER_QUEUE = "gpu-portal"
# Pods the portal renders meet the "baseline" Pod Security Standard; enforce it so nothing else slips in.
POD_SECURITY = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "baseline"}


def build_namespace(team: TeamSpec, cluster: ClusterProfile) -> dict:
    labels = {**team_labels(team.slug, cluster, team.cost_center), **POD_SECURITY}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team_namespace(team.slug), "labels": labels}}


def device_class_quota_key(device_class: str) -> str:
    """kubernetes/kubernetes pkg/quota/v1/evaluator/core/resource_claims.go (1.34-1.37): `V1ResourceByDeviceClass`
    is the class name + `corev1.ResourceClaimsPerClass` (".deviceclass.resource.k8s.io/devices"), charged with the
    `count` of every `exactly` request of a claim (and of claims the scheduler makes for extended resources)."""
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


def quota_key(resource: str) -> str:
    """The ResourceQuota key of an extended resource in `team.gpu_quota`: `requests.<name>` (extended resources
    cannot be overcommitted, so only requests are quota'd)."""
    if not resource.startswith("nvidia.com/"):
        raise RenderError(f"GPU quota resource {resource!r} is not an NVIDIA resource name (nvidia.com/...).")
    return f"requests.{resource}"


def build_resource_quota(team: TeamSpec, cluster: ClusterProfile) -> dict | None:
    """Device plugin resources as extended resources, DRA devices per DeviceClass: each key is counted by its own
    evaluator, so a cluster with pools of both models gets both kinds of keys in one quota."""
    hard: dict[str, int] = {}
    for resource, amount in sorted(team.gpu_quota.items()):
        if int(amount) < 0:
            raise RenderError(f"GPU quota for {resource} must not be negative (got {amount}).")
        hard[quota_key(resource)] = int(amount)
    for device_class, amount in sorted(team.dra_devices.items()):
        if int(amount) < 0:
            raise RenderError(f"DRA device quota for {device_class} must not be negative (got {amount}).")
        hard[device_class_quota_key(device_class)] = int(amount)
    if not hard:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": QUOTA_NAME,
            "namespace": team_namespace(team.slug),
            "labels": team_labels(team.slug, cluster, team.cost_center),
        },
        "spec": {"hard": {key: str(value) for key, value in hard.items()}},
    }


def build_local_queue(team: TeamSpec, cluster: ClusterProfile) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {
            "name": team_queue_name(team.slug),
            "namespace": team_namespace(team.slug),
            "labels": team_labels(team.slug, cluster),
        },
        "spec": {"clusterQueue": cluster.gang_queue or DEFAULT_CLUSTER_QUEUE},
    }


def kai_queue_gpus(team: TeamSpec) -> int:
    """The GPUs KAI counts for the team's work (module doc): device-plugin whole GPUs and the DRA devices of the
    classes KAI charges, summed (a cluster may have pools of both models)."""
    dra = sum(int(n) for device_class, n in team.dra_devices.items() if gangapi.kai_counts_device_class(device_class))
    return int(team.gpu_quota.get(GPU, 0)) + dra


def build_kai_queue(team: TeamSpec, cluster: ClusterProfile) -> dict:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec = {
        "displayName": team.slug,
        "resources": {
            "gpu": {"quota": kai_queue_gpus(team), "limit": -1, "overQuotaWeight": 1},
            "cpu": dict(unlimited),
            "memory": dict(unlimited),
        },
    }
    if cluster.gang_queue:
        spec["parentQueue"] = cluster.gang_queue
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": team_queue_name(team.slug), "labels": team_labels(team.slug, cluster)},
        "spec": spec,
    }


def build_volcano_queue(team: TeamSpec, cluster: ClusterProfile) -> dict:
    spec = {"weight": 1, "reclaimable": True}
    if cluster.gang_queue:
        spec["parent"] = cluster.gang_queue
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": team_queue_name(team.slug), "labels": team_labels(team.slug, cluster)},
        "spec": spec,
    }


QUEUE_BUILDERS = {KUEUE: build_local_queue, KAI: build_kai_queue, VOLCANO: build_volcano_queue}


def render_team(team: TeamSpec, cluster: ClusterProfile) -> list[dict]:
    """Namespace, ResourceQuota (when the team has GPU quota), NetworkPolicies and the gang backend's queue, in
    apply order: the policies exist before any workload of the team can start."""
    objects = [build_namespace(team, cluster)]
    quota = build_resource_quota(team, cluster)
    if quota:
        objects.append(quota)
    objects += build_network_policies(team, cluster, team_namespace(team.slug))
    # Without Kueue: the ValidatingAdmissionPolicy refusing GPU pods the portal did not approve, and its binding.
    objects += admission_policy_objects(team.slug, cluster, list(team.approved))
    queue_builder = QUEUE_BUILDERS.get(cluster.gang_scheduler)
    if queue_builder:
        objects.append(queue_builder(team, cluster))
    return objects
