# Kept whole: most of it is one kmock emulator subclass whose overrides share its private store; what stands alone is in apimachinery.py, resources.py and tls.py.
"""A fake Kubernetes API server for tests: kmock's KubernetesEmulator with the gaps of kmock 0.8 filled, served over
real HTTPS on 127.0.0.1 (a certificate of the run's test CA, kubesim/tls.py; plain HTTP on request) from an
event loop in a background thread, so the synchronous `kubernetes` client (and our code using it) talks to it
exactly as to a cluster, certificate verification included.

`FakeKubeAPI` is what tests hold: it starts and stops the server and offers synchronous helpers to seed and mutate
objects, inject faults and read the request log. `KubeEmulator` is the kmock subclass doing the HTTP side.

Filled gaps of kmock 0.8: server-side apply (create with 201, merge with 200, managedFields, conflicts, no
resourceVersion bump when nothing changes), create answering 201, Namespace paths (/api/v1/namespaces[/<name>]),
label and field selectors on LIST, WATCH and DELETE-collection, uid / resourceVersion / creationTimestamp /
generation, LIST answers with kind and apiVersion, watch `timeoutSeconds` and `resourceVersion`, discovery with
correct group versions and a deterministic preferred version, a configurable /version, and rejected requests
(injected faults) leaving the stored objects untouched. LIST pagination (`limit`/`continue`, each list one
snapshot) and compacted history (`compact()`: 410 Expired for older continue tokens and watches) are in paging.py.

Like a real API server it also refuses namespaced writes into a missing or terminating namespace, deletes a
namespace's content with it, honours deletion preconditions, finalizers and propagationPolicy (a synchronous
stand-in for the garbage collector), and drops `status` from writes to kinds with a status subresource. It does not
validate schemas, default fields beyond a few, convert between versions, or emulate JSON patch, PUT,
subresource requests or dryRun (those answer 405/415/400 saying so).
"""
from __future__ import annotations

import asyncio
import copy
import datetime
import functools
import http
import json
import re
import ssl
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp.test_utils
import aiohttp.web
import attrs
import kmock
import yaml
from kmock._internal import apps, k8s_dicts, parsing, rendering

from kubesim import apimachinery, paging
from kubesim.tls import TestCA, test_ca
from kubesim.resources import CUSTOM_RESOURCES, ServedResource, builtin_resources, version_priority

T = TypeVar("T")
ObjectKey = tuple[kmock.resource, str | None, str]

DEFAULT_GIT_VERSION = "v1.35.2"
WATCH_DEFAULT_TIMEOUT = 1800.0  # seconds, when a watch names no timeoutSeconds
JOB_ORPHAN_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to '
    'remove them or set propagationPolicy=Orphan to suppress this warning"'
)
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
NAMESPACES = kmock.resource("", "v1", "namespaces")
KUEUE_VISIBILITY = "visibility.kueue.x-k8s.io"  # an aggregated API of Kueue's, served from the stored Workloads


# -- request parsing --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiPath:
    group: str | None
    version: str | None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_api_path(path: str) -> ApiPath | None:
    """Split /api/v1/... and /apis/<group>/<version>/... paths; None for anything else.

    Unlike kmock 0.8, /api/v1/namespaces and /api/v1/namespaces/<name>[/status|/finalize] are the Namespace
    resource itself, not a namespace scope.
    """
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 2:
        group, version, rest = parts[1], (parts[2] if len(parts) > 2 else None), parts[3:]
    else:
        return None
    namespace = None
    if rest[:1] == ["namespaces"] and len(rest) >= 3 and rest[2] not in NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    plural, name, *sub = rest + [None] * (2 - min(len(rest), 2))
    return ApiPath(group, version, plural, namespace, name, "/".join(sub) or None)


def _decode_body(body: bytes, content_type: str) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        pass
    if "yaml" in content_type:  # apply patches may be YAML proper, not only JSON
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError:
            return None
    return None


# -- responses --------------------------------------------------------------------------------------------------


