"""Reads inventory discovery needs, and the two node writes the MIG planner's execution makes.

In the style of `reads.py`: plain dicts with apiVersion and kind filled in, errors classified by `kube_errors`.
Nothing here knows about Django models.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpu.gangapi import API_GROUPS
from gpu.vocabulary import NATIVE
from provisioning.kube.apply import with_type_meta
from provisioning.kube.client import KubeClient, raw
from provisioning.kube.errors import PermanentKubeError, kube_errors

# Pods still holding (or about to hold) their devices: everything not finished.
ACTIVE_POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
LIST_PAGE_SIZE = 500

# API groups whose presence means a gang scheduler is installed (reference §5-§8).
GANG_GROUPS = {group: backend for backend, group in API_GROUPS.items() if backend != NATIVE}
NATIVE_GANG_GROUP = API_GROUPS[NATIVE]  # v1 serves only PriorityClass; the Workload API is v1alpha1/v1alpha2/v1beta1


@dataclass(frozen=True)
class InstalledGangScheduler:
    backend: str  # volcano | kai | kueue | native
    api_group: str
    versions: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "api_group": self.api_group, "versions": list(self.versions)}


def _list_all(kube: KubeClient, api_version: str, kind: str, context: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a LIST, following `continue` tokens page by page."""
    resource = kube.resource(api_version, kind)
    items: list[dict[str, Any]] = []
    token = None
    with kube_errors(context):
        while True:
            listed = kube.dynamic.get(resource, limit=LIST_PAGE_SIZE, _continue=token, serializer=raw, **params)
            items.extend(with_type_meta(listed, resource))
            token = (listed.get("metadata") or {}).get("continue")
            if not token:
                return items


def list_all_nodes(kube: KubeClient) -> list[dict[str, Any]]:
    return _list_all(kube, "v1", "Node", "list nodes")


def list_active_pods(kube: KubeClient) -> list[dict[str, Any]]:
    """Non-terminated pods in every namespace (the caller keeps those that hold GPUs)."""
    return _list_all(kube, "v1", "Pod", "list pods in all namespaces", field_selector=ACTIVE_POD_FIELD_SELECTOR)


def list_pods_on_node(kube: KubeClient, node_name: str) -> list[dict[str, Any]]:
    """Non-terminated pods bound to one node."""
    return _list_all(
        kube, "v1", "Pod", f"list pods on node {node_name}",
        field_selector=f"spec.nodeName={node_name},{ACTIVE_POD_FIELD_SELECTOR}",
    )  # fmt: skip


def served_group_versions(kube: KubeClient) -> dict[str, list[str]]:
    """API discovery: {group: [versions]} from GET /apis (the core group is left out)."""
    with kube_errors("API discovery (/apis)"):
        groups = kube.dynamic.request("get", "/apis", serializer=raw)
    return {
        group["name"]: [entry["version"] for entry in group.get("versions") or []]
        for group in (groups or {}).get("groups") or []
    }


def _serves_kind(kube: KubeClient, group: str, version: str, plural: str) -> bool:
    with kube_errors(f"API discovery ({group}/{version})"):
        listed = kube.dynamic.request("get", f"/apis/{group}/{version}", serializer=raw)
    return any(entry.get("name") == plural for entry in (listed or {}).get("resources") or [])


ADMISSION_GROUP = "admissionregistration.k8s.io"


def serves_admission_policies(kube: KubeClient, groups: Mapping[str, list[str]]) -> bool:
    """Does the API server serve `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy (GA since 1.30; kubernetes/api
    v0.35.0 `admissionregistration/v1/types.go`)? The group's v1 also serves webhooks, so the resource is looked for."""
    if "v1" not in groups.get(ADMISSION_GROUP, []):
        return False
    return _serves_kind(kube, ADMISSION_GROUP, "v1", "validatingadmissionpolicies")


