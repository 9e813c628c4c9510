"""KubeEmulator: kmock's KubernetesEmulator with its request handling replaced by an API server's.

Requests go first through kmock reactions (tests' injected faults and delays); a request no reaction answers is
routed here: discovery (kubesim.server.discovery), OpenAPI (kubesim.server.openapi), Kueue's visibility API, then
the resources themselves (reads in kubesim.server.reads, writes in kubesim.server.writes, the store and garbage
collection in kubesim.server.store).
"""
from __future__ import annotations

import asyncio
import copy
import re
import time
from collections.abc import Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import apps, parsing, rendering

from kubesim import apimachinery, paging
from kubesim.resources import CUSTOM_RESOURCES, ServedResource, builtin_resources
from kubesim.server import protobuf
from kubesim.server.discovery import DiscoveryMixin
from kubesim.server.http import api_error, decode_body, go_bool, parse_api_path, reply, status_body
from kubesim.server.openapi import OpenAPIMixin
from kubesim.server.reads import ReadsMixin
from kubesim.server.store import ObjectKey, StoredEvent, StoreMixin
from kubesim.server.visibility import KUEUE_VISIBILITY, VisibilityMixin
from kubesim.server.writes import WritesMixin

DEFAULT_GIT_VERSION = "v1.35.2"
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
_NOT_FOUND = "the server could not find the requested resource"


