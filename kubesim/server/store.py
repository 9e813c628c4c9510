"""The fake API server's store: objects by (resource, namespace, name) in kmock's store, history included; the
resourceVersion counter; the event log watches read; and deletion with finalizers and a synchronous stand-in for
the garbage collector (propagationPolicy Orphan, Background, Foreground)."""
from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kmock
from kmock._internal import rendering

from kubesim.resources import ServedResource
from kubesim.server.http import now

ObjectKey = tuple[kmock.resource, str | None, str]
NAMESPACES = kmock.resource("", "v1", "namespaces")
PODS = kmock.resource("", "v1", "pods")


@dataclass(frozen=True)
class StoredEvent:
    resource_version: int
    resource: kmock.resource
    type: str  # ADDED | MODIFIED | DELETED
    old: dict[str, Any] | None
    new: dict[str, Any]


def desired_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What metadata.generation counts changes of: everything but metadata and status."""
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


class StoreMixin:
    """The store half of KubeEmulator (its attrs fields `_objects`, `_events`, `_new_events`,
    `_last_resource_version`)."""

    def _live(self, key: ObjectKey) -> dict[str, Any] | None:
        if key not in self._objects or self._objects[key].deleted:
            return None
        return copy.deepcopy(self._objects[key].raw)

    def _live_items(self, served: ServedResource | None = None) -> list[tuple[ObjectKey, dict[str, Any]]]:
        """Existing objects (of one resource), ordered by namespace and name like etcd keys."""
        items = [
            (key, copy.deepcopy(obj.raw))
            for key, obj in self._objects.items()
            if not obj.deleted and (served is None or key[0] == served.key)
        ]
        return sorted(items, key=lambda item: (item[0][1] or "", item[0][2]))

    def _save(self, key: ObjectKey, new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        new["metadata"]["resourceVersion"] = str(self._next_resource_version())
        if key in self._objects:
            self._objects[key].history.append(copy.deepcopy(new))
        else:
            self._objects[key] = copy.deepcopy(new)
        self._emit("ADDED" if old is None else "MODIFIED", key, old, new)
        return new

    def _remove(self, key: ObjectKey, live: dict[str, Any]) -> dict[str, Any]:
        gone = copy.deepcopy(live)
        gone["metadata"]["resourceVersion"] = str(self._next_resource_version())
        self._objects[key].delete()
        self._emit("DELETED", key, live, gone)
        return gone

    def _next_resource_version(self) -> int:
        self._last_resource_version += 1
        return self._last_resource_version

    def _emit(self, type_: str, key: ObjectKey, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        event = StoredEvent(self._last_resource_version, key[0], type_, copy.deepcopy(old), copy.deepcopy(new))
        self._events.append(event)
        # Wake every watcher waiting now; later waiters get a fresh event to wait on.
        self._new_events.set()
        self._new_events = asyncio.Event()

    @staticmethod
    def _manager(request: rendering.Request) -> str:
        # Without fieldManager, the API server names the manager after the client's user agent.
        return request.params.get("fieldManager") or request.headers.get("User-Agent", "unknown").split("/")[0]


    def _update(self, key: ObjectKey, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        if "generation" in old["metadata"] and desired_state(old) != desired_state(new):
            new["metadata"]["generation"] = old["metadata"]["generation"] + 1
        saved = self._save(key, new, old)
        meta = saved["metadata"]
        # A pod deleted with a grace period stays until its kubelet has stopped it (kubesim.preemption).
        graceful = key[0] == PODS and meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not graceful:
            return self._delete(key, saved, "Background")[0]  # the last finalizer is gone
        return saved

    def _delete(self, key: ObjectKey, live: dict[str, Any], policy: str) -> tuple[dict[str, Any], bool]:
        """Delete now, or mark for deletion while finalizers remain; True in the second place when pending."""
        meta = live["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return live, True
            marked = copy.deepcopy(live)
            marked["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
            return self._save(key, marked, live), True
        if key[0] == NAMESPACES:  # the namespace controller empties a namespace before it goes
            for inner_key in [k for k, _ in self._live_items() if k[1] == key[2]]:
                if (obj := self._live(inner_key)) is not None:
                    self._delete(inner_key, obj, "Background")
        self._collect_dependents(meta["uid"], policy)
        return self._remove(key, live), False

    def _collect_dependents(self, owner_uid: str, policy: str) -> None:
        """What the garbage collector does after an owner is deleted, done at once."""
        for key, _ in self._live_items():
            obj = self._live(key)  # an earlier cascade may have deleted it
            if obj is None:
                continue
            refs = obj["metadata"].get("ownerReferences") or []
            remaining = [ref for ref in refs if ref.get("uid") != owner_uid]
            if len(remaining) == len(refs):
                continue
            if policy == "Orphan" or remaining:
                orphan = copy.deepcopy(obj)
                orphan["metadata"]["ownerReferences"] = remaining
                if not remaining:
                    del orphan["metadata"]["ownerReferences"]
                self._save(key, orphan, obj)
            else:
                self._delete(key, obj, "Background")