def installed_gang_schedulers(kube: KubeClient, groups: Mapping[str, list[str]] | None = None) -> list[InstalledGangScheduler]:
    """Gang schedulers whose APIs the cluster serves: their CRD groups, and the native Workload API versions."""
    groups = served_group_versions(kube) if groups is None else groups
    found = [
        InstalledGangScheduler(backend, group, tuple(groups[group]))
        for group, backend in sorted(GANG_GROUPS.items(), key=lambda item: item[1])
        if groups.get(group)
    ]
    workload_versions = tuple(
        version
        for version in groups.get(NATIVE_GANG_GROUP, [])
        if version != "v1" and _serves_kind(kube, NATIVE_GANG_GROUP, version, "workloads")
    )
    if workload_versions:
        found.append(InstalledGangScheduler(NATIVE, NATIVE_GANG_GROUP, workload_versions))
    return sorted(found, key=lambda item: item.backend)


def list_resource_slices(kube: KubeClient) -> list[dict[str, Any]]:
    """DRA ResourceSlices (`resource.k8s.io/v1`, GA in 1.34); [] when the cluster does not serve them."""
    try:
        return _list_all(kube, "resource.k8s.io/v1", "ResourceSlice", "list ResourceSlices")
    except PermanentKubeError as exc:
        if "does not serve" in str(exc):
            return []
        raise


def list_resource_claims(kube: KubeClient) -> list[dict[str, Any]]:
    """Every ResourceClaim (their `status.allocation` says which devices are taken); [] without DRA."""
    try:
        return _list_all(kube, "resource.k8s.io/v1", "ResourceClaim", "list ResourceClaims")
    except PermanentKubeError as exc:
        if "does not serve" in str(exc):
            return []
        raise


def list_device_classes(kube: KubeClient) -> list[dict[str, Any]]:
    """DRA DeviceClasses (cluster-scoped; `spec.extendedResourceName` says which serve extended resources, KEP-5004);
    [] without DRA."""
    try:
        return _list_all(kube, "resource.k8s.io/v1", "DeviceClass", "list DeviceClasses")
    except PermanentKubeError as exc:
        if "does not serve" in str(exc):
            return []
        raise


def get_node(kube: KubeClient, name: str) -> dict[str, Any]:
    resource = kube.resource("v1", "Node")
    with kube_errors(f"read node {name}"):
        node = kube.dynamic.get(resource, name=name, serializer=raw)
    return {"apiVersion": "v1", "kind": "Node", **node}


def patch_node(
    kube: KubeClient,
    name: str,
    *,
    labels: Mapping[str, str | None] | None = None,
    unschedulable: bool | None = None,
) -> dict[str, Any]:
    """JSON merge patch of a node's labels (None removes one) and/or `spec.unschedulable` (cordon). A merge patch
    touches only the keys it names, so labels other controllers own (GFD, mig-manager) are left alone."""
    body: dict[str, Any] = {}
    if labels:
        body["metadata"] = {"labels": dict(labels)}
    if unschedulable is not None:
        # `false` is sent as null: an uncordoned node carries no unschedulable field, as after `kubectl uncordon`.
        body["spec"] = {"unschedulable": True if unschedulable else None}
    if not body:
        raise ValueError("patch_node needs labels or unschedulable")
    resource = kube.resource("v1", "Node")
    with kube_errors(f"patch node {name}"):
        node = kube.dynamic.patch(
            resource, body=body, name=name, content_type="application/merge-patch+json", serializer=raw
        )
    return {"apiVersion": "v1", "kind": "Node", **node}


def iter_gpu_pods(pods: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The pods of a listing that ask for NVIDIA extended resources or DRA claims."""
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("resourceClaims"):
            yield pod
            continue
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            resources = container.get("resources") or {}
            names = set((resources.get("limits") or {})) | set((resources.get("requests") or {}))
            if any(name.startswith("nvidia.com/") for name in names):
                yield pod
                break
