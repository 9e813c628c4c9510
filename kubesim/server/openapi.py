"""OpenAPI v3 and v2 documents, as kubectl and client-go read them.

- /openapi/v3 lists one document per group version (`serverRelativeURL` with a content hash) and
  /openapi/v3/<api|apis/group>/<version> serves it (kube-openapi pkg/handler3). For the built-in kinds they are
  upstream's published documents of Kubernetes 1.35, trimmed to the resources kubesim serves
  (kubesim/openapi/SOURCES.md); for the custom resources they are built from the CRD's schema as the
  apiextensions-apiserver does (one path per collection, object and status, PATCH without strategic merge, the
  kind's schema with `x-kubernetes-group-version-kind`).
- kubectl decides from these documents whether the server validates fields itself (the `fieldValidation` query
  parameter on the kind's PATCH operation, k8s.io/cli-runtime pkg/resource/query_param_verifier_v3.go) and, for
  client-side apply, how to compute a strategic merge patch (kubectl pkg/cmd/apply/patcher.go).
- /openapi/v2 serves, in JSON, the same schemas as `definitions` (Swagger 2.0 `#/definitions/` references); a client
  that accepts only the protobuf form gets 406 Not Acceptable, after which client-go's OpenAPISchema gives up and
  kubectl carries on without it (patcher.go falls back to the built-in types).
"""
from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import aiohttp.web
import yaml

from kubesim.resources import ServedResource
from kubesim.server.http import api_error, reply

DOCS = Path(__file__).resolve().parent.parent / "openapi" / "v3"
CRD_DIRS = (Path(__file__).resolve().parents[2] / "provisioning" / "schemas",
            Path(__file__).resolve().parent.parent / "openapi" / "crds")
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_PARAM = {"in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _doc_key(api_version: str) -> str:
    return "api/v1" if api_version == "v1" else f"apis/{api_version}"


@functools.cache
def builtin_document(key: str) -> dict[str, Any] | None:
    """Upstream's document of a built-in group version ("api/v1", "apis/batch/v1"), or None."""
    path = DOCS / (key.replace("/", "__") + ".json")
    return json.loads(path.read_text()) if path.is_file() else None


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every CRD file kubesim knows."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for directory in CRD_DIRS:
        for path in sorted(directory.glob("*.crd.yaml")):
            crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            for version in crd["spec"]["versions"]:
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema:
                    found[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = schema
    return found


def _schema_name(served: ServedResource) -> str:
    # The apiextensions-apiserver names a CRD's schema after its group reversed: kueue.x-k8s.io -> io.x-k8s.kueue.
    return ".".join(reversed(served.group.split("."))) + f".{served.version}.{served.kind}"


def _gvk(served: ServedResource) -> dict[str, Any]:
    return {"x-kubernetes-group-version-kind": {"group": served.group, "version": served.version,
                                                "kind": served.kind}}


def _operation(served: ServedResource, verb: str, writes: bool, ref: str) -> dict[str, Any]:
    params = [{"name": "dryRun", **_PARAM}, {"name": "fieldManager", **_PARAM}]
    if writes:
        params.append({"name": "fieldValidation", **_PARAM})
    content = {"application/json": {"schema": {"$ref": ref}}}
    op: dict[str, Any] = {"operationId": f"{verb}{served.kind}", "x-kubernetes-action": verb,
                          "responses": {"200": {"content": content}}, **_gvk(served)}
    if verb in ("post", "put"):
        op["requestBody"] = {"content": content, "required": True}
    if verb == "patch":  # no strategic merge for custom resources
        op["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in (
            "application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json")},
            "required": True}
    if writes or verb == "delete":
        op["parameters"] = params
    return op