def status_body(code: int, message: str = "", reason: str = "", **details: Any) -> dict[str, Any]:
    """A Kubernetes Status object, as API servers send with every error."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message or http.HTTPStatus(code).phrase.lower(),
        "reason": reason or http.HTTPStatus(code).phrase.replace(" ", ""),
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def api_error(code: int, reason: str, message: str, **details: Any) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=code, reason=reason, message=message, details=details or None)


def bad_request(message: str) -> kmock.KubernetesError:
    return api_error(400, "BadRequest", message)


def not_found(served: ServedResource, name: str) -> kmock.KubernetesError:
    return api_error(
        404, "NotFound", f'{served.qualified_plural} "{name}" not found',
        name=name, group=served.group, kind=served.plural,
    )  # fmt: skip


def _reply(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> aiohttp.web.Response:
    return aiohttp.web.json_response(obj, status=status, headers=headers)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _go_bool(value: str | None) -> bool:
    """Query booleans as the API server parses them (Go's strconv.ParseBool)."""
    return value in {"1", "t", "T", "TRUE", "true", "True"}


# -- the emulator -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredEvent:
    resource_version: int
    resource: kmock.resource
    type: str  # ADDED | MODIFIED | DELETED
    old: dict[str, Any] | None
    new: dict[str, Any]


@attrs.define(kw_only=True)
class KubeEmulator(kmock.KubernetesEmulator):
    """kmock's emulator with its request handling replaced by an API server's (see the module docstring).

    Requests go first through kmock reactions (tests' injected faults and delays, and discovery); a request no
    reaction answers is served by `_serve_resource`. Objects live in kmock's `objects` store, history included.
    Run it on one event loop; the synchronous `seed`/`merge`/... helpers must be called on that loop.
    """

    git_version: str = DEFAULT_GIT_VERSION
    custom_resources: tuple[ServedResource, ...] = CUSTOM_RESOURCES

    _served: dict[kmock.resource, ServedResource] = attrs.field(factory=dict, init=False)
    _last_resource_version: int = attrs.field(default=0, init=False)
    _compacted: int = attrs.field(default=0, init=False)  # history before this revision is gone (paging.py)
    _events: list[StoredEvent] = attrs.field(factory=list, init=False)
    _new_events: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    # Wall-clock arrival time of each request in `_requests`, same index (comparable across processes).
    _arrived_at: list[float] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        # Neither KubernetesEmulator's CRUD reactions (they change objects before test reactions see a request)
        # nor the scaffold's catch-all 404: what no reaction answers goes to _serve_resource (see _handle).
        self.fallback["get /"] << self._serve_root
        self.fallback["get /version"] << self._serve_server_version
        self.fallback["get /api"] << self._serve_api
        self.fallback["get /apis"] << self._serve_apis
        self.fallback["get", re.compile(r"/api/v1|/apis/[^/]+/[^/]+")] << self._serve_version
        self.fallback["get", re.compile(r"/apis/[^/]+")] << self._serve_group
        for served in builtin_resources(self.minor) + self.custom_resources:
            self.serve(served)

    @property
    def minor(self) -> int:
        match = re.match(r"v?(\d+)\.(\d+)", self.git_version)
        return int(match[2]) if match else 0

    def serve(self, served: ServedResource) -> None:
        """Serve one more resource (and show it in discovery), as installing a CRD does."""
        self._served[served.key] = served

    def served_kind(self, api_version: str, kind: str) -> ServedResource:
        for served in self._served.values():
            if (served.api_version, served.kind) == (api_version, kind):
                return served
        raise LookupError(f"the fake API server does not serve {api_version} {kind}")

    # -- HTTP entry point: kmock's, with our own request parsing ------------------------------------------------

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        arrived_at = time.time()
        request = await self._parse_request(raw_request)
        self._requests.append(request)
        self._arrived_at.append(arrived_at)
        try:
            return await self._handle(request)
        except kmock.KubernetesError as exc:
            return await self._render_error(exc)
        except Exception as exc:  # a bug of the fake: answer 500 and keep it for the fixture to report
            if self._errors:
                self._errors[-1].append(exc)
            return await self._render_error(exc)

    async def _parse_request(self, raw_request: aiohttp.web.BaseRequest) -> rendering.Request:
        body = await raw_request.read()
        path = parse_api_path(raw_request.path)
        method = kmock.method(raw_request.method)
        params = dict(raw_request.query)
        k8s = parsing.ParsedPath(**vars(path)) if path else parsing.ParsedPath()
        return rendering.Request(
            id=len(self._requests),
            raw_request=raw_request,
            url=raw_request.url,
            method=method,
            params=params,
            headers=dict(raw_request.headers),
            cookies=dict(raw_request.cookies),
            body=body,
            text=body.decode("utf-8", "replace"),
            data=_decode_body(body, raw_request.headers.get("Content-Type", "")),
            action=parsing.guess_k8s(k8s, method, params),
            resource=kmock.resource(group=path.group, version=path.version, plural=path.plural) if path else None,
            namespace=k8s.namespace,
            name=k8s.name,
            subresource=k8s.subresource,
        )

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        try:  # test reactions first, then discovery (both kmock reactions)
            return await apps.RawHandler._handle(self, request)
        except NotImplementedError:  # no reaction answered
            return await self._serve_resource(request)

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesError):  # kmock would add a traceback as details
            body = status_body(exc.status, exc.message or "", exc.reason or "", **(exc.details or {}))
            return _reply(body, exc.status)
        return await super()._render_error(exc)

    # -- discovery ----------------------------------------------------------------------------------------------

    def _get_resources(self) -> list[kmock.resource]:
        return list(self._served)

    async def _serve_server_version(self, request: rendering.Request) -> dict[str, Any]:
        major, minor = (re.findall(r"\d+", self.git_version) + ["0", "0"])[:2]
        return {
            "major": major,
            "minor": minor,
            "gitVersion": self.git_version,
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.25.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    def _group_versions(self) -> dict[str, list[str]]:
        versions: dict[str, set[str]] = {}
        for served in self._served.values():
            if served.group:
                versions.setdefault(served.group, set()).add(served.version)
        return {group: sorted(found, key=version_priority) for group, found in sorted(versions.items())}

    @staticmethod
    def _api_group(group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    async def _serve_apis(self, request: rendering.Request) -> dict[str, Any]:
        groups = [self._api_group(group, versions) for group, versions in self._group_versions().items()]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    async def _serve_group(self, request: rendering.Request) -> dict[str, Any]:
        group = request.resource.group if request.resource else None
        versions = self._group_versions().get(group or "")
        if not versions:
            raise api_error(404, "NotFound", "the server could not find the requested resource")
        return {"kind": "APIGroup", "apiVersion": "v1", **self._api_group(group, versions)}

    async def _serve_version(self, request: rendering.Request) -> dict[str, Any]:
        group, version = request.resource.group, request.resource.version
        served = [s for s in self._served.values() if (s.group, s.version) == (group, version)]
        if not served:
            raise api_error(404, "NotFound", "the server could not find the requested resource")
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": served[0].api_version,
            "resources": [entry for s in served for entry in self._discovery_entries(s)],
        }

    @staticmethod
    def _discovery_entries(served: ServedResource) -> list[dict[str, Any]]:
        main = {
            "name": served.plural,
            "singularName": served.kind.lower(),
            "namespaced": served.namespaced,
            "kind": served.kind,
            "verbs": list(served.verbs),
        }
        subs = [
            {
                "name": f"{served.plural}/{sub}",
                "singularName": "",
                "namespaced": served.namespaced,
                "kind": "Scale" if sub == "scale" else served.kind,
                "verbs": ["get", "patch", "update"],
            }
            for sub in served.subresources
        ]
        return [main, *subs]

    # -- serving API resources ----------------------------------------------------------------------------------

    async def _serve_resource(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.resource and request.resource.group == KUEUE_VISIBILITY and request.subresource == "pendingworkloads":
            return _reply(self._pending_workloads(request))
        served = self._served.get(request.resource) if request.resource and request.resource.plural else None
        if served is None:
            raise api_error(404, "NotFound", "the server could not find the requested resource")
        method, name = request.method.value, request.name
        if request.subresource == "status" and name and "status" in served.subresources and method in ("GET", "PATCH"):
            return _reply(self._status_request(request, served))
        if request.subresource or method == "PUT":
            raise api_error(405, "MethodNotAllowed", f"{method} {request.url.path} is not emulated by the fake")
        if "dryRun" in request.params:
            raise bad_request("dryRun is not emulated by the fake API server")
        if method == "GET" and name is None:
            if _go_bool(request.params.get("watch")):
                return await self._watch(request, served)
            try:
                return _reply(self._list(request, served))
            except paging.Expired as exc:
                return _reply(paging.expired_status(exc), 410)
        if method == "GET":
            return _reply(self._read(served, request.namespace, name))
        if method == "POST" and name is None:
            return _reply(self._create(request, served), 201)
        if method == "PATCH" and name is not None:
            return self._patch(request, served)
        if method == "DELETE" and name is not None:
            return self._delete_request(request, served)
        if method == "DELETE":
            return _reply(self._delete_collection(request, served))
        raise api_error(405, "MethodNotAllowed", f"{method} {request.url.path} is not supported")

    def _pending_workloads(self, request: rendering.Request) -> dict[str, Any]:
        """Kueue's visibility API (kueue v0.19.2 pkg/visibility/storage/pending_workloads_{cq,lq}.go): the stored
        Workloads of a ClusterQueue (through their LocalQueues' spec.clusterQueue) without QuotaReserved=True,
        highest priority first, then oldest, with positions counted from 0; a LocalQueue's answer keeps only its own
        (positionInClusterQueue still counts the whole ClusterQueue)."""
        local_queues = {(q["metadata"].get("namespace"), q["metadata"]["name"]): (q.get("spec") or {}).get(
            "clusterQueue") for q in self._kueue_objects("LocalQueue")}
        if request.resource.plural == "localqueues":
            cluster_queue = local_queues.get((request.namespace, request.name))
        else:
            cluster_queue = request.name if any(cq == request.name for cq in local_queues.values()) else None
        if cluster_queue is None:
            raise api_error(404, "NotFound", f'{request.resource.plural[:-1]} "{request.name}" not found')
        pending = [w for w in self._kueue_objects("Workload")
                   if local_queues.get((w["metadata"].get("namespace"), (w.get("spec") or {}).get("queueName")))
                   == cluster_queue and not any(c.get("type") == "QuotaReserved" and c.get("status") == "True"
                                                for c in (w.get("status") or {}).get("conditions") or ())]
        pending.sort(key=lambda w: (-int((w.get("spec") or {}).get("priority") or 0),
                                    w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))
        items, in_local = [], {}
        for index, workload in enumerate(pending):
            meta, queue = workload["metadata"], (workload.get("spec") or {}).get("queueName")
            key = (meta.get("namespace"), queue)
            position = in_local[key] = in_local.get(key, -1) + 1
            if request.resource.plural == "localqueues" and key != (request.namespace, request.name):
                continue
            items.append({
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                             "creationTimestamp": meta.get("creationTimestamp"),
                             "ownerReferences": [{k: o[k] for k in ("apiVersion", "kind", "name", "uid") if k in o}
                                                 for o in meta.get("ownerReferences") or ()]},
                "priority": int((workload.get("spec") or {}).get("priority") or 0), "localQueueName": queue,
                "positionInClusterQueue": index, "positionInLocalQueue": position,
            })
        return {"kind": "PendingWorkloadsSummary", "apiVersion": f"{KUEUE_VISIBILITY}/v1beta2",
                "metadata": {"creationTimestamp": None}, "items": items}

    def _kueue_objects(self, kind: str) -> list[dict[str, Any]]:
        """The stored Kueue objects of one kind, every served version (not a copy of every object of the store)."""
        return [obj for served in self._served.values() if served.group == "kueue.x-k8s.io" and served.kind == kind
                for _, obj in self._live_items(served)]

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

    def _create(self, request: rendering.Request, served: ServedResource) -> dict[str, Any]:
        body = self._body(request, served, require_type=False)
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            raise api_error(
                422, "Invalid", f'{served.kind} "" is invalid: metadata.name: Required value: name or generateName '
                "is required",
            )  # fmt: skip
        key = (served.key, request.namespace, meta["name"])
        if self._live(key) is not None:
            raise api_error(409, "AlreadyExists", f'{served.qualified_plural} "{meta["name"]}" already exists')
        self._check_namespace_writable(served, request.namespace)
        new = self._initialised(served, body, request.namespace)
        apimachinery.record_update(new, body, self._manager(request), _now())
        return self._save(key, new, None)

    def _patch(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type == "application/apply-patch+yaml":
            return self._apply(request, served)
        if content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            # A strategic merge is emulated as a JSON merge patch: lists are replaced, never merged by key.
            return _reply(self._merge_request(request, served))
        raise api_error(415, "UnsupportedMediaType", f"{content_type or 'no content type'} is not emulated by the fake")

    def _apply(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        manager = request.params.get("fieldManager")
        if not manager:
            raise bad_request("PATCH with application/apply-patch+yaml requires the fieldManager parameter")
        body = self._body(request, served, require_type=True)
        key = (served.key, request.namespace, request.name)
        live = self._live(key)
        if live is None:
            self._check_namespace_writable(served, request.namespace)
        try:
            new = apimachinery.server_side_apply(live, body, manager, _go_bool(request.params.get("force")), _now())
        except apimachinery.ApplyConflict as exc:
            causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}"', "field": ".".join(p)}
                      for m, p in exc.conflicts]  # fmt: skip
            raise api_error(409, "Conflict", str(exc), causes=causes, name=request.name, kind=served.plural) from None
        if live is None:
            return _reply(self._save(key, self._initialised(served, new, request.namespace), None), 201)
        if apimachinery.without_times(new) == apimachinery.without_times(live):
            return _reply(live)  # nothing changed: no new resourceVersion, like a real server
        return _reply(self._update(key, live, new))

    def _merge_request(self, request: rendering.Request, served: ServedResource) -> dict[str, Any]:
        patch = self._body(request, served, require_type=False)
        key = (served.key, request.namespace, request.name)
        live = self._read(served, request.namespace, request.name)
        new = apimachinery.merge_patch(live, patch)
        if new == live:
            return live
        apimachinery.record_update(new, patch, self._manager(request), _now())
        return self._update(key, live, new)

    def _status_request(self, request: rendering.Request, served: ServedResource) -> dict[str, Any]:
        """GET or JSON-merge-PATCH of /status: only `status` changes (the rest of the body is ignored, as a real
        status subresource does), and a `metadata.resourceVersion` in the patch must match (409 otherwise)."""
        live = self._read(served, request.namespace, request.name)
        if request.method.value == "GET":
            return live
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type != "application/merge-patch+json":
            raise api_error(415, "UnsupportedMediaType", f"{content_type or 'no content type'} on /status is not "
                                                         "emulated by the fake (merge-patch only)")
        patch = request.data
        if not isinstance(patch, dict):
            raise bad_request("the request body is not a JSON or YAML object")
        expected = (patch.get("metadata") or {}).get("resourceVersion")
        if expected and expected != live["metadata"].get("resourceVersion"):
            raise api_error(409, "Conflict", f'Operation cannot be fulfilled on {served.qualified_plural} '
                            f'"{request.name}": the object has been modified; please apply your changes to the '
                            "latest version and try again")
        if "status" not in patch:
            return live
        new = apimachinery.merge_patch(live, {"status": copy.deepcopy(patch["status"])})
        if new == live:
            return live
        apimachinery.record_update(new, {"status": patch["status"]}, self._manager(request), _now())
        return self._update((served.key, request.namespace, request.name), live, new)

    def _delete_request(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        key = (served.key, request.namespace, request.name)
        live = self._read(served, request.namespace, request.name)
        options = request.data if isinstance(request.data, dict) else {}
        expected_uid = (options.get("preconditions") or {}).get("uid")
        if expected_uid and expected_uid != live["metadata"]["uid"]:
            raise api_error(
                409, "Conflict",
                f"Precondition failed: UID in precondition: {expected_uid}, UID in object meta: "
                f"{live['metadata']['uid']}",
            )  # fmt: skip
        requested = options.get("propagationPolicy") or request.params.get("propagationPolicy")
        if requested not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request(f"unknown propagationPolicy {requested!r}")
        obj, pending = self._delete(key, live, requested or served.default_propagation)
        warn = requested is None and served.default_propagation == "Orphan" and served.kind == "Job"
        return _reply(obj, 202 if pending else 200, {"Warning": JOB_ORPHAN_WARNING} if warn else None)

    def _delete_collection(self, request: rendering.Request, served: ServedResource) -> dict[str, Any]:
        if "deletecollection" not in served.verbs:
            raise api_error(405, "MethodNotAllowed", f"{served.qualified_plural} do not support deletecollection")
        selected = self._selection(request, served)
        policy = request.params.get("propagationPolicy") or served.default_propagation
        doomed = [(key, obj) for key, obj in self._live_items(served) if selected(obj)]
        return self._list_body(served, [self._delete(key, obj, policy)[0] for key, obj in doomed])

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

    # -- writes shared by HTTP and the test helpers -------------------------------------------------------------

    def _body(self, request: rendering.Request, served: ServedResource, *, require_type: bool) -> dict[str, Any]:
        body = request.data
        if not isinstance(body, dict):
            raise bad_request("the request body is not a JSON or YAML object")
        body = copy.deepcopy(body)
        if require_type or "apiVersion" in body or "kind" in body:
            if (body.get("apiVersion"), body.get("kind")) != (served.api_version, served.kind):
                raise bad_request(
                    f"the body's apiVersion/kind {body.get('apiVersion')}/{body.get('kind')} does not match "
                    f"{served.api_version}/{served.kind} of the URL"
                )
        meta = body.get("metadata") or {}
        if request.name and meta.get("name") not in (None, request.name):
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL")
        if served.namespaced and meta.get("namespace") not in (None, request.namespace):
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        if "status" in served.subresources:
            body.pop("status", None)  # status changes only through the status subresource
        return body

    def _check_namespace_writable(self, served: ServedResource, namespace: str | None) -> None:
        if not served.namespaced:
            return
        ns = self._live((NAMESPACES, None, namespace or ""))
        if ns is None:
            raise api_error(404, "NotFound", f'namespaces "{namespace}" not found', name=namespace, kind="namespaces")
        if ns["metadata"].get("deletionTimestamp"):
            raise api_error(
                403, "Forbidden",
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )  # fmt: skip

    def _initialised(self, served: ServedResource, body: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
        """A new object with what the server sets on create."""
        obj = copy.deepcopy(dict(body))
        obj["apiVersion"], obj["kind"] = served.api_version, served.kind
        meta = obj.setdefault("metadata", {})
        if served.namespaced:
            meta["namespace"] = namespace
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", _now())
        if "spec" in obj:
            meta["generation"] = 1
        if served.kind == "Namespace":
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        if served.kind == "Pod" and served.api_version == "v1":
            obj.setdefault("status", {"phase": "Pending"})
        return obj

    def _update(self, key: ObjectKey, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        if "generation" in old["metadata"] and _desired_state(old) != _desired_state(new):
            new["metadata"]["generation"] = old["metadata"]["generation"] + 1
        saved = self._save(key, new, old)
        meta = saved["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._delete(key, saved, "Background")[0]  # the last finalizer is gone
        return saved

    def _delete(self, key: ObjectKey, live: dict[str, Any], policy: str) -> tuple[dict[str, Any], bool]:
        """Delete now, or mark for deletion while finalizers remain; True in the second place when pending."""
        meta = live["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return live, True
            marked = copy.deepcopy(live)
            marked["metadata"].update(deletionTimestamp=_now(), deletionGracePeriodSeconds=0)
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

    # -- the store ----------------------------------------------------------------------------------------------

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

    # -- helpers for tests (call on the emulator's loop; FakeKubeAPI does) --------------------------------------

    def key_of(self, api_version: str, kind: str, name: str, namespace: str | None) -> tuple[ServedResource, ObjectKey]:
        served = self.served_kind(api_version, kind)
        return served, (served.key, namespace if served.namespaced else None, name)

    def seed(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create or replace an object as given (status included), with server-set metadata filled in."""
        meta = obj.get("metadata", {})
        served, key = self.key_of(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        live = self._live(key)
        if live is None:
            return self._save(key, self._initialised(served, obj, key[1]), None)
        replacement = copy.deepcopy(dict(obj))
        for field in ("uid", "creationTimestamp", "generation"):  # a replace keeps the object's identity
            if field in live["metadata"]:
                replacement["metadata"].setdefault(field, live["metadata"][field])
        return self._update(key, live, replacement)

    def merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Mapping) -> dict[str, Any]:
        """Apply a JSON merge patch to an existing object (any field, status included)."""
        served, key = self.key_of(api_version, kind, name, namespace)
        live = self._read(served, key[1], name)
        return self._update(key, live, apimachinery.merge_patch(live, patch))

    def remove(self, api_version: str, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
        """Delete an object as a Background-propagated DELETE would."""
        served, key = self.key_of(api_version, kind, name, namespace)
        return self._delete(key, self._read(served, key[1], name), "Background")[0]

    def find(self, api_version: str, kind: str, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        served = self.served_kind(api_version, kind)
        requirements = apimachinery.parse_label_selector(label_selector)
        return [
            obj
            for key, obj in self._live_items(served)
            if (namespace is None or key[1] == namespace) and apimachinery.labels_match(requirements, obj)
        ]

    def add_fault(self, method: str, path_regex: str, times: int, payload: Any) -> None:
        """Answer the next `times` requests matching method and path (re.search) with `payload`, a kmock
        reaction payload; kmock counts the matching requests seen so far so that only later ones are hit."""
        pattern = re.compile(path_regex)
        view = self[kmock.method(method.upper())][lambda request: pattern.search(request.url.path) is not None]
        seen = len(view)
        view[seen : seen + times] << payload


def _desired_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What metadata.generation counts changes of: everything but metadata and status."""
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


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


# -- the synchronous face for tests -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    content_type: str  # without parameters such as charset
    params: dict[str, str]  # query parameters: fieldManager, force, labelSelector, propagationPolicy, ...
    body: Any  # decoded JSON/YAML, or None
    headers: dict[str, str]
    at: float = 0.0  # time.time() when the request arrived

    @classmethod
    def of(cls, request: rendering.Request, at: float = 0.0) -> RecordedRequest:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        return cls(
            request.method.value, request.url.path, content_type, dict(request.params), request.data,
            dict(request.headers), at,
        )  # fmt: skip


class _TLSServer(aiohttp.test_utils.RawTestServer):
    """aiohttp's raw test server, listening with TLS."""

    def __init__(self, handler, *, ssl_context: ssl.SSLContext, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._ssl_context = ssl_context

    async def __aenter__(self) -> _TLSServer:
        await self.start_server(loop=self._loop, ssl=self._ssl_context)
        return self


class FakeKubeAPI:
    """A running fake API server. Start with `FakeKubeAPI.start()` (or the `fake_kube` fixture), stop with
    `stop()`. Every method is synchronous and safe to call from the test's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self._loop, self._thread = loop, thread
        self.emulator: KubeEmulator
        self._server: kmock.Server

    @classmethod
    def start(
        cls, *, git_version: str = DEFAULT_GIT_VERSION, custom_resources=CUSTOM_RESOURCES, tls: bool = True,
        port: int | None = None, ca: TestCA | None = None,
    ) -> FakeKubeAPI:
        """Serve https with a certificate of the run's test CA (`ca_pem`, `ca_file`); `tls=False` serves plain
        http, for the tests that opt into an unverified connection on purpose. `port` fixes the loopback port
        (default: a free one) and `ca` the CA signing the certificate (the simulated cluster keeps its own)."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-kube-api", daemon=True)
        thread.start()
        fake = cls(loop, thread)
        fake._ca = ca or test_ca()

        async def enter() -> None:  # asyncio objects are made on the loop that will use them
            fake.emulator = KubeEmulator(git_version=git_version, custom_resources=tuple(custom_resources))
            await fake.emulator.__aenter__()
            server_cls = functools.partial(_TLSServer, ssl_context=fake._ca.server_context()) if tls else None
            options = ({"server_cls": server_cls} if server_cls else {}) | ({"port": port} if port else {})
            fake._server = kmock.Server(fake.emulator, **options)
            await fake._server.__aenter__()

        fake._run(enter())
        return fake

    def stop(self) -> None:
        async def leave() -> None:
            await self._server.__aexit__(None, None, None)
            await self.emulator.__aexit__(None, None, None)

        try:
            self._run(leave())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def __enter__(self) -> FakeKubeAPI:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests read --------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return str(self._server.url).rstrip("/")

    @property
    def git_version(self) -> str:
        return self.emulator.git_version

    @property
    def tls(self) -> bool:
        return self.url.startswith("https://")

    @property
    def ca_pem(self) -> str:
        """The CA that signed the fake's certificate (empty when it serves plain http)."""
        return self._ca.ca_pem if self.tls else ""

    @property
    def ca_file(self) -> str:
        return self._ca.ca_file

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, discovery included, in arrival order."""
        requests, arrived = list(self.emulator._requests), list(self.emulator._arrived_at)
        return [RecordedRequest.of(request, at) for request, at in zip(requests, arrived)]

    @property
    def errors(self) -> list[Exception]:
        """Exceptions the fake itself raised while serving (its bugs, not the API errors it answered)."""
        return list(self.emulator.errors)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        served, key = self.emulator.key_of(api_version, kind, name, namespace)
        return self._call(self.emulator._live, key)

    def find(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        """Stored objects of a kind, optionally in one namespace and matching a label selector."""
        return self._call(self.emulator.find, api_version, kind, namespace, label_selector)

    # -- seeding and mutating (watchers see these changes) -----------------------------------------------------

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create or replace an object as given, e.g. a Node with GFD labels or a Pod with a status."""
        return self._call(self.emulator.seed, obj)

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Mapping) -> dict:
        """JSON-merge-patch any part of an object (None deletes a key)."""
        return self._call(self.emulator.merge, api_version, kind, name, namespace, patch)

    def patch_status(self, api_version: str, kind: str, name: str, namespace: str | None, status: Mapping) -> dict:
        """Merge into an object's status, as its controller would (e.g. a Pod moving to Running)."""
        return self.patch(api_version, kind, name, namespace, {"status": status})

    def remove(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self._call(self.emulator.remove, api_version, kind, name, namespace)

    def compact(self, revision: int | None = None) -> int:
        """Compact the history (paging.py): older continue tokens and watches get 410 Expired."""
        return self._call(self.emulator.compact, revision)

    def install(self, *served: ServedResource) -> None:
        """Serve more resources (e.g. `resources_from_crd(crd)`), as installing CRDs does."""
        for resource in served:
            self._call(self.emulator.serve, resource)

    # -- fault injection ---------------------------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        message: str = "",
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next `times` requests whose method matches and whose path matches `path_regex` (searched)
        with `status`, a Status body carrying `message` (or `body` as given) and `headers` (e.g. Retry-After).
        Like a rejected request on a real server, a failed write changes nothing."""
        payload = body if body is not None else status_body(status, message)
        response = rendering.Response(status=status, headers=dict(headers or {}), payload=payload)
        self._call(self.emulator.add_fault, method, path_regex, times, response)

    def delay_next(self, method: str, path_regex: str, seconds: float, *, times: int = 1) -> None:
        """Hold the next `times` matching requests for `seconds`, then serve them normally (a slow server: a
        client that timed out meanwhile may still see its write happen)."""

        async def hold() -> None:
            await asyncio.sleep(seconds)
            raise NotImplementedError  # kmock: "matched, nothing to answer": go on to the next reaction

        self._call(self.emulator.add_fault, method, path_regex, times, hold)

    # -- running things on the loop ----------------------------------------------------------------------------

    def _run(self, coroutine: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        async def call() -> T:
            return fn(*args)

        return self._run(call())
