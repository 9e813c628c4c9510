"""Offline validation of rendered objects against the official schemas (reference §12).

- Built-in kinds: the strict JSON schemas shipped in the `kubernetes-validate` package for the cluster's
  minor version, validated exactly like `kubernetes_validate.validate(obj, "<minor>.0", strict=True)` (same
  files, same Draft 2020-12 validator, same `$ref` registry) but with the parsed schemas and validators
  cached: the library re-reads its multi-megabyte definitions file on every call (~20 ms an object).
- Custom resources (Volcano, KAI, Kueue): the CRD schemas copied into `provisioning/schemas/` (sources in
  SOURCES.md there), made strict like the apiserver: `additionalProperties: false` on every object schema
  with `properties` and without `x-kubernetes-preserve-unknown-fields`, int-or-string as integer|string,
  `nullable`, and a permissive `metadata` (checked separately below).
- Every object: metadata name, label keys/values and annotation values, which the apiserver checks but the
  schemas do not.

Schema-valid is not semantically valid: CEL, quotas and feature gates only a live cluster checks.
Free of Django so appliers can call it at apply time.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path

import jsonschema
import yaml
from referencing import Registry, Resource

from .context import kubernetes_minor
from .errors import ManifestInvalid, Problem
from .names import DNS_1035_LABEL, DNS_1123_LABEL, LABEL_VALUE

CRD_DIR = Path(__file__).resolve().parent.parent / "schemas"
_KV_SCHEMAS = resources.files("kubernetes_validate") / "kubernetes-json-schema"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Kinds whose names are DNS labels (RFC 1123 / 1035) rather than subdomains.
_LABEL_NAMED_KINDS = {"Namespace": DNS_1123_LABEL, "Service": DNS_1035_LABEL}
MAX_MESSAGE = 300


# --- built-in kinds (kubernetes-validate schemas) --------------------------------------------------------------


def _schema_file_name(obj: dict) -> str:
    # Same mapping as kubernetes_validate: "scheduling.k8s.io/v1beta1" -> "scheduling-v1beta1", "v1" -> "v1".
    api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", obj["apiVersion"])
    return f"{obj['kind'].lower()}-{api_version}.json"


@cache
def _builtin_registry(minor: int) -> Registry:
    definitions = json.loads((_KV_SCHEMAS / f"v1.{minor}.0-local-strict" / "_definitions.json").read_text())
    return Resource.from_contents(definitions) @ Registry()


@cache
def _builtin_validator(minor: int, file_name: str) -> jsonschema.protocols.Validator | None:
    path = _KV_SCHEMAS / f"v1.{minor}.0-local-strict" / file_name
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    registry = Resource.from_contents(schema) @ _builtin_registry(minor)
    return jsonschema.Draft202012Validator(schema, registry=registry)


# --- custom resources (CRD schemas) ----------------------------------------------------------------------------


def strict_schema(schema: dict, *, root: bool = True) -> dict:
    """A copy of a CRD's openAPIV3Schema that rejects unknown fields like the apiserver does."""
    node = {key: value for key, value in schema.items()}
    if node.pop("nullable", False) and "type" in node:
        node["type"] = [node["type"], "null"]
    if node.get("x-kubernetes-int-or-string"):
        node.pop("type", None)
        node.pop("anyOf", None)
        node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if "properties" in node:
        node["properties"] = {name: strict_schema(sub, root=False) for name, sub in node["properties"].items()}
        if root and "metadata" in node["properties"]:
            node["properties"]["metadata"] = {"type": "object"}
        if not node.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in node:
            node["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = strict_schema(node["additionalProperties"], root=False)
    if isinstance(node.get("items"), dict):
        node["items"] = strict_schema(node["items"], root=False)
    for combinator in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(combinator), list):
            node[combinator] = [strict_schema(sub, root=False) for sub in node[combinator]]
    return node


