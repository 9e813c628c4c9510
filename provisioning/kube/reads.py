"""Reads the status work needs: the server version, the portal's pods, and a bounded watch on those pods (nodes
and the other inventory reads, paged, are in provisioning.kube.inventory_reads).

Everything comes back as plain dicts (typed models reject the incomplete objects some clusters serve), each with
its apiVersion and kind filled in.
"""
from __future__ import annotations

import functools
import json
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import msgspec
from kubernetes import watch

from provisioning.kube.apply import with_type_meta
from provisioning.kube.client import KubeClient, raw
from provisioning.kube.errors import PermanentKubeError, TransientKubeError, kube_errors

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
    bookmarks: bool = False,
) -> Iterator[WatchEvent]:
    """Pod events until the server ends the watch after `timeout_seconds`; from `resource_version` if given
    (typically a LIST's), otherwise starting with an ADDED event for every existing pod. With `bookmarks`, the
    server may send BOOKMARK events that only move the resourceVersion on (client-go's reflector asks for them:
    a resumed watch then starts from a recent revision even when nothing of ours changed). A compacted
    `resource_version` ends the stream with a 410 (`is_expired`)."""
    resource = kube.resource("v1", "Pod")
    extra = {"allow_watch_bookmarks": True} if bookmarks else {}
    stream = watch.Watch().stream(
        resource.get,
        namespace=namespace,
        label_selector=label_selector,
        resource_version=resource_version,
        timeout_seconds=timeout_seconds,
        **extra,
        serialize=False,
        _request_timeout=(kube.connection.request_timeout, timeout_seconds + WATCH_READ_MARGIN),
    )
    with kube_errors(f"watch pods in {namespace or 'all namespaces'}"):
        for event in stream:
            obj = {"apiVersion": "v1", "kind": "Pod", **event["object"]}
            yield WatchEvent(type=event["type"], object=obj)


# --- status reconciliation (reconcile) --------------------------------------------------------------------------

# client-go's default page size (kubernetes/client-go tools/pager/pager.go, defaultPageSize).
LIST_PAGE_SIZE = 500


@dataclass(frozen=True)
class PodPage:
    pods: list[dict[str, Any]]  # as the API server sent them (built-in kinds: without apiVersion and kind)
    resource_version: str  # of the whole list: every page is served at the first page's revision


# Pages fetched ahead of the one the caller reads (client-go's pager buffers up to 10).
PAGES_AHEAD = 2


class _ListMetadata(TypedDict, total=False):
    metadata: dict[str, Any] | None


_LIST_META = msgspec.json.Decoder(_ListMetadata)  # a page's metadata; its items are skipped, not decoded


@functools.lru_cache(maxsize=8)
def _page_decoder(fields: type) -> msgspec.json.Decoder:
    """A decoder of PodList pages that builds, of each pod, only the keys `fields` (a TypedDict) names."""
    page = TypedDict("PodListPage", {"metadata": dict[str, Any] | None, "items": list[fields] | None}, total=False)
    return msgspec.json.Decoder(page)


def pod_pages(
    kube: KubeClient, *, label_selector: str, namespace: str | None = None, page_size: int = LIST_PAGE_SIZE,
    fields: type | None = None,
) -> Iterator[PodPage]:
    """A LIST of the pods matching `label_selector`, one page of at most `page_size` at a time, the way client-go's
    ListPager fetches one (kubernetes/client-go tools/pager/pager.go): `limit`, then the `continue` token of each
    page until there is none; no resourceVersion, so the first page is a quorum read the server paginates (the
    reflector's own note, tools/cache/reflector.go `list`: with resourceVersion "0" the watch cache ignores
    `limit`). Each page is decoded when the caller asks for it and dropped when it asks for the next, so the caller
    decides what it keeps; meanwhile a thread fetches up to `PAGES_AHEAD` more, as the pager's
    eachListChunkBuffered does, so the network and the server's time overlap the caller's. A server that does not
    paginate answers in one page. An expired continue token raises the 410 as a KubeError (`is_expired`): the
    caller lists again from the start.

    With `fields` (a TypedDict of the pod's fields the caller reads), each page is decoded against it: the other
    keys are skipped by the decoder (msgspec) and never become Python objects, which is most of a pod's JSON."""
    resource = kube.resource("v1", "Pod")
    context = f"list pods in {namespace or 'all namespaces'}"
    params = {"namespace": namespace, "label_selector": label_selector, "limit": page_size}
    fetched: queue.Queue = queue.Queue(maxsize=PAGES_AHEAD)
    stop = threading.Event()
    fetcher = threading.Thread(target=_fetch_pages, args=(kube, resource, params, context, fetched, stop),
                               name="pod-list-pages", daemon=True)
    fetcher.start()
    decoder = _page_decoder(fields) if fields is not None else None
    version = ""
    try:
        while True:
            item = _next_page(fetched, fetcher)
            if item is None:
                return
            if isinstance(item, Exception):
                raise item
            body, meta = item
            del item
            version = version or meta.get("resourceVersion") or ""
            page = _decoded(decoder, body, context) if decoder else json.loads(body)
            del body
            items = page.get("items") or []
            del page
            yield PodPage(pods=items, resource_version=version)
            del items
    finally:
        stop.set()  # a reader that stops early (an error, a closed generator) stops the fetching too


def _fetch_pages(kube: KubeClient, resource, params: dict, context: str, out: queue.Queue,
                 stop: threading.Event) -> None:
    """The fetching thread: each page's body and its metadata (read without decoding the items), in order, then
    None; an error instead of the page that failed."""
    token = None
    try:
        while not stop.is_set():
            with kube_errors(context):
                response = kube.dynamic.get(resource, _continue=token, serialize=False, **params)
                body = response.data
            meta = _decoded(_LIST_META, body, context).get("metadata") or {}
            token = meta.get("continue")
            _put(out, (body, meta), stop)
            if not token:
                break
        _put(out, None, stop)
    except Exception as exc:  # noqa: BLE001 - handed to the reader, which raises it
        _put(out, exc, stop)


def _put(out: queue.Queue, item: Any, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            out.put(item, timeout=0.5)
            return
        except queue.Full:
            continue


def _next_page(fetched: queue.Queue, fetcher: threading.Thread) -> Any:
    while True:
        try:
            return fetched.get(timeout=1.0)
        except queue.Empty:
            if not fetcher.is_alive() and fetched.empty():
                raise TransientKubeError("the pod list stopped without an answer") from None


def _decoded(decoder: msgspec.json.Decoder, body: bytes, context: str) -> dict[str, Any]:
    """The page as `decoder` reads it; an answer that does not fit it is a permanent error that says so."""
    try:
        return decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise PermanentKubeError(f"{context}: the answer is not a PodList the portal can read: {exc}") from None


def is_expired(exc: Exception) -> bool:
    """410 Gone / Expired: the resourceVersion or continue token asked for is compacted away; the remedy is a new
    LIST (client-go tools/cache/reflector.go `isExpiredError`: IsResourceExpired or IsGone, both HTTP 410)."""
    return getattr(exc, "status", None) == 410
