"""Per-team objects: the namespace, its GPU ResourceQuota, its NetworkPolicies and the gang backend's queue.

NetworkPolicies (manifests/network.py): default-deny ingress but for the team's own pods and the cluster's
metrics scraper, and the cluster's ingress controller to inference pods when it declares one.

Queues, by backend:
- kueue: a namespaced LocalQueue (named like the namespace) pointing at `cluster.gang_queue`, or at the
  ClusterQueue `DEFAULT_CLUSTER_QUEUE` the platform is expected to create when it set none.
- kai: a cluster-scoped `scheduling.run.ai/v2` Queue per team. KAI admits workloads only into *leaf* queues,
  and `cluster.gang_queue` names the platform's parent queue, so each team gets a leaf under it. Its GPU
  quota (the fair share KAI divides by) is the team's whole-GPU quota; hard limits stay in the namespace's
  ResourceQuota, the single enforcement point.
- volcano: a cluster-scoped `scheduling.volcano.sh/v1beta1` Queue per team, child of `cluster.gang_queue`
  when set, so teams get proportional shares instead of all landing in `default`. No capability: again the
  ResourceQuota caps.
- native / none: nothing; the native Workload API has no queue object.
"""

from __future__ import annotations

from .devices import GPU, GPU_DEVICE_CLASS, GPU_SHARED, MIG_DEVICE_CLASS
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
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


def quota_key(resource: str, scheduling_model: str) -> str:
    """The ResourceQuota key for one GPU resource of `team.gpu_quota`.

    Device plugin: extended resources are quota'd as `requests.<name>`. DRA: claims are counted per device
    class; whole GPUs and time-sliced shares both allocate `gpu.nvidia.com` devices, every MIG profile a
    `mig.nvidia.com` device (per-profile DRA quota would need one DeviceClass per profile).
    """
    if not resource.startswith("nvidia.com/"):
        raise RenderError(f"GPU quota resource {resource!r} is not an NVIDIA resource name (nvidia.com/...).")
    if scheduling_model != "dra":
        return f"requests.{resource}"
    if resource in (GPU, GPU_SHARED):
        return device_class_quota_key(GPU_DEVICE_CLASS)
    if resource.startswith("nvidia.com/mig-"):
        return device_class_quota_key(MIG_DEVICE_CLASS)
    raise RenderError(f"GPU quota resource {resource!r} has no DRA device class to map to.")


def build_resource_quota(team: TeamSpec, cluster: ClusterProfile) -> dict | None:
    hard: dict[str, int] = {}
    for resource, amount in sorted(team.gpu_quota.items()):
        if int(amount) < 0:
            raise RenderError(f"GPU quota for {resource} must not be negative (got {amount}).")
        key = quota_key(resource, cluster.scheduling_model)
        hard[key] = hard.get(key, 0) + int(amount)
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


def build_kai_queue(team: TeamSpec, cluster: ClusterProfile) -> dict:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec = {
        "displayName": team.slug,
        "resources": {
            "gpu": {"quota": int(team.gpu_quota.get(GPU, 0)), "limit": -1, "overQuotaWeight": 1},
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


QUEUE_BUILDERS = {"kueue": build_local_queue, "kai": build_kai_queue, "volcano": build_volcano_queue}


def render_team(team: TeamSpec, cluster: ClusterProfile) -> list[dict]:
    """Namespace, ResourceQuota (when the team has GPU quota), NetworkPolicies and the gang backend's queue, in
    apply order: the policies exist before any workload of the team can start."""
    objects = [build_namespace(team, cluster)]
    quota = build_resource_quota(team, cluster)
    if quota:
        objects.append(quota)
    objects += build_network_policies(team, cluster, team_namespace(team.slug))
    queue_builder = QUEUE_BUILDERS.get(cluster.gang_scheduler)
    if queue_builder:
        objects.append(queue_builder(team, cluster))
    return objects
