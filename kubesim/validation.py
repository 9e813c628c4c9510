"""What the API server refuses in a written object, as pure functions over the kind's OpenAPI v3 schema.

- Unknown fields (k8s.io/apimachinery pkg/runtime/serializer/json strict decoding; fieldValidation, KEP-2885): with
  `fieldValidation=Strict` a 400 BadRequest naming them ('strict decoding error: unknown field "spec.foo"'), with
  Warn (the default) a `Warning` header each, with Ignore nothing; in every case they are dropped (pruned).
- Wrong JSON types: for built-in kinds a decoding error (400, "cannot be handled as a Job"); for custom resources a
  422 cause "spec.x in body must be of type integer" (apiextensions-apiserver structural schema validation).
- 422 Invalid with field causes (k8s.io/apimachinery pkg/util/validation/field errors.go wording): a missing field
  the schema requires ("Required value"), a name that is not a DNS-1123 subdomain (or label, for Namespaces and
  Services), and three rules of kubernetes v1.35 pkg/apis/core/validation/validation.go and
  pkg/apis/batch/validation/validation.go the portal's objects meet: a Job's pods restart OnFailure or Never, a
  Pod's containers name an image, and an extended resource (nvidia.com/gpu) is requested as much as its limit.
Not checked: CEL rules, formats, enums, immutability on update, quota.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.patches import Schemas

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                     "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
               "array": (list,)}
_GO_TYPES = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool", "object": "map",
             "array": "slice"}


@dataclass
class Findings:
    unknown: list[str] = field(default_factory=list)  # paths of fields the schema does not declare
    type_errors: list[tuple[str, str, Any]] = field(default_factory=list)  # (path, expected type, value)
    causes: list[dict[str, str]] = field(default_factory=list)  # 422 causes: reason, message, field


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return str(value).lower() if isinstance(value, bool) else str(value)


def invalid(path: str, value: Any, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {_quote(value)}: {detail}", "field": path}


def required(path: str, detail: str = "") -> dict[str, str]:
    return {"reason": "FieldValueRequired", "message": "Required value" + (f": {detail}" if detail else ""),
            "field": path}


def not_supported(path: str, value: Any, supported: list[str]) -> dict[str, str]:
    listed = ", ".join(_quote(v) for v in supported)
    return {"reason": "FieldValueNotSupported", "message": f"Unsupported value: {_quote(value)}: supported values: "
            f"{listed}", "field": path}


def _lenient(schema: Mapping[str, Any]) -> bool:
    """Schemas a plain JSON type check would get wrong: int-or-string, quantities, unions, free-form objects."""
    return bool(schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string"
                or "oneOf" in schema or "anyOf" in schema or not schema.get("type") and "properties" not in schema)


def walk(value: Any, schema: Mapping[str, Any], schemas: Schemas, path: str, found: Findings) -> Any:
    """`value` with the fields `schema` does not declare removed, recording what is wrong in `found`."""
    schema = schemas.resolve(schema)
    if value is None or _lenient(schema):
        return value
    kind = schema.get("type") or "object"
    expected = _JSON_TYPES.get(kind, (object,))
    if not isinstance(value, expected) or (kind in ("integer", "number") and isinstance(value, bool)) \
            or (kind == "integer" and isinstance(value, float) and not value.is_integer()):
        found.type_errors.append((path, kind, value))
        return value
    if kind == "array":
        items = schema.get("items")
        return [walk(item, items, schemas, f"{path}[{i}]", found) for i, item in enumerate(value)] if items \
            else value
    if kind != "object":
        return value
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    kept = {}
    for key, item in value.items():
        child = f"{path}.{key}" if path else key
        if key in properties:
            kept[key] = walk(item, properties[key], schemas, child, found)
        elif isinstance(extra, Mapping):
            kept[key] = walk(item, extra, schemas, f"{path}[{key}]", found)
        elif extra is True or preserve or (not properties and extra is None):
            kept[key] = item
        else:
            found.unknown.append(child)
    for name in schema.get("required") or ():
        if name not in value and name not in ("apiVersion", "kind", "metadata"):
            found.causes.append(required(f"{path}.{name}" if path else name))
    return kept


def name_causes(obj: Mapping[str, Any]) -> list[dict[str, str]]:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if obj.get("kind") in ("Namespace", "Service"):
        if not DNS_LABEL.match(name) or len(name) > 63:
            return [invalid("metadata.name", name, LABEL_MESSAGE)]
    elif not DNS_SUBDOMAIN.match(name) or len(name) > 253:
        return [invalid("metadata.name", name, SUBDOMAIN_MESSAGE)]
    return []


def _containers(pod_spec: Mapping[str, Any], path: str) -> list[tuple[str, Mapping[str, Any]]]:
    return [(f"{path}.{group}[{i}]", c) for group in ("initContainers", "containers")
            for i, c in enumerate(pod_spec.get(group) or []) if isinstance(c, Mapping)]


def _resource_causes(container: Mapping[str, Any], path: str) -> list[dict[str, str]]:
    """Extended resources (a domain-qualified name outside kubernetes.io) cannot be overcommitted."""
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    causes = []
    for name, quantity in requests.items():
        if "/" not in name or name.split("/")[0].endswith("kubernetes.io"):
            continue
        if name not in limits:
            causes.append(required(f"{path}.resources.limits", "Limit must be set for non overcommitable resources"))
        elif str(limits[name]) != str(quantity):
            causes.append(invalid(f"{path}.resources.requests", str(quantity),
                                  f"must be equal to {name} limit of {limits[name]}"))
    return causes


def semantic_causes(obj: Mapping[str, Any]) -> list[dict[str, str]]:
    """The core and batch rules the module docstring names, for built-in kinds."""
    kind, spec = obj.get("kind"), obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    pod_spec, path = None, ""
    if kind == "Pod":
        pod_spec, path = spec, "spec"
    elif isinstance(spec.get("template"), Mapping) and isinstance(spec["template"].get("spec"), Mapping):
        pod_spec, path = spec["template"]["spec"], "spec.template.spec"
    causes = []
    if pod_spec is not None:
        if not pod_spec.get("containers"):
            causes.append(required(f"{path}.containers"))
        for cpath, container in _containers(pod_spec, path):
            if kind == "Pod" and not container.get("image"):
                causes.append(required(f"{cpath}.image"))
            causes += _resource_causes(container, cpath)
    if kind == "Job" and pod_spec is not None and pod_spec.get("restartPolicy") not in ("OnFailure", "Never"):
        value = pod_spec.get("restartPolicy") or ""
        causes.append(not_supported(f"{path}.restartPolicy", value, ["OnFailure", "Never"]) if value
                      else required(f"{path}.restartPolicy", 'valid values: "OnFailure", "Never"'))
    return causes


def check(obj: Mapping[str, Any], schema: Mapping[str, Any] | None, schemas: Schemas, *,
          builtin: bool) -> tuple[dict[str, Any], Findings]:
    """(the object as it would be stored, what is wrong with it)."""
    found = Findings()
    pruned = dict(obj)
    if schema is not None:
        meta = obj.get("metadata")
        pruned = walk(obj, schema, schemas, "", found)
        if meta is not None:  # metadata is ObjectMeta everywhere; its own unknown fields are dropped too
            pruned["metadata"] = meta
    found.causes[:0] = name_causes(obj)
    if builtin:
        found.causes += semantic_causes(pruned)
    return pruned, found
