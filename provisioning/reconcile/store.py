"""What one worker knows of a cluster's pods between two LISTs: each portal pod as its facts (`facts.pod_fact`),
grouped by request, never the pods themselves. Pure: no Django, no I/O.

A decoded pod is some 20 KB of Python objects (labels, managedFields, the whole spec); its facts are under 1 KB, and
less again once the values many pods repeat (namespace, node, phase, image, reasons, the scheduler's message) are
kept once. So a LIST is read a page at a time into a store and each page is dropped before the next one is decoded
(`add`), and the watch between two LISTs folds its events into the same store (`apply`): what a worker holds grows
with the pods only by their facts. This is what client-go's informers do with a transform that strips objects to
what the controller needs (kubernetes/client-go `tools/cache/reflector.go`, `tools/pager/pager.go`).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields, is_dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from .facts import PodFact, pod_fact, request_id_of

# A pod's own values: sharing them would only cost the sharing table's entry.
_UNIQUE_FIELDS = frozenset({"uid", "name", "raw_finished_at", "unschedulable_since"})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # per dataclass, the fields whose values may be shared
_DATACLASSES: dict[type, bool] = {}
_LEAVES = frozenset({type(None), bool, int, float, datetime})  # values never shared nor looked into


def _holds_facts(kind: type) -> bool:
    known = _DATACLASSES.get(kind)
    if known is None:
        known = _DATACLASSES[kind] = is_dataclass(kind)
    return known


def _fact_order(fact: PodFact) -> tuple:
    # The order facts_by_request gives a request's facts: by Job index, then name.
    return (fact.completion_index if fact.completion_index is not None else -1, fact.name)


class PodStore(Mapping[int, list[PodFact]]):
    """Request id -> the facts of its pods (sorted as `facts_by_request` sorts them), plus where a watch resumes.

    Pods are keyed by uid within their request. A pod's request comes from its labels, which the renderer puts on the
    pod template: they do not change during a pod's life."""

    def __init__(self, *, label_domain: str, resource_version: str = "", listed_at: float = 0.0) -> None:
        self.label_domain = label_domain
        self.resource_version = resource_version  # of the LIST, then of the last watch event folded in
        self.listed_at = listed_at
        self._by_request: dict[int, dict[str, PodFact]] = {}
        self._shared: dict[Any, Any] = {}
        self.pods = 0

    # -- filling it --------------------------------------------------------------------------------------------

    def add(self, pod: Mapping[str, Any]) -> int | None:
        """Keep one pod (from a LIST page, or an ADDED/MODIFIED event) as its facts; returns its request id, None
        for a pod that is not the portal's."""
        request_id = request_id_of(pod, self.label_domain)
        if request_id is None:
            return None
        fact = self._share_fields(pod_fact(pod, request_id=request_id, label_domain=self.label_domain))
        pods = self._by_request.setdefault(request_id, {})
        self.pods += fact.uid not in pods
        pods[fact.uid] = fact
        return request_id

    def apply(self, event_type: str, pod: Mapping[str, Any]) -> int | None:
        """Fold one watch event in; returns the request whose pods changed (None for a bookmark or another pod)."""
        meta = pod.get("metadata") or {}
        self.resource_version = meta.get("resourceVersion") or self.resource_version
        if event_type == "BOOKMARK":
            return None
        if event_type != "DELETED":
            return self.add(pod)
        uid = meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        request_id = request_id_of(pod, self.label_domain)
        # A pod that left the selection by losing its labels: find it where it was.
        owners = [request_id] if request_id is not None else [r for r, p in self._by_request.items() if uid in p]
        for owner in owners:
            pods = self._by_request.get(owner)
            if pods is not None and pods.pop(uid, None) is not None:
                self.pods -= 1
                if not pods:
                    del self._by_request[owner]
                return owner
        return None

    def _share_fields(self, fact: Any) -> Any:
        """Make each repeated value of `fact` (a PodFact, and the ContainerFacts and Terminations in it) the one
        copy kept, field by field whatever the fields are. In place: the facts are frozen for their readers, but
        nobody has seen these yet, and building them again would cost more than building them did."""
        kind = type(fact)
        names = _FIELD_NAMES.get(kind)
        if names is None:
            unique = _UNIQUE_FIELDS if kind is PodFact else frozenset()
            names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(fact) if f.name not in unique)
        shared = self._shared
        for name in names:
            value = getattr(fact, name)
            kind_of_value = type(value)
            if kind_of_value is str or kind_of_value is Decimal:
                object.__setattr__(fact, name, shared.setdefault(value, value))
            elif kind_of_value in _LEAVES:
                continue
            elif kind_of_value is tuple:
                for item in value:
                    if _holds_facts(type(item)):
                        self._share_fields(item)
            elif _holds_facts(kind_of_value):
                self._share_fields(value)
        return fact

    # -- reading it (a Mapping: request id -> its facts) -------------------------------------------------------

    def __getitem__(self, request_id: int) -> list[PodFact]:
        return sorted(self._by_request[request_id].values(), key=_fact_order)

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_request)

    def __len__(self) -> int:
        return len(self._by_request)

    def pods_of(self, request_ids) -> dict[int, list[PodFact]]:
        return {rid: self[rid] for rid in request_ids if rid in self._by_request}

    def counts(self) -> dict[int, int]:
        """How many pods each request has (without sorting their facts)."""
        return {request_id: len(pods) for request_id, pods in self._by_request.items()}
