"""Reads: GET of one object, LIST and WATCH with label and field selectors.

LIST answers the matching objects with the store's current resourceVersion, in pages when asked (`limit`/`continue`,
each list one snapshot; compacted history answers 410 Expired: kubesim/paging.py); WATCH sends the current
objects as ADDED (no resourceVersion, or "0") or the events after a given resourceVersion, then live events until
`timeoutSeconds`. An object entering or leaving a watcher's selection is ADDED or DELETED to it, as on a real
server.
"""
from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp.web
from kmock._internal import rendering

from kubesim import apimachinery, paging
from kubesim.resources import ServedResource
from kubesim.server.http import bad_request, not_found, reply
from kubesim.server.store import StoredEvent

WATCH_DEFAULT_TIMEOUT = 1800.0  # seconds, when a watch names no timeoutSeconds


class ReadsMixin:
    """GET, LIST and WATCH of KubeEmulator."""

    def _read(self, served: ServedResource, namespace: str | None, name: str) -> dict[str, Any]:
        live = self._live((served.key, namespace, name))
        if live is None:
            raise not_found(served, name)
        return live

    def _selection(self, request: rendering.Request, served: ServedResource) -> Callable[[Mapping], bool]:
        """The request's namespace, label and field selectors as one predicate (400 when they do not parse)."""
        try:
            labels = apimachinery.parse_label_selector(request.params.get("labelSelector"))
            fields = apimachinery.parse_field_selector(request.params.get("fieldSelector"), served.plural)
        except apimachinery.SelectorError as exc:
            raise bad_request(str(exc)) from None

        def selected(obj: Mapping[str, Any]) -> bool:
            in_namespace = request.namespace is None or obj["metadata"].get("namespace") == request.namespace
            return in_namespace and apimachinery.labels_match(labels, obj) and apimachinery.fields_match(fields, obj)

        return selected

    def _reply_read(self, request: rendering.Request, served: ServedResource, body: dict[str, Any]) -> aiohttp.web.Response:
        return reply(body)

    def _list(self, request: rendering.Request, served: ServedResource) -> dict[str, Any]:
        selected = self._selection(request, served)
        try:
            page = paging.list_page(
                request.params, current=self._last_resource_version, compacted=self._compacted,
                items_at=functools.partial(self._items_at, served), selected=selected,
                has_selector=bool(request.params.get("labelSelector") or request.params.get("fieldSelector")))
        except paging.InvalidList as exc:
            raise bad_request(str(exc)) from None
        items = page.items
        if not served.custom:  # real servers leave TypeMeta off the items of built-in kinds
            items = [{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")} for obj in items]
        return {**self._list_body(served, items), "metadata": page.metadata()}

    def _items_at(self, served: ServedResource, revision: int) -> list[paging.Keyed]:
        """The resource's objects as they were at `revision` (now, or rewound through the events since)."""
        items = [(paging.object_key(obj), obj) for _, obj in self._live_items(served)]
        changes = [] if revision >= self._last_resource_version else [
            (e.type, paging.object_key(e.new), e.old, e.new) for e in self._events
            if e.resource == served.key and e.resource_version > revision]
        return paging.rewind(items, changes)

    def compact(self, revision: int | None = None) -> int:
        """Forget the history up to `revision` (default: now), as etcd's compaction does; returns it."""
        self._compacted = max(self._compacted, self._last_resource_version if revision is None else revision)
        return self._compacted

    def _list_body(self, served: ServedResource, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "kind": f"{served.kind}List",
            "apiVersion": served.api_version,
            "metadata": {"resourceVersion": str(self._last_resource_version)},
            "items": items,
        }

    async def _watch(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.StreamResponse:
        selected = self._selection(request, served)
        timeout = float(request.params.get("timeoutSeconds") or WATCH_DEFAULT_TIMEOUT)
        since = request.params.get("resourceVersion") or None
        if since is not None and not since.isdigit():
            raise bad_request(f"invalid resourceVersion {since!r}")
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request._raw_request)
        try:
            async for event in self._watch_events(served, selected, since, timeout):
                await response.write(json.dumps(event).encode() + b"\n")
            await response.write_eof()
        except ConnectionError:
            pass  # the client went away
        return response

    async def _watch_events(
        self, served: ServedResource, selected: Callable[[Mapping], bool], since: str | None, timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        """Events after resourceVersion `since` (or ADDED for what exists now), until `timeout` seconds pass."""
        deadline = asyncio.get_running_loop().time() + timeout
        expired = paging.watch_expired(int(since), self._compacted) if since not in (None, "0") else None
        if expired:
            yield expired
            return
        if since in (None, "0"):
            cursor = len(self._events)
            for _, obj in self._live_items(served):
                if selected(obj):
                    yield {"type": "ADDED", "object": obj}
        else:
            after = int(since)
            cursor = next((i for i, e in enumerate(self._events) if e.resource_version > after), len(self._events))
        while True:
            while cursor < len(self._events):
                event, cursor = self._events[cursor], cursor + 1
                if event.resource == served.key and (shown := _as_seen_through(event, selected)):
                    yield shown
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            try:
                await asyncio.wait_for(self._new_events.wait(), remaining)
            except TimeoutError:
                return



def _as_seen_through(event: StoredEvent, selected: Callable[[Mapping], bool]) -> dict[str, Any] | None:
    """The event a watcher with this selection sees: an object entering it is ADDED, one leaving it DELETED."""
    was = event.old is not None and selected(event.old)
    now = selected(event.new)
    if event.type == "DELETED":
        return {"type": "DELETED", "object": event.new} if was or now else None
    if was and now:
        return {"type": "MODIFIED", "object": event.new}
    if now:
        return {"type": "ADDED", "object": event.new}
    if was:
        return {"type": "DELETED", "object": event.new}
    return None


