"""Request bodies in the Kubernetes protobuf encoding, which kubectl's typed clients send for built-in kinds
(client-go v0.37.0-beta.0 rest/client.go: "all generated clients accessing built-in kube resources are forced to
protobuf"), e.g. `kubectl create namespace`.

The envelope is the magic `k8s\\x00` and a runtime.Unknown (k8s.io/apimachinery pkg/runtime/generated.proto:
typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3, contentType = 4); `raw` is the object's
message. Decoded here: the kinds kubectl's `create` subcommands build that have no pod template (Namespace,
ConfigMap, Secret), with field numbers from k8s.io/api core/v1/generated.proto and ObjectMeta's from
k8s.io/apimachinery pkg/apis/meta/v1/generated.proto. Another kind answers 415, as a server without its protobuf
codec would.
"""
from __future__ import annotations

import base64
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

_META = ("metadata", "ObjectMeta")
# message -> field number -> (JSON name, type): a message name, string, bool, strings (repeated), or a map of
# string to string / to bytes (JSON base64).
MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
                   5: ("uid", "string"), 6: ("resourceVersion", "string"), 11: ("labels", "map:string"),
                   12: ("annotations", "map:string"), 14: ("finalizers", "strings")},
    "Namespace": {1: _META, 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "strings")},
    "ConfigMap": {1: _META, 2: ("data", "map:string"), 3: ("binaryData", "map:bytes"), 4: ("immutable", "bool")},
    "Secret": {1: _META, 2: ("data", "map:bytes"), 3: ("type", "string"), 4: ("stringData", "map:string"),
               5: ("immutable", "bool")},
}


class Undecodable(ValueError):
    """A protobuf body kubesim cannot read (answered with 415)."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise Undecodable("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value): varints as int, length-delimited as bytes; fixed-width skipped."""
    found, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            value, pos = None, pos + (8 if wire == 1 else 4)
        else:
            raise Undecodable(f"unsupported protobuf wire type {wire}")
        found.append((number, wire, value))
    return found


def _message(name: str, data: bytes) -> dict[str, Any]:
    table, obj = MESSAGES[name], {}
    for number, _, value in _fields(data):
        if number not in table or value is None:
            continue
        field, kind = table[number]
        if kind == "string":
            obj[field] = value.decode()
        elif kind == "bool":
            obj[field] = bool(value)
        elif kind == "strings":
            obj.setdefault(field, []).append(value.decode())
        elif kind.startswith("map:"):
            entry = {n: v for n, _, v in _fields(value)}
            raw = entry.get(2, b"")
            text = base64.b64encode(raw).decode() if kind == "map:bytes" else raw.decode()
            obj.setdefault(field, {})[entry.get(1, b"").decode()] = text
        else:
            obj[field] = _message(kind, value)
    return obj


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object."""
    if not body.startswith(MAGIC):
        raise Undecodable("the protobuf body lacks the k8s envelope")
    unknown = {number: value for number, _, value in _fields(body[len(MAGIC):])}
    type_meta = {number: value.decode() for number, _, value in _fields(unknown.get(1, b""))}
    api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
    if api_version != "v1" or kind not in MESSAGES:
        raise Undecodable(f"{api_version}/{kind} in protobuf is not decoded by the fake API server; send JSON")
    return {"apiVersion": api_version, "kind": kind, **_message(kind, unknown.get(2, b""))}