@attrs.define(kw_only=True)
class KubeEmulator(DiscoveryMixin, OpenAPIMixin, VisibilityMixin, ReadsMixin, WritesMixin, StoreMixin,
                   kmock.KubernetesEmulator):
    """The fake API server. Objects live in kmock's `objects` store, history included. Run it on one event loop;
    the synchronous `seed`/`merge`/... helpers must be called on that loop (FakeKubeAPI does)."""

    git_version: str = DEFAULT_GIT_VERSION
    custom_resources: tuple[ServedResource, ...] = CUSTOM_RESOURCES
    # Alpha built-in APIs are off on a real cluster unless enabled (--runtime-config): the Workload API of 1.35.
    alpha_apis: bool = True
    # Built-in group versions turned off (--runtime-config=<group/version>=false), e.g. a cluster without the
    # ValidatingAdmissionPolicy API.
    disabled_apis: tuple[str, ...] = ()

    _served: dict[kmock.resource, ServedResource] = attrs.field(factory=dict, init=False)
    _last_resource_version: int = attrs.field(default=0, init=False)
    _compacted: int = attrs.field(default=0, init=False)  # history before this revision is gone (kubesim/paging.py)
    _events: list[StoredEvent] = attrs.field(factory=list, init=False)
    _new_events: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    # Wall-clock arrival time of each request in `_requests`, same index (comparable across processes).
    _arrived_at: list[float] = attrs.field(factory=list, init=False)
    _openapi_cache: dict | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        # Neither KubernetesEmulator's CRUD reactions (they change objects before test reactions see a request)
        # nor the scaffold's catch-all 404: what no reaction answers goes to _route (see _handle).
        for served in builtin_resources(self.minor) + self.custom_resources:
            if served.api_version in self.disabled_apis and not served.custom:
                continue
            if self.alpha_apis or "alpha" not in served.version or served.custom:
                self.serve(served)
        # Every cluster has these from its first start (kube-apiserver's system namespaces controller).
        namespaces = self.served_kind("v1", "Namespace")
        for name in SYSTEM_NAMESPACES:
            self._save((namespaces.key, None, name), self._initialised(namespaces, {"metadata": {"name": name}}, None),
                       None)

    @property
    def minor(self) -> int:
        match = re.match(r"v?(\d+)\.(\d+)", self.git_version)
        return int(match[2]) if match else 0

    def serve(self, served: ServedResource) -> None:
        """Serve one more resource (and show it in discovery and OpenAPI), as installing a CRD does."""
        self._served[served.key] = served
        self._openapi_changed()

    def served_kind(self, api_version: str, kind: str) -> ServedResource:
        for served in self._served.values():
            if (served.api_version, served.kind) == (api_version, kind):
                return served
        raise LookupError(f"the fake API server does not serve {api_version} {kind}")

    def _get_resources(self) -> list[kmock.resource]:
        return list(self._served)

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
            data=decode_body(body, raw_request.headers.get("Content-Type", "")),
            action=parsing.guess_k8s(k8s, method, params),
            resource=kmock.resource(group=path.group, version=path.version, plural=path.plural) if path else None,
            namespace=k8s.namespace,
            name=k8s.name,
            subresource=k8s.subresource,
        )

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        try:  # test reactions first (kmock reactions: injected faults and delays)
            return await apps.RawHandler._handle(self, request)
        except NotImplementedError:  # no reaction answered
            return await self._route(request)

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesError):  # kmock would add a traceback as details
            body = status_body(exc.status, exc.message or "", exc.reason or "", **(exc.details or {}))
            return reply(body, exc.status)
        return await super()._render_error(exc)

    # -- routing ------------------------------------------------------------------------------------------------

    async def _route(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        path, method = request.url.path.rstrip("/") or "/", request.method.value
        accept = request.headers.get("Accept", "")
        if method == "GET" and (served := self._get_discovery(path, accept)) is not None:
            return served
        if method == "GET" and path.startswith("/openapi/"):
            return self.openapi(path, request.params, accept)
        resource = request.resource
        if resource and resource.group == KUEUE_VISIBILITY and request.subresource == "pendingworkloads":
            return reply(self._pending_workloads(request))
        served = self._served.get(resource) if resource and resource.plural else None
        if served is None:
            raise api_error(404, "NotFound", _NOT_FOUND)
        content_type = request.headers.get("Content-Type", "")
        if content_type.startswith(protobuf.CONTENT_TYPE) and request.data is None and request.body:
            raise api_error(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                            f"{served.kind} in {protobuf.CONTENT_TYPE} is not decoded by the fake; send JSON")
        return await self._serve_resource(request, served)

    def _get_discovery(self, path: str, accept: str) -> aiohttp.web.StreamResponse | None:
        if path == "/version":
            return reply(self.server_version())
        if path in ("/api", "/apis"):
            return self.discovery_root(path, accept)
        if path == "/api/v1":
            return reply(self.discovery_group_version("", "v1"))
        if match := re.fullmatch(r"/apis/([^/]+)", path):
            return reply(self.discovery_group(match[1]))
        if match := re.fullmatch(r"/apis/([^/]+)/([^/]+)", path):
            return reply(self.discovery_group_version(match[1], match[2]))
        return None

    async def _serve_resource(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.StreamResponse:
        method, name, sub = request.method.value, request.name, request.subresource
        if sub is not None:
            if name and sub == "status" and "status" in served.subresources and method in ("GET", "PATCH", "PUT"):
                return self._status_request(request, served)
            raise api_error(405, "MethodNotAllowed", f"{method} {request.url.path} is not emulated by the fake")
        if method == "GET" and name is None:
            if go_bool(request.params.get("watch")):
                return await self._watch(request, served)
            try:
                return self._reply_read(request, served, self._list(request, served))
            except paging.Expired as exc:
                return reply(paging.expired_status(exc), 410)
        if method == "GET":
            return self._reply_read(request, served, self._read(served, request.namespace, name))
        if method == "POST" and name is None:
            return self._create(request, served)
        if method == "PUT" and name is not None:
            return self._replace(request, served)
        if method == "PATCH" and name is not None:
            return self._patch(request, served)
        if method == "DELETE" and name is not None:
            return self._delete_request(request, served)
        if method == "DELETE":
            return self._delete_collection(request, served)
        raise api_error(405, "MethodNotAllowed", f"{method} {request.url.path} is not supported")

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
