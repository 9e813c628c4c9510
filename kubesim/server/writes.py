"""Writes: create (POST), update (PUT), the patch types (JSON merge, strategic merge, JSON patch, apply), the
status subresource, DELETE and DELETE-collection, with dryRun, fieldManager and fieldValidation as a real API
server honours them."""
from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp.web
from kmock._internal import rendering

from kubesim import apimachinery, kueue, patches, validation
from kubesim.resources import ServedResource
from kubesim.server.http import api_error, bad_request, go_bool, now, reply, unprocessable
from kubesim.server.store import NAMESPACES

JOB_ORPHAN_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to '
    'remove them or set propagationPolicy=Orphan to suppress this warning"'
)


MERGE, STRATEGIC, JSON_PATCH = ("application/merge-patch+json", "application/strategic-merge-patch+json",
                                "application/json-patch+json")
PATCH_TYPES = (JSON_PATCH, MERGE, STRATEGIC)


class WritesMixin:
    """The write requests of KubeEmulator."""

    # -- create, update, patch -----------------------------------------------------------------------------------

    def _create(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        body = self._body(request, served, require_type=False)
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            raise unprocessable(served, "", [validation.required("metadata.name", "name or generateName is required")])
        key = (served.key, request.namespace, meta["name"])
        if self._live(key) is not None:
            raise api_error(409, "AlreadyExists", f'{served.qualified_plural} "{meta["name"]}" already exists',
                            name=meta["name"], group=served.group, kind=served.plural)
        self._check_namespace_writable(served, request.namespace)
        if served.api_version == "batch/v1" and served.kind == "Job" and self._serves_kind(kueue.KUEUE, "Workload"):
            kueue.suspend_queued_job(body)  # Kueue's mutating webhook
        new, warnings = self._admitted(request, served, self._initialised(served, body, request.namespace))
        apimachinery.record_update(new, body, self._manager(request), now())
        return self._written(request, key, new, None, warnings, created=True)

    def _replace(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        """PUT: the object as sent replaces the live one (identity, and status behind a subresource, kept)."""
        body = self._body(request, served, require_type=True)
        key = (served.key, request.namespace, request.name)
        live = self._read(served, request.namespace, request.name)
        self._check_resource_version(served, live, body)
        new = copy.deepcopy(body)
        for field in ("uid", "creationTimestamp", "generation", "managedFields", "deletionTimestamp"):
            if field in live["metadata"]:
                new["metadata"][field] = live["metadata"][field]
        new["metadata"]["namespace"] = live["metadata"].get("namespace")
        if "status" in served.subresources and "status" in live:
            new["status"] = live["status"]
        new, warnings = self._admitted(request, served, new)
        apimachinery.record_update(new, body, self._manager(request), now())
        return self._written(request, key, new, live, warnings)

    def _patch(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type == "application/apply-patch+yaml":
            return self._apply(request, served)
        if content_type not in PATCH_TYPES or (content_type == STRATEGIC and served.custom):
            accepted = ", ".join(t for t in PATCH_TYPES if not (served.custom and t == STRATEGIC))
            raise api_error(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                            f"accepted media types include: {accepted}, application/apply-patch+yaml")
        key = (served.key, request.namespace, request.name)
        live = self._read(served, request.namespace, request.name)
        patch = request.data
        if content_type == JSON_PATCH:
            if not isinstance(patch, list):
                raise bad_request("the JSON patch is not a list of operations")
            sent = {}
        else:
            sent = patch = self._body(request, served, require_type=False)
            self._check_resource_version(served, live, patch)
        try:
            new = self._patched(served, live, patch, content_type)
        except patches.PatchError as exc:
            raise unprocessable(served, request.name, [validation.invalid("", "", str(exc))]) from None
        if "status" in served.subresources:  # the main resource leaves status alone
            new.pop("status", None)
            if "status" in live:
                new["status"] = live["status"]
        new, warnings = self._admitted(request, served, new)
        if new == live:
            return reply(live)
        apimachinery.record_update(new, sent, self._manager(request), now())
        return self._written(request, key, new, live, warnings)

    def _patched(self, served: ServedResource, live: dict[str, Any], patch: Any, content_type: str) -> dict:
        if content_type == JSON_PATCH:
            return patches.json_patch(live, patch)
        if content_type == STRATEGIC:
            found = self.schema_for(served)
            schema, components = found if found else (None, {})
            return patches.strategic_merge(live, patch, schema, patches.Schemas(components))
        return apimachinery.merge_patch(live, patch)

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
            new = apimachinery.server_side_apply(live, body, manager, go_bool(request.params.get("force")), now())
        except apimachinery.ApplyConflict as exc:
            causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}"', "field": ".".join(p)}
                      for m, p in exc.conflicts]  # fmt: skip
            raise api_error(409, "Conflict", str(exc), causes=causes, name=request.name, kind=served.plural) from None
        if live is None:
            new = self._initialised(served, new, request.namespace)
        new, warnings = self._admitted(request, served, new)
        if live is not None and apimachinery.without_times(new) == apimachinery.without_times(live):
            return reply(live)  # nothing changed: no new resourceVersion, like a real server
        return self._written(request, key, new, live, warnings, created=live is None)

    def _status_request(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        """GET, PATCH (merge, strategic merge, JSON patch) or PUT of /status: only `status` changes (the rest of
        the body is ignored, as a real status subresource does); a `metadata.resourceVersion` sent must match."""
        live = self._read(served, request.namespace, request.name)
        if request.method.value == "GET":
            return reply(live)
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        patch = request.data
        if request.method.value == "PUT":
            content_type, patch = MERGE, {"status": (patch or {}).get("status") or {}, "metadata": (
                (patch or {}).get("metadata") or {})} if isinstance(patch, dict) else patch
        if content_type not in PATCH_TYPES:
            raise api_error(415, "UnsupportedMediaType", f"{content_type or 'no content type'} on /status is not "
                            f"accepted: {', '.join(PATCH_TYPES)}")
        if content_type != JSON_PATCH:
            if not isinstance(patch, dict):
                raise bad_request("the request body is not a JSON or YAML object")
            self._check_resource_version(served, live, patch)
        try:
            patched = self._patched(served, live, patch, content_type)
        except patches.PatchError as exc:
            raise unprocessable(served, request.name, [validation.invalid("", "", str(exc))]) from None
        new = copy.deepcopy(live)
        new["status"] = patched.get("status")
        if new["status"] is None:
            del new["status"]
        if new == live:
            return reply(live)
        sent = {"status": new.get("status") or {}} if content_type == JSON_PATCH else {"status": patch.get("status")}
        apimachinery.record_update(new, sent, self._manager(request), now())
        return self._written(request, (served.key, request.namespace, request.name), new, live, [])

    def _serves_kind(self, api_version: str, kind: str) -> bool:
        return any((s.api_version, s.kind) == (api_version, kind) for s in self._served.values())

    # -- what every write goes through -----------------------------------------------------------------------------

    def _check_resource_version(self, served: ServedResource, live: dict[str, Any], sent: Any) -> None:
        expected = ((sent.get("metadata") or {}) if isinstance(sent, dict) else {}).get("resourceVersion")
        if expected and expected != live["metadata"].get("resourceVersion"):
            name = live["metadata"]["name"]
            raise api_error(409, "Conflict", f'Operation cannot be fulfilled on {served.qualified_plural} "{name}": '
                            "the object has been modified; please apply your changes to the latest version and try "
                            "again", name=name, group=served.group, kind=served.plural)

    def _admitted(self, request: rendering.Request, served: ServedResource,
                  new: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The object as it would be stored, and the warnings to send; raises 400/422 as the API server does."""
        mode = request.params.get("fieldValidation") or "Warn"
        if mode not in ("Ignore", "Warn", "Strict"):
            raise bad_request(f'fieldValidation must be one of "Ignore", "Warn", "Strict", not "{mode}"')
        found = self.schema_for(served)
        schema, components = found if found else (None, {})
        pruned, findings = validation.check(new, schema, patches.Schemas(components), builtin=not served.custom)
        handled_as = f'{served.kind} in version "{served.version}" cannot be handled as a {served.kind}'
        if findings.type_errors and not served.custom:
            path, kind, value = findings.type_errors[0]
            raise bad_request(f"{handled_as}: json: cannot unmarshal {type(value).__name__} into Go struct field "
                              f"{served.kind}.{path} of type {validation._GO_TYPES.get(kind, kind)}")
        causes = findings.causes + [validation.invalid(path, value, f"{path} in body must be of type {kind}: "
                                                                    f"{validation._quote(value)}")
                                    for path, kind, value in findings.type_errors]
        if findings.unknown and mode == "Strict":
            unknown = ", ".join(f'unknown field "{path}"' for path in findings.unknown)
            raise bad_request(f"{handled_as}: strict decoding error: {unknown}")
        if causes:
            raise unprocessable(served, new["metadata"].get("name", ""), causes)
        warnings = [f'unknown field "{path}"' for path in findings.unknown] if mode == "Warn" else []
        return pruned, warnings

    def _written(self, request: rendering.Request, key: Any, new: dict[str, Any], live: dict[str, Any] | None,
                 warnings: list[str], *, created: bool = False) -> aiohttp.web.Response:
        """Store the write (unless it is a dry run) and answer it."""
        dry_run = request.params.get("dryRun")
        if dry_run not in (None, "All"):
            raise bad_request(f"Invalid dry run value {dry_run!r}: only \"All\" is supported")
        quoted = [w.replace("\\", "\\\\").replace('"', '\\"') for w in warnings]
        headers = {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)} if warnings else None
        if dry_run:
            return reply(new, 201 if created else 200, headers)
        saved = self._save(key, new, None) if live is None else self._update(key, live, new)
        return reply(saved, 201 if created else 200, headers)

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
        if request.params.get("dryRun"):
            return reply(live)
        obj, pending = self._delete(key, live, requested or served.default_propagation)
        warn = requested is None and served.default_propagation == "Orphan" and served.kind == "Job"
        return reply(obj, 202 if pending else 200, {"Warning": JOB_ORPHAN_WARNING} if warn else None)

    def _delete_collection(self, request: rendering.Request, served: ServedResource) -> aiohttp.web.Response:
        if "deletecollection" not in served.verbs:
            raise api_error(405, "MethodNotAllowed", f"{served.qualified_plural} do not support deletecollection")
        selected = self._selection(request, served)
        policy = request.params.get("propagationPolicy") or served.default_propagation
        doomed = [(key, obj) for key, obj in self._live_items(served) if selected(obj)]
        if request.params.get("dryRun"):
            return reply(self._list_body(served, [obj for _, obj in doomed]))
        return reply(self._list_body(served, [self._delete(key, obj, policy)[0] for key, obj in doomed]))


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
        meta.setdefault("creationTimestamp", now())
        if "spec" in obj:
            meta["generation"] = 1
        if served.kind == "Namespace":
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        if served.kind == "Pod" and served.api_version == "v1":
            obj.setdefault("status", {"phase": "Pending"})
        return obj

