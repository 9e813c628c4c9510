"""Reads the status work needs: the server version, the portal's pods, and a bounded watch on those pods (nodes
and the other inventory reads, paged, are in provisioning.kube.inventory_reads).

Everything comes back as plain dicts (typed models reject the incomplete objects some clusters serve), each with
its apiVersion and kind filled in.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import watch

from provisioning.kube.apply import with_type_meta
from provisioning.kube.client import KubeClient, raw
from provisioning.kube.errors import kube_errors

# Extra read time beyond the server-side watch timeout before the client gives up on a silent connection.
WATCH_READ_MARGIN = 5.0


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]


def server_version(kube: KubeClient) -> str:
    """The API server's gitVersion, e.g. "v1.35.2"."""
    with kube_errors("read /version"):
        return kube.dynamic.version["kubernetes"]["gitVersion"]


def list_pods(kube: KubeClient, *, label_selector: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """Pods matching `label_selector`, in one namespace or all of them."""
    resource = kube.resource("v1", "Pod")
    with kube_errors(f"list pods in {namespace or 'all namespaces'}"):
        listed = kube.dynamic.get(resource, namespace=namespace, label_selector=label_selector, serializer=raw)
    return with_type_meta(listed, resource)


def watch_pods(
    kube: KubeClient,
    *,
    label_selector: str,
    namespace: str | None = None,
    timeout_seconds: int = 60,
    resource_version: str | None = None,
) -> Iterator[WatchEvent]:
    """Pod events until the server ends the watch after `timeout_seconds`; from `resource_version` if given
    (typically a LIST's), otherwise starting with an ADDED event for every existing pod."""
    resource = kube.resource("v1", "Pod")
    stream = watch.Watch().stream(
        resource.get,
        namespace=namespace,
        label_selector=label_selector,
        resource_version=resource_version,
        timeout_seconds=timeout_seconds,
        serialize=False,
        _request_timeout=(kube.connection.request_timeout, timeout_seconds + WATCH_READ_MARGIN),
    )
    with kube_errors(f"watch pods in {namespace or 'all namespaces'}"):
        for event in stream:
            obj = {"apiVersion": "v1", "kind": "Pod", **event["object"]}
            yield WatchEvent(type=event["type"], object=obj)


# --- status reconciliation (reconcile) --------------------------------------------------------------------------

LIST_PAGE_SIZE = 500


@dataclass(frozen=True)
class PodSnapshot:
    pods: list[dict[str, Any]]
    resource_version: str  # where a watch resumes to see every change after this list


def list_pods_snapshot(
    kube: KubeClient, *, label_selector: str, namespace: str | None = None, page_size: int = LIST_PAGE_SIZE
) -> PodSnapshot:
    """A consistent LIST of the pods matching `label_selector`, in pages of `page_size` (a server that does not
    paginate answers in one), with the resourceVersion a watch resumes from."""
    resource = kube.resource("v1", "Pod")
    pods: list[dict[str, Any]] = []
    token, version = None, ""
    while True:
        with kube_errors(f"list pods in {namespace or 'all namespaces'}"):
            page = kube.dynamic.get(resource, namespace=namespace, label_selector=label_selector, limit=page_size,
                                    _continue=token, serializer=raw)
        pods.extend(with_type_meta(page, resource))
        meta = page.get("metadata") or {}
        version = meta.get("resourceVersion") or version
        token = meta.get("continue")
        if not token:
            return PodSnapshot(pods=pods, resource_version=version)