def crd_document(served_list: list[ServedResource]) -> dict[str, Any]:
    """The OpenAPI v3 document of a custom resources' group version."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for served in served_list:
        name = _schema_name(served)
        ref = f"#/components/schemas/{name}"
        base = f"/{_doc_key(served.api_version)}" + ("/namespaces/{namespace}" if served.namespaced else "")
        paths[f"{base}/{served.plural}"] = {"get": _operation(served, "list", False, ref),
                                            "post": _operation(served, "post", True, ref)}
        item = {verb: _operation(served, verb if verb != "get" else "get", verb != "get" and verb != "delete", ref)
                for verb in ("get", "put", "patch", "delete")}
        paths[f"{base}/{served.plural}/{{name}}"] = item
        if "status" in served.subresources:
            paths[f"{base}/{served.plural}/{{name}}/status"] = {
                verb: _operation(served, verb, verb != "get", ref) for verb in ("get", "put", "patch")}
        schema = copy.deepcopy(crd_schemas().get((served.api_version, served.kind))
                               or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
        props = schema.setdefault("properties", {})
        props["metadata"] = {"allOf": [{"$ref": f"#/components/schemas/{_OBJECT_META}"}]}
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        schemas[name] = {**schema, "x-kubernetes-group-version-kind": [_gvk(served)[
            "x-kubernetes-group-version-kind"]]}
    meta = builtin_document("api/v1")["components"]["schemas"]
    for name in (_OBJECT_META, "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference", "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"):
        schemas[name] = meta[name]
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths, "components": {"schemas": schemas}}


def _hash(doc: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()


def _accepts_json(accept: str) -> bool:
    return not accept or any(part.split(";")[0].strip() in ("application/json", "*/*", "application/*")
                             for part in accept.split(","))


class OpenAPIMixin:
    """OpenAPI answers of KubeEmulator, from the resources it serves (`self._served`)."""

    _served: dict
    _openapi_cache: dict | None

    def _openapi_changed(self) -> None:
        self._openapi_cache = None

    def _openapi_documents(self) -> dict[str, dict[str, Any]]:
        """Group version key ("apis/batch/v1") -> its document, for what is served now."""
        if self._openapi_cache is not None:
            return self._openapi_cache
        by_gv: dict[str, list[ServedResource]] = {}
        for served in self._served.values():
            by_gv.setdefault(_doc_key(served.api_version), []).append(served)
        docs = {}
        for key, served_list in sorted(by_gv.items()):
            # A built-in group version without an upstream document here (the Workload API of 1.36 and 1.37) gets
            # one built like a CRD's, its kinds' schemas keeping unknown fields: kubectl then leaves the field
            # checks to the server instead of asking for /openapi/v2 in protobuf.
            doc = None if served_list[0].custom else builtin_document(key)
            docs[key] = doc if doc is not None else crd_document(served_list)
        self._openapi_cache = docs
        return docs

    def schema_for(self, served: ServedResource) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """(the kind's schema, every component schema of its document), for validation and strategic merge."""
        doc = self._openapi_documents().get(_doc_key(served.api_version))
        if doc is None:
            return None
        schemas = doc["components"]["schemas"]
        for schema in schemas.values():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (served.group, served.version,
                                                                                served.kind):
                    return schema, schemas
        return None

    def openapi(self, path: str, params: dict[str, str], accept: str) -> aiohttp.web.StreamResponse:
        docs = self._openapi_documents()
        if path == "/openapi/v3":
            return reply({"paths": {key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(doc)}"}
                                    for key, doc in docs.items()}})
        if path.startswith("/openapi/v3/"):
            doc = docs.get(path[len("/openapi/v3/"):])
            if doc is None:
                raise api_error(404, "NotFound", "the server could not find the requested resource")
            digest = _hash(doc)
            headers = {"Etag": f'"{digest}"', "Cache-Control": "public, immutable" if params.get("hash") == digest
                       else "no-cache, private"}
            return reply(doc, headers=headers)
        if path == "/openapi/v2":
            if not _accepts_json(accept):
                raise api_error(406, "NotAcceptable", "only application/json is served for /openapi/v2")
            return reply(self._swagger(docs))
        raise api_error(404, "NotFound", "the server could not find the requested resource")

    @staticmethod
    def _swagger(docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        definitions: dict[str, Any] = {}
        for doc in docs.values():
            definitions.update(doc["components"]["schemas"])
        text = json.dumps(definitions).replace('"#/components/schemas/', '"#/definitions/')
        return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "unversioned"}, "paths": {},
                "definitions": json.loads(text)}
