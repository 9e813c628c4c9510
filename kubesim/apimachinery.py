"""Pure functions behind the fake API server: label and field selectors, JSON merge patch, and server-side apply
with field ownership recorded in metadata.managedFields.

Simplifications against a real API server, none of which our code relies on: every list is atomic (a real server
merges lists such as containers by key), fieldsV1 lists leaf fields only (no "." or "k:" entries), and an Update
takes ownership of the fields it sends rather than of the ones it changes.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FieldPath = tuple[str, ...]

# Set by the server, never owned by a field manager.
SERVER_FIELDS: tuple[FieldPath, ...] = (
    ("apiVersion",),
    ("kind",),
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("metadata", "uid"),
    ("metadata", "resourceVersion"),
    ("metadata", "generation"),
    ("metadata", "creationTimestamp"),
    ("metadata", "deletionTimestamp"),
    ("metadata", "managedFields"),
    ("metadata", "selfLink"),
)


class SelectorError(ValueError):
    """A selector the API server would reject with 400."""


# -- label selectors --------------------------------------------------------------------------------------------

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_REQUIREMENT = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQUALITY_REQUIREMENT = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>[-A-Za-z0-9_.]*)$")
_EXISTS_REQUIREMENT = re.compile(rf"^(?P<not>!?)\s*(?P<key>{_KEY})$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # = != in notin exists !exists
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        match self.op:
            case "=" | "in":
                return present and labels[self.key] in self.values
            case "!=" | "notin":  # like the API server: true when the label is absent
                return not present or labels[self.key] not in self.values
            case "exists":
                return present
            case _:
                return not present


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse `a=1,b!=2,c in (x,y),d notin (z),e,!f` (commas inside parentheses do not split)."""
    requirements = []
    for part in _split_outside_parentheses(text or ""):
        if match := _SET_REQUIREMENT.match(part):
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            requirements.append(Requirement(match["key"], match["op"], values))
        elif match := _EQUALITY_REQUIREMENT.match(part):
            op = "!=" if match["op"] == "!=" else "="
            requirements.append(Requirement(match["key"], op, frozenset({match["value"]})))
        elif match := _EXISTS_REQUIREMENT.match(part):
            requirements.append(Requirement(match["key"], "!exists" if match["not"] else "exists"))
        else:
            raise SelectorError(f"unable to parse requirement: {part!r}")
    return requirements


