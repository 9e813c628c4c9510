"""The Kubernetes applier: server-side apply of rendered objects, and deletion by label selector.

Objects go through the dynamic client (`CustomObjectsApi` decodes a 201 from an apply that creates a custom object
as None), one PATCH `application/apply-patch+yaml` each, with our field manager and `force=true`: the portal owns
the fields it renders, so a hand edit of one of them is taken back rather than reported as a conflict.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes.dynamic.resource import Resource

from provisioning.appliers.base import AppliedRef, KubeObject, require_selector
from provisioning.kube.client import ClusterConnection, KubeClient, format_label_selector, raw
from provisioning.kube.errors import KubeError, PermanentKubeError, kube_errors

# Owners of pods are deleted in the foreground: they disappear only once their pods are gone, so whoever waits for
# the owner to vanish knows the GPUs are free. Everything else goes in the background (the API default for
# batch/v1 Jobs is to orphan their pods, hence an explicit policy on every delete).
FOREGROUND_KINDS = frozenset({"Job", "Deployment", "StatefulSet", "ReplicaSet", "JobSet"})


def propagation_policy(kind: str) -> str:
    return "Foreground" if kind in FOREGROUND_KINDS else "Background"


def applied_ref(obj: Mapping[str, Any]) -> AppliedRef:
    meta = obj.get("metadata", {})
    return AppliedRef(
        api_version=obj.get("apiVersion", ""),
        kind=obj.get("kind", ""),
        namespace=meta.get("namespace") or "",
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
    )


def describe(api_version: str, kind: str, namespace: str | None, name: str) -> str:
    """"batch/v1 Job team-a/train-42": how objects are named in error messages."""
    return f"{api_version} {kind} {namespace + '/' if namespace else ''}{name}"


class KubernetesApplier:
    """Applies to and deletes from one cluster through its API server. Idempotent in both directions."""

    def __init__(self, connection: ClusterConnection, *, client: KubeClient | None = None) -> None:
        self.connection = connection
        self._owns_client = client is None
        self._kube = client or KubeClient(connection)

    def apply(self, objects: Sequence[KubeObject]) -> list[AppliedRef]:
        """Server-side apply each object in the order given (the renderer puts Namespaces first)."""
        return [self._apply_one(obj) for obj in objects]

    def delete(
        self, selector: Mapping[str, str], namespaces: Sequence[str], kinds: Sequence[tuple[str, str]]
    ) -> list[AppliedRef]:
        """Delete the objects of `kinds` (in that order) labelled with `selector`; what is gone already is skipped."""
        require_selector(selector)
        deleted: list[AppliedRef] = []
        for api_version, kind in kinds:
            resource = self._kube.resource(api_version, kind)
            for namespace in namespaces if resource.namespaced else [None]:
                for obj in self._list(resource, namespace, format_label_selector(selector)):
                    if self._delete_one(resource, obj):
                        deleted.append(applied_ref(obj))
        return deleted

    def close(self) -> None:
        """Close the connection pool, unless the KubeClient was lent by the caller."""
        if self._owns_client:
            self._kube.close()

    def _apply_one(self, obj: KubeObject) -> AppliedRef:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        meta = obj.get("metadata", {})
        resource = self._kube.resource(api_version, kind)
        namespace = meta.get("namespace") if resource.namespaced else None
        what = describe(api_version, kind, namespace, meta.get("name", ""))
        if resource.namespaced and not namespace:
            raise PermanentKubeError(f"apply {what}: a namespaced object needs metadata.namespace")
        with kube_errors(f"apply {what}"):
            live = self._kube.dynamic.server_side_apply(
                resource,
                body=dict(obj),
                namespace=namespace,
                field_manager=self.connection.field_manager,
                force_conflicts=True,
                serializer=raw,
            )
        return applied_ref(live)

    def _list(self, resource: Resource, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        with kube_errors(f"list {resource.group_version} {resource.kind} in {namespace or 'the cluster'}"):
            listed = self._kube.dynamic.get(
                resource, namespace=namespace, label_selector=label_selector, serializer=raw
            )
        return with_type_meta(listed, resource)

    def _delete_one(self, resource: Resource, obj: Mapping[str, Any]) -> bool:
        """Delete one listed object; False when it vanished or was replaced since it was listed."""
        meta = obj["metadata"]
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation_policy(resource.kind),
            # Only the object we listed: a namesake created since then is not ours to delete.
            "preconditions": {"uid": meta["uid"]},
        }
        what = describe(resource.group_version, resource.kind, meta.get("namespace"), meta["name"])
        try:
            with kube_errors(f"delete {what}"):
                self._kube.dynamic.delete(
                    resource, name=meta["name"], namespace=meta.get("namespace"), body=options, serializer=raw
                )
        except KubeError as exc:
            # 404: gone already. 409: the uid precondition failed, the name now belongs to another object.
            if exc.status in (404, 409):
                return False
            raise
        return True


def with_type_meta(listed: Mapping[str, Any], resource: Resource) -> list[dict[str, Any]]:
    """The items of a LIST answer, each with apiVersion and kind: API servers omit them on built-in kinds."""
    return [
        {"apiVersion": resource.group_version, "kind": resource.kind, **item} for item in listed.get("items") or []
    ]
