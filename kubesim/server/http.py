"""The HTTP side of the fake API server: request paths, bodies and query booleans as the API server parses them,
and answers, errors included, as Kubernetes `Status` objects."""
from __future__ import annotations

import datetime
import http
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp.web
import kmock
import yaml

from kubesim.resources import ServedResource
from kubesim.server import protobuf

NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


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


def decode_body(body: bytes, content_type: str) -> Any:
    if not body:
        return None
    if content_type.startswith(protobuf.CONTENT_TYPE):
        try:
            return protobuf.decode(body)
        except protobuf.Undecodable:
            return None  # the route answers 415
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


def unprocessable(served: ServedResource, name: str, causes: list[dict[str, str]]) -> kmock.KubernetesError:
    """422 Invalid, worded as the API server's StatusError for field errors (k8s.io/apimachinery
    pkg/api/errors/errors.go NewInvalid)."""
    listed = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    summary = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    qualified = f"{served.kind}.{served.group}" if served.group else served.kind
    return api_error(422, "Invalid", f'{qualified} "{name}" is invalid: {summary}', name=name, group=served.group,
                     kind=served.kind, causes=causes)


def reply(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None, *,
          content_type: str = "application/json") -> aiohttp.web.Response:
    """A JSON answer; `content_type` may carry parameters (aggregated discovery's `;g=...;v=...;as=...`)."""
    all_headers = {**(headers or {}), "Content-Type": content_type}
    return aiohttp.web.Response(body=json.dumps(obj).encode(), status=status, headers=all_headers)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def go_bool(value: str | None) -> bool:
    """Query booleans as the API server parses them (Go's strconv.ParseBool)."""
    return value in {"1", "t", "T", "TRUE", "true", "True"}