def labels_match(requirements: list[Requirement], obj: Mapping[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(requirement.matches(labels) for requirement in requirements)


def _split_outside_parentheses(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


# -- field selectors --------------------------------------------------------------------------------------------

# What real API servers accept besides metadata.name and metadata.namespace (a subset of theirs).
FIELD_SELECTABLE: dict[str, frozenset[str]] = {
    "pods": frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "status.phase", "status.podIP"}),
    "nodes": frozenset({"spec.unschedulable"}),
    "namespaces": frozenset({"status.phase"}),
}
_FIELD_REQUIREMENT = re.compile(r"^(?P<field>[A-Za-z.]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^,]*)$")


def parse_field_selector(text: str | None, plural: str) -> list[tuple[FieldPath, bool, str]]:
    """Parse `metadata.name=x,status.phase!=Failed` into (path, equal, value) triples."""
    allowed = {"metadata.name", "metadata.namespace"} | FIELD_SELECTABLE.get(plural, frozenset())
    parsed = []
    for part in _split_outside_parentheses(text or ""):
        match = _FIELD_REQUIREMENT.match(part)
        if not match:
            raise SelectorError(f"invalid field selector: {part!r}")
        if match["field"] not in allowed:
            raise SelectorError(f'field label not supported: {match["field"]}')
        parsed.append((tuple(match["field"].split(".")), match["op"] != "!=", match["value"]))
    return parsed


def fields_match(requirements: list[tuple[FieldPath, bool, str]], obj: Mapping[str, Any]) -> bool:
    # A missing field compares as "", as on a real server.
    return all(
        (_field_text(get_path(obj, path)) == value) == equal for path, equal, value in requirements
    )


def _field_text(value: Any) -> str:
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- paths and patches ------------------------------------------------------------------------------------------


def get_path(obj: Any, path: FieldPath) -> Any:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return None
        obj = obj[key]
    return obj


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, null deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def leaf_paths(obj: Mapping[str, Any], prefix: FieldPath = ()) -> set[FieldPath]:
    """The fields a manager sets: leaves of nested dicts (lists and empty dicts count as leaves)."""
    paths: set[FieldPath] = set()
    for key, value in obj.items():
        path = prefix + (key,)
        if any(_overlaps(path, server) and len(path) >= len(server) for server in SERVER_FIELDS):
            continue
        if isinstance(value, Mapping) and value:
            paths |= leaf_paths(value, path)
        else:
            paths.add(path)
    return paths


def to_fields_v1(paths: set[FieldPath]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return root


def from_fields_v1(fields: Mapping[str, Any], prefix: FieldPath = ()) -> set[FieldPath]:
    children = {key[2:]: value for key, value in fields.items() if key.startswith("f:")}
    if not children:
        return {prefix} if prefix else set()
    paths: set[FieldPath] = set()
    for key, value in children.items():
        paths |= from_fields_v1(value or {}, prefix + (key,))
    return paths


def _overlaps(a: FieldPath, b: FieldPath) -> bool:
    """True when one path is the other or lies inside it."""
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def _delete_path(obj: dict[str, Any], path: FieldPath) -> None:
    """Remove a field and the dicts it leaves empty."""
    parent = get_path(obj, path[:-1]) if len(path) > 1 else obj
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
        if not parent and len(path) > 1:
            _delete_path(obj, path[:-1])


# -- managed fields and server-side apply -----------------------------------------------------------------------


class ApplyConflict(Exception):
    def __init__(self, conflicts: list[tuple[str, FieldPath]]) -> None:
        self.conflicts = conflicts
        described = "; ".join(f'conflict with "{manager}": .{".".join(path)}' for manager, path in conflicts)
        super().__init__(f"Apply failed with {len(conflicts)} conflict(s): {described}")


def managed_entry(manager: str, operation: str, api_version: str, paths: set[FieldPath], now: str) -> dict:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(paths),
    }


def _owners(obj: Mapping[str, Any]) -> list[tuple[dict[str, Any], set[FieldPath]]]:
    entries = obj.get("metadata", {}).get("managedFields") or []
    return [(entry, from_fields_v1(entry.get("fieldsV1") or {})) for entry in entries]


def server_side_apply(
    live: Mapping[str, Any] | None, applied: Mapping[str, Any], manager: str, force: bool, now: str
) -> dict[str, Any]:
    """The object after `manager` applies `applied` to `live` (None: the object does not exist yet).

    Fields this manager applied before and now leaves out are removed unless another manager owns them; fields
    another manager owns with a different value are a conflict unless `force`, which takes them over.
    """
    result = copy.deepcopy(dict(live or {}))
    applied_paths = leaf_paths(applied)
    owners = _owners(result)
    mine = next((owned for entry, owned in owners if _is_entry(entry, manager, "Apply")), set())
    others = [(entry, owned) for entry, owned in owners if not _is_entry(entry, manager, "Apply")]

    conflicts = [
        (entry["manager"], path)
        for entry, owned in others
        for path in sorted(applied_paths & owned)
        if get_path(result, path) != get_path(applied, path)
    ]
    if conflicts and not force:
        raise ApplyConflict(conflicts)

    for path in mine - applied_paths:
        if not any(_overlaps(path, owned_path) for _, owned in others for owned_path in owned):
            _delete_path(result, path)
    result = merge_patch(result, _without_nulls(applied))

    taken = {path for _, path in conflicts}
    mine_entry = managed_entry(manager, "Apply", applied.get("apiVersion", ""), applied_paths, now)
    result.setdefault("metadata", {})["managedFields"] = _replace_entries(owners, manager, "Apply", mine_entry, taken)
    return result


def record_update(obj: dict[str, Any], sent: Mapping[str, Any], manager: str, now: str) -> None:
    """Give `manager` (operation Update) the fields it sent, taking them from other managers."""
    sent_paths = {path for path in leaf_paths(sent) if get_path(sent, path) is not None}
    owners = _owners(obj)
    mine = next((owned for entry, owned in owners if _is_entry(entry, manager, "Update")), set())
    mine_entry = managed_entry(manager, "Update", obj.get("apiVersion", ""), mine | sent_paths, now)
    entries = _replace_entries(owners, manager, "Update", mine_entry, sent_paths)
    obj.setdefault("metadata", {})["managedFields"] = entries


def _replace_entries(
    owners: list[tuple[dict[str, Any], set[FieldPath]]],
    manager: str,
    operation: str,
    mine_entry: dict[str, Any],
    taken: set[FieldPath],
) -> list[dict[str, Any]]:
    """managedFields with `mine_entry` in its old place (or last) and `taken` fields removed from the others;
    untouched entries stay as they were, so a write that changes nothing leaves managedFields equal."""
    entries, placed = [], False
    for entry, owned in owners:
        if _is_entry(entry, manager, operation):
            entries.append(mine_entry)
            placed = True
        elif not owned & taken:
            entries.append(entry)
        elif owned - taken:
            entries.append({**entry, "fieldsV1": to_fields_v1(owned - taken)})
    if not placed:
        entries.append(mine_entry)
    return entries


def without_times(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object with managedFields timestamps removed: what decides whether a write changed anything."""
    result = copy.deepcopy(dict(obj))
    for entry in result.get("metadata", {}).get("managedFields") or []:
        entry.pop("time", None)
    return result


def _is_entry(entry: Mapping[str, Any], manager: str, operation: str) -> bool:
    return entry.get("manager") == manager and entry.get("operation") == operation


def _without_nulls(obj: Any) -> Any:
    # In an apply configuration null means "not set by me", not "delete".
    if isinstance(obj, Mapping):
        return {key: _without_nulls(value) for key, value in obj.items() if value is not None}
    return obj
