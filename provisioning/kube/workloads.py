"""Kueue reads and writes of the portal's admission check controller: list and watch Workloads in every
namespace, merge-patch a Workload's or the AdmissionCheck's `/status` subresource. Plain dicts in and out.

A status merge patch replaces lists whole, so the caller sends the full `admissionChecks` list as it read it
(only the portal's entry changed) together with that read's `metadata.resourceVersion`: the API server answers
409 if Kueue or another check controller wrote in between, and the next pass reads again.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import watch

from provisioning.kube.apply import with_type_meta
from provisioning.kube.client import KubeClient, raw
from provisioning.kube.errors import KubeError, kube_errors
from provisioning.kube.reads import WATCH_READ_MARGIN, WatchEvent

KUEUE_API = "kueue.x-k8s.io/v1beta2"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class WorkloadSnapshot:
    workloads: list[dict[str, Any]]
    resource_version: str  # where a watch resumes to see every change after this list


def list_workloads(kube: KubeClient) -> WorkloadSnapshot:
    resource = kube.resource(KUEUE_API, "Workload")
    with kube_errors("list Kueue workloads in all namespaces"):
        listed = kube.dynamic.get(resource, serializer=raw)
    return WorkloadSnapshot(workloads=with_type_meta(listed, resource),
                            resource_version=(listed.get("metadata") or {}).get("resourceVersion", ""))


def watch_workloads(kube: KubeClient, *, resource_version: str, timeout_seconds: int) -> Iterator[WatchEvent]:
    """Workload events after `resource_version` until the server ends the watch."""
    resource = kube.resource(KUEUE_API, "Workload")
    stream = watch.Watch().stream(
        resource.get, resource_version=resource_version, timeout_seconds=timeout_seconds, serialize=False,
        _request_timeout=(kube.connection.request_timeout, timeout_seconds + WATCH_READ_MARGIN),
    )
    with kube_errors("watch Kueue workloads in all namespaces"):
        for event in stream:
            yield WatchEvent(type=event["type"], object={"apiVersion": KUEUE_API, "kind": "Workload", **event["object"]})


def _patch_status(kube: KubeClient, kind: str, obj: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    status_resource = kube.resource(KUEUE_API, kind).subresources["status"]
    body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": dict(status)}
    where = f"{meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta['name']}"
    with kube_errors(f"patch the status of {kind} {where}"):
        return kube.dynamic.patch(status_resource, body=body, name=meta["name"], namespace=meta.get("namespace"),
                                  content_type=MERGE_PATCH, serializer=raw)


def patch_workload_checks(kube: KubeClient, workload: Mapping[str, Any], checks: list[dict]) -> dict[str, Any]:
    return _patch_status(kube, "Workload", workload, {"admissionChecks": checks})


def read_admission_check(kube: KubeClient, name: str) -> dict[str, Any]:
    resource = kube.resource(KUEUE_API, "AdmissionCheck")
    with kube_errors(f"read AdmissionCheck {name}"):
        return kube.dynamic.get(resource, name=name, serializer=raw)


def find_pod(kube: KubeClient, namespace: str, name: str, label_selector: str) -> dict[str, Any] | None:
    """One pod by name among the pods a selector lists in a namespace (the portal may list pods, not get one)."""
    with kube_errors(f"list pods {label_selector} in {namespace}"):
        listed = kube.dynamic.get(kube.resource("v1", "Pod"), namespace=namespace, label_selector=label_selector,
                                  serializer=raw)
    return next((p for p in listed.get("items") or [] if (p.get("metadata") or {}).get("name") == name), None)


def read_cluster_queue(kube: KubeClient, name: str) -> dict[str, Any] | None:
    """The ClusterQueue, or None when the cluster has none of that name."""
    resource = kube.resource(KUEUE_API, "ClusterQueue")
    try:
        with kube_errors(f"read ClusterQueue {name}"):
            return kube.dynamic.get(resource, name=name, serializer=raw)
    except KubeError as exc:
        if exc.status == 404:
            return None
        raise


def patch_admission_check_conditions(kube: KubeClient, check: Mapping[str, Any], conditions: list[dict]) -> dict:
    return _patch_status(kube, "AdmissionCheck", check, {"conditions": conditions})
