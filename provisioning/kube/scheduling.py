"""Reads of what the schedulers say about waiting work: Kueue Workloads, gang PodGroups, and the Kueue visibility
API's pending workloads. Plain dicts, as the API server sends them.

The visibility API (kubernetes-sigs/kueue v0.19.2, `pkg/visibility/storage/storage.go`) serves
`clusterqueues/pendingworkloads` and `localqueues/pendingworkloads` in `visibility.kueue.x-k8s.io/v1beta2`
(`apis/visibility/v1beta2/groupversion_info.go`); the answer is a `PendingWorkloadsSummary` whose `items[]` carry
`positionInClusterQueue` and `positionInLocalQueue`, counted from 0 (`apis/visibility/v1beta2/types.go`).
"""
from __future__ import annotations

from typing import Any

from provisioning.kube.client import KubeClient, raw
from provisioning.kube.errors import kube_errors

KUEUE_WORKLOAD = ("kueue.x-k8s.io/v1beta2", "Workload")
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"


def list_objects(kube: KubeClient, api_version: str, kind: str, *, namespace: str) -> list[dict[str, Any]]:
    """Every object of a kind in one namespace (Workloads and PodGroups carry no labels of ours to select on)."""
    resource = kube.resource(api_version, kind)
    with kube_errors(f"list {kind} in {namespace}"):
        listed = kube.dynamic.get(resource, namespace=namespace, serializer=raw)
    return [{"apiVersion": api_version, "kind": kind, **item} for item in listed.get("items") or ()]


def owned_by(objects: list[dict[str, Any]], *, kind: str, name: str) -> dict[str, Any] | None:
    """The object whose owner reference is the named workload (how Kueue's job integration names its Workload)."""
    for obj in objects:
        for owner in (obj.get("metadata") or {}).get("ownerReferences") or ():
            if owner.get("kind") == kind and owner.get("name") == name:
                return obj
    return None


def pending_workloads(kube: KubeClient, *, namespace: str, local_queue: str) -> list[dict[str, Any]]:
    """The LocalQueue's pending workloads, in Kueue's order, with their positions."""
    path = f"{VISIBILITY}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads"
    with kube_errors(f"read pending workloads of {namespace}/{local_queue}"):
        answer = kube.dynamic.request("get", path, serializer=raw)
    return list((answer or {}).get("items") or ())


def list_cluster_queues(kube: KubeClient) -> list[dict[str, Any]]:
    """Every Kueue ClusterQueue (cluster-scoped)."""
    resource = kube.resource("kueue.x-k8s.io/v1beta2", "ClusterQueue")
    with kube_errors("list Kueue ClusterQueues"):
        listed = kube.dynamic.get(resource, serializer=raw)
    return list(listed.get("items") or ())


def cluster_queue_pending(kube: KubeClient, *, cluster_queue: str) -> list[dict[str, Any]]:
    """A ClusterQueue's pending workloads, in Kueue's order, with their positions (the whole queue, every team's)."""
    path = f"{VISIBILITY}/clusterqueues/{cluster_queue}/pendingworkloads"
    with kube_errors(f"read pending workloads of ClusterQueue {cluster_queue}"):
        answer = kube.dynamic.request("get", path, serializer=raw)
    return list((answer or {}).get("items") or ())
