"""A small CEL evaluator for the DRA selectors the renderer and the NVIDIA chart write, over ResourceSlice devices.

Anything else is a CelError (reported as a problem) rather than a guess."""

from __future__ import annotations

import re
from functools import cache

from .model import Inventory

# selector terms -----------------------------------------------------------------------

_ATTR = r"device\.attributes\['(?P<domain>[^']+)'\]"
_STRING = r"'(?P<value>(?:[^'\\]|\\.)*)'"
_CEL_PATTERNS = (
    ("driver", re.compile(rf"^device\.driver == {_STRING}$")),
    ("has", re.compile(rf"^'(?P<name>[A-Za-z0-9_./-]+)' in {_ATTR}$")),
    ("major", re.compile(rf"^{_ATTR}\.(?P<name>\w+)\.major\(\) (?P<op>>=|==|>|<=|<) (?P<number>\d+)$")),
    ("string", re.compile(rf"^{_ATTR}\.(?P<name>\w+) == {_STRING}$")),
    ("int", re.compile(rf"^{_ATTR}\.(?P<name>\w+) == (?P<number>\d+)$")),
)


class CelError(ValueError):
    """The expression reads an attribute the device lacks (aborts allocation), or is outside what we evaluate."""


def _attribute(slice_driver: str, device: dict, domain: str, name: str) -> dict | None:
    attributes = device.get("attributes") or {}
    if domain == slice_driver and name in attributes:
        return attributes[name]
    return attributes.get(f"{domain}/{name}")


@cache
def _parse_term(term: str) -> tuple[str, dict]:
    for kind, pattern in _CEL_PATTERNS:
        if match := pattern.match(term):
            return kind, match.groupdict()
    raise CelError(f"selector term {term!r} is outside what the checker evaluates")


def _cel_term(term: str, slice_driver: str, device: dict) -> bool:
    kind, match = _parse_term(term)
    if kind == "driver":
        return slice_driver == match["value"]
    value = _attribute(slice_driver, device, match["domain"], match["name"])
    if kind == "has":
        return value is not None
    if value is None:
        raise CelError(f"device {device['name']} has no attribute {match['name']!r} ({term})")
    if kind == "string":
        return value.get("string") == match["value"].replace("\\'", "'").replace("\\\\", "\\")
    if kind == "int":
        return value.get("int") == int(match["number"])
    major = int(str(value.get("version", "")).split(".")[0] or -1)
    number = int(match["number"])
    return {">=": major >= number, "==": major == number, ">": major > number, "<=": major <= number,
            "<": major < number}[match["op"]]  # fmt: skip


def cel_selects(expression: str, slice_driver: str, device: dict) -> bool:
    """`&&` short-circuits as in CEL, so a guard (`'x' in attrs && attrs.x...`) protects the terms after it."""
    for term in expression.split(" && "):
        if not _cel_term(term.strip(), slice_driver, device):
            return False
    return True


@cache
def selected_devices(inventory: Inventory, expressions: tuple[str, ...]) -> dict[str, int]:
    """Node name -> devices of its ResourceSlices that every expression selects (raises CelError)."""
    selected: dict[str, int] = {}
    for resource_slice in inventory.resource_slices:
        driver, node = resource_slice["spec"]["driver"], resource_slice["spec"].get("nodeName", "")
        for device in resource_slice["spec"].get("devices", []):
            if all(cel_selects(e, driver, device) for e in expressions):
                selected[node] = selected.get(node, 0) + 1
    return selected