@cache
def _crd_schemas() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> raw openAPIV3Schema, for every served version of every CRD file."""
    index = {}
    for path in sorted(CRD_DIR.glob("*.crd.yaml")):
        crd = yaml.load(path.read_text(), Loader=_YAML_LOADER)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served", True):
                index[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return index


@cache
def _crd_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
    schema = _crd_schemas().get((api_version, kind))
    if schema is None:
        return None
    return jsonschema.Draft7Validator(strict_schema(copy.deepcopy(schema)))


def _is_builtin_group(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")  # core, apps, batch, policy, *.k8s.io


def _validator_for(obj: dict, minor: int) -> jsonschema.protocols.Validator | None:
    api_version = obj.get("apiVersion", "")
    validator = None
    # Only built-in groups may use the kubernetes-validate files: their names drop the group's domain, so
    # `scheduling.volcano.sh/v1beta1` PodGroup would otherwise be checked as `scheduling.k8s.io/v1beta1` PodGroup.
    if _is_builtin_group(api_version):
        validator = _builtin_validator(minor, _schema_file_name(obj))
    if validator is None:  # custom resources, including CRDs in *.k8s.io groups
        validator = _crd_validator(api_version, obj.get("kind", ""))
    return validator


# --- metadata (apiserver rules the schemas do not carry) -------------------------------------------------------


def _label_problems(labels, path: str) -> list[tuple[str, str]]:
    found = []
    for key, value in (labels or {}).items():
        prefix, _, name = key.rpartition("/")
        if not _QUALIFIED_NAME.match(name) or len(name) > 63 or (prefix and not _DNS_SUBDOMAIN.match(prefix)):
            found.append((f"{path}['{key}']", f"label key {key!r} is not a qualified name"))
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            found.append((f"{path}['{key}']", f"label value {value!r} is not a valid label value"))
    return found


def _annotation_problems(annotations, path: str) -> list[tuple[str, str]]:
    return [
        (f"{path}['{key}']", f"annotation value {value!r} must be a string")
        for key, value in (annotations or {}).items()
        if not isinstance(value, str)
    ]


def _metadata_problems(obj: dict) -> list[tuple[str, str]]:
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    pattern = _LABEL_NAMED_KINDS.get(obj.get("kind"))
    found = []
    if pattern is not None and (not pattern.match(name) or len(name) > 63):
        found.append(("$.metadata.name", f"{name!r} is not a valid {obj.get('kind')} name (DNS label)"))
    elif pattern is None and (not _DNS_SUBDOMAIN.match(name) or len(name) > 253):
        found.append(("$.metadata.name", f"{name!r} is not a DNS-1123 subdomain"))
    found += _label_problems(meta.get("labels"), "$.metadata.labels")
    found += _annotation_problems(meta.get("annotations"), "$.metadata.annotations")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    # Pod templates (Job, Deployment) and the claim template of a ResourceClaimTemplate carry metadata too.
    for path, inner in (
        ("$.spec.template.metadata", template.get("metadata")),
        ("$.spec.metadata", spec.get("metadata")),
    ):
        if isinstance(inner, dict):
            found += _label_problems(inner.get("labels"), f"{path}.labels")
            found += _annotation_problems(inner.get("annotations"), f"{path}.annotations")
    return found


# --- entry point -----------------------------------------------------------------------------------------------


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def object_problems(obj: dict, minor: int) -> list[Problem]:
    kind = str(obj.get("kind", "?"))
    name = str((obj.get("metadata") or {}).get("name", "?"))
    validator = _validator_for(obj, minor)
    if validator is None:
        return [Problem(kind, name, "$", f"no schema for {obj.get('apiVersion')} {kind} on Kubernetes 1.{minor}")]
    problems = [Problem(kind, name, error.json_path, _short(error.message)) for error in validator.iter_errors(obj)]
    problems += [Problem(kind, name, path, message) for path, message in _metadata_problems(obj)]
    return problems


def validate_objects(objects: list[dict], kubernetes_version: str) -> int:
    """Validate every object for the given Kubernetes version ("1.36" or "1.36.2").

    Returns the number of objects validated; raises ManifestInvalid listing every problem found.
    """
    minor = kubernetes_minor(kubernetes_version)
    problems = [problem for obj in objects for problem in object_problems(obj, minor)]
    if problems:
        raise ManifestInvalid(problems)
    return len(objects)
