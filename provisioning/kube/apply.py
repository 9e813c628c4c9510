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
from provisioning.contract import DEFAULT_LABEL_DOMAIN
from provisioning.manifests.labels import owner_annotation_key
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


def owner_of(obj: Mapping[str, Any], annotation: str) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the owner the renderer named in `annotation`, or None."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(annotation, "")
    parts = value.split()
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def with_owner(obj: Mapping[str, Any], owner: tuple[str, str, str], uid: str) -> dict[str, Any]:
    """A copy of `obj` owned by `owner` (not as its controller: the Job controller must not adopt it)."""
    api_version, kind, name = owner
    meta = {**obj["metadata"], "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": name,
                                                    "uid": uid}]}
    return {**obj, "metadata": meta}


class KubernetesApplier:
    """Applies to and deletes from one cluster through its API server. Idempotent in both directions."""

    def __init__(
        self, connection: ClusterConnection, *, client: KubeClient | None = None, label_domain: str = DEFAULT_LABEL_DOMAIN
    ) -> None:
        self.connection = connection
        self._owns_client = client is None
        self._kube = client or KubeClient(connection)
        self._owner_annotation = owner_annotation_key(label_domain)

    def apply(self, objects: Sequence[KubeObject]) -> list[AppliedRef]:
        """Server-side apply each object in the order given (the renderer puts Namespaces first).

        An object whose owner annotation names another object (gang objects name their Job) gets `ownerReferences`
        with the owner's uid. Gang objects come before their Job (the scheduler needs the group when the pods
        appear), so on a first apply the owner does not exist yet: those objects are applied again once it does.
        On later applies the owner's uid is read first, so the objects are sent once and unchanged."""
        refs: list[AppliedRef] = []
        uids: dict[tuple[str, str, str, str], str] = {}
        waiting: list[tuple[int, KubeObject, tuple[str, str, str]]] = []
        for obj in objects:
            owner = owner_of(obj, self._owner_annotation)
            namespace = (obj.get("metadata") or {}).get("namespace") or ""
            if owner is not None:
                uid = uids.get((namespace, *owner)) or self._live_uid(owner, namespace)
                if uid:
                    obj = with_owner(obj, owner, uid)
                else:
                    waiting.append((len(refs), obj, owner))
            ref = self._apply_one(obj)
            uids[(ref.namespace, ref.api_version, ref.kind, ref.name)] = ref.uid
            refs.append(ref)
        for index, obj, owner in waiting:
            namespace = obj["metadata"].get("namespace") or ""
            uid = uids.get((namespace, *owner))
            if uid:
                refs[index] = self._apply_one(with_owner(obj, owner, uid))
        return refs

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

    def _live_uid(self, owner: tuple[str, str, str], namespace: str) -> str:
        """The uid of the named owner if it exists already, else ""."""
        api_version, kind, name = owner
        resource = self._kube.resource(api_version, kind)
        what = describe(api_version, kind, namespace, name)
        try:
            with kube_errors(f"read {what}"):
                live = self._kube.dynamic.get(
                    resource, name=name, namespace=namespace if resource.namespaced else None, serializer=raw
                )
        except KubeError as exc:
            if exc.status == 404:
                return ""
            raise
        return (live.get("metadata") or {}).get("uid", "")

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
