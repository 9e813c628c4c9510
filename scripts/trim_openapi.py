"""Trim upstream Kubernetes OpenAPI v3 documents to what kubesim serves (kubesim/openapi/SOURCES.md).

    python scripts/trim_openapi.py SOURCE_DIR kubesim/openapi/v3/1.35

SOURCE_DIR holds upstream's documents laid out as `api/v1.json`, `apis/<group>/<version>.json` (the layout of
kubernetes-sigs/kubectl-validate's pkg/openapiclient/builtins/<minor>/, byte copies of kubernetes/kubernetes
api/openapi-spec/v3/). Each kept document keeps only the paths of the resources kubesim serves (their collection,
item, status and scale paths; the deprecated /watch/ paths go) and the component schemas those paths reach;
everything kept is upstream's text unchanged.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

# group/version -> plurals served by kubesim (kubesim/resources.py BUILTIN_RESOURCES and the 1.35 Workload API).
SERVED = {
    "v1": {"namespaces", "nodes", "pods", "services", "configmaps", "secrets", "resourcequotas", "events"},
    "apps/v1": {"deployments", "statefulsets"},
    "batch/v1": {"jobs"},
    "policy/v1": {"poddisruptionbudgets"},
    "networking.k8s.io/v1": {"networkpolicies"},
    "scheduling.k8s.io/v1": {"priorityclasses"},
    "scheduling.k8s.io/v1alpha1": {"workloads"},
    "resource.k8s.io/v1": {"deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"},
}
KEPT_SUBRESOURCES = {"status", "scale", "finalize"}


def _kept(path: str, prefix: str, plurals: set[str]) -> bool:
    rest = [part for part in path[len(prefix):].split("/") if part]
    if not rest:
        return True  # the group version's own resource list
    if rest[0] == "watch":
        return False
    if rest[:1] == ["namespaces"] and len(rest) >= 3 and rest[2] not in KEPT_SUBRESOURCES:
        rest = rest[2:]
    if rest[0] not in plurals:
        return False
    return len(rest) <= 2 or (len(rest) == 3 and rest[2] in KEPT_SUBRESOURCES)


def _refs(node, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            found.add(ref.rsplit("/", 1)[1])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def trim(doc: dict, api_version: str) -> dict:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    paths = {p: v for p, v in doc["paths"].items() if _kept(p, prefix, SERVED[api_version])}
    schemas = doc["components"]["schemas"]
    wanted: set[str] = set()
    _refs(paths, wanted)
    todo = list(wanted)
    while todo:
        found: set[str] = set()
        _refs(schemas[todo.pop()], found)
        todo += sorted(found - wanted)
        wanted |= found
    components = {**doc["components"], "schemas": {name: schemas[name] for name in sorted(wanted)}}
    return {**doc, "paths": paths, "components": components}


def main(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for api_version in SERVED:
        relative = "api/v1.json" if api_version == "v1" else f"apis/{api_version}.json"
        doc = json.loads((source / relative).read_text())
        out = target / (relative.replace("/", "__"))
        out.write_text(json.dumps(trim(doc, api_version), indent=1, sort_keys=True) + "\n")
        print(f"{out}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
