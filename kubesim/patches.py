"""Patch types the API server accepts besides JSON merge patch and apply (those are in apimachinery.py), and the
schema walk they and validation share. Pure functions over plain dicts.

- JSON patch (RFC 6902): add, remove, replace, move, copy, test, with JSON pointers (RFC 6901).
- Strategic merge patch (k8s.io/apimachinery v0.35 pkg/util/strategicpatch/patch.go): maps merge and null
  deletes, as in a JSON merge patch; a list whose schema says `x-kubernetes-patch-strategy: merge` merges its
  elements by `x-kubernetes-patch-merge-key` (a list of scalars merges as a set), other lists are replaced. The
  directives kubectl sends are honoured: `$patch: delete` on an element (or `$patch: replace` on a map or list),
  `$setElementOrder/<list>` (the order of the merged list), `$deleteFromPrimitiveList/<list>` and `$retainKeys`.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

SET_ELEMENT_ORDER = "$setElementOrder/"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"


class PatchError(ValueError):
    """A patch the API server would refuse (it answers 422 or 400 with this message)."""


# -- the schema walk --------------------------------------------------------------------------------------------


class Schemas:
    """Walks OpenAPI v3 component schemas: `$ref` and `allOf: [{$ref}]` wrappers resolved."""

    def __init__(self, components: Mapping[str, Any]) -> None:
        self.components = components

    def resolve(self, schema: Mapping[str, Any] | None) -> dict[str, Any]:
        schema = dict(schema or {})
        for _ in range(20):  # references nest a few levels at most
            ref = schema.pop("$ref", None)
            if ref is None and len(schema.get("allOf") or ()) == 1 and "$ref" in schema["allOf"][0]:
                ref = schema.pop("allOf")[0]["$ref"]
            if ref is None:
                return schema
            target = self.components.get(ref.rsplit("/", 1)[-1]) or {}
            schema = {**target, **schema}
        return schema

    def field(self, schema: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
        resolved = self.resolve(schema)
        if key in (resolved.get("properties") or {}):
            return self.resolve(resolved["properties"][key])
        extra = resolved.get("additionalProperties")
        return self.resolve(extra) if isinstance(extra, Mapping) else {}

    def items(self, schema: Mapping[str, Any] | None) -> dict[str, Any]:
        return self.resolve(self.resolve(schema).get("items"))


# -- JSON patch -------------------------------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchError(f"doc is missing path: {path!r}")
    return node


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise PatchError(f"doc is missing path: {path!r}")


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list) and (last == "-" or (last.isdigit() and int(last) <= len(parent))):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        raise PatchError(f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    _get(doc, path)  # must exist
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict):
        del parent[last]
    else:
        del parent[int(last)]
    return doc


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 applied to a copy of `doc`."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch is a list of operations")
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind, path = op.get("op"), op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _add(_remove(doc, path), path, copy.deepcopy(op.get("value"))) if _pointer(path) else op.get("value")
        elif kind in ("move", "copy"):
            value = copy.deepcopy(_get(doc, op.get("from", "")))
            if kind == "move":
                doc = _remove(doc, op["from"])
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchError(f"unexpected JSON patch operation {kind!r}")
    return doc


# -- strategic merge patch --------------------------------------------------------------------------------------


def strategic_merge(live: Any, patch: Any, schema: Mapping[str, Any] | None, schemas: Schemas) -> Any:
    """`patch` applied to `live` (neither is changed) under the patch strategies `schema` declares."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(dict(live)) if isinstance(live, Mapping) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith(SET_ELEMENT_ORDER):
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            name = key[len(DELETE_FROM_PRIMITIVE_LIST):]
            result[name] = [v for v in result.get(name) or [] if v not in value]
            continue
        field = schemas.field(schema, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and field.get("x-kubernetes-patch-strategy", "").startswith("merge"):
            order = patch.get(SET_ELEMENT_ORDER + key)
            result[key] = _merge_list(result.get(key) or [], value, field, schemas, order)
        elif isinstance(value, Mapping):
            merged = strategic_merge(result.get(key), value, field, schemas)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(live: list, patch: list, field: Mapping[str, Any], schemas: Schemas, order: list | None) -> list:
    key = field.get("x-kubernetes-patch-merge-key")
    if not key:  # a list of scalars merged as a set
        merged = list(live) + [v for v in patch if v not in live]
        return _ordered(merged, order, None)
    items = schemas.items(field)
    merged = [copy.deepcopy(element) for element in live]
    for element in patch:
        if not isinstance(element, Mapping) or key not in element:
            raise PatchError(f"map: {element!r} does not contain declared merge key: {key}")
        index = next((i for i, current in enumerate(merged) if current.get(key) == element[key]), None)
        if element.get("$patch") == "delete":
            if index is not None:
                del merged[index]
            continue
        if index is None:
            merged.append(strategic_merge({}, element, items, schemas))
        else:
            merged[index] = strategic_merge(merged[index], element, items, schemas)
    return _ordered(merged, order, key)


def _ordered(merged: list, order: list | None, key: str | None) -> list:
    """The merged list in `$setElementOrder`'s order; elements it does not name keep their place after."""
    if not order:
        return merged
    ident = (lambda e: e.get(key)) if key else (lambda e: e)
    wanted = [o.get(key) if key and isinstance(o, Mapping) else o for o in order]
    placed = [e for w in wanted for e in merged if ident(e) == w]
    return placed + [e for e in merged if ident(e) not in wanted]
