"""Runs checkov, a standard Kubernetes security scanner, on objects and returns its failed checks as data.

checkov lives in its own virtualenv (.venv-scan, made by scripts/scan-venv from scripts/scan-requirements.txt):
it brings many packages of its own that must not move the app's pinned dependencies. The objects are written as
YAML files to a temporary directory and scanned with `checkov -d DIR --framework kubernetes -o json`; each
failed check is traced back to the object it is about, so findings can be keyed by what the object is (a
workload class, a chart component) rather than by its generated name.
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCAN_VENV_SCRIPT = ROOT / "scripts" / "scan-venv"


@dataclass(frozen=True, order=True)
class Finding:
    check_id: str  # CKV_K8S_23
    subject: str  # what the object is: "inference", "worker", ...
    check_name: str
    resource: str  # Kind.namespace.name, as checkov names it

    @property
    def key(self) -> tuple[str, str]:
        return self.check_id, self.subject


@dataclass(frozen=True)
class ScanResult:
    passed: int
    failed: int
    resource_count: int
    parsing_errors: int
    findings: tuple[Finding, ...]
    scanned: frozenset[str]  # every resource some check ran on, passed or failed: "Kind.namespace.name"

    def keys(self) -> set[tuple[str, str]]:
        return {f.key for f in self.findings}


def resource_id(obj: dict) -> str:
    """How checkov names an object: Kind.namespace.name (cluster-scoped objects in "default")."""
    meta = obj["metadata"]
    return f"{obj['kind']}.{meta.get('namespace', 'default')}.{meta['name']}"


def _object_of(index: dict, file_path: str, resource: str) -> dict:
    kind, _namespace, name = resource.split(".", 2)
    if (file_path, kind, name) in index:
        return index[(file_path, kind, name)]
    # checkov also checks each pod template as a "Pod" named "<owner>.<label key>-<value>...": its owner's.
    owner = name.split(".", 1)[0]
    for owner_kind in ("Deployment", "Job"):
        if (file_path, owner_kind, owner) in index:
            return index[(file_path, owner_kind, owner)]
    raise KeyError(f"checkov reported {resource} in {file_path}, which is none of the scanned objects")


def checkov_executable() -> Path:
    """The scanner, installed first if this machine does not have it yet (scripts/scan-venv is idempotent)."""
    result = subprocess.run([str(SCAN_VENV_SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"scripts/scan-venv failed:\n{result.stderr[-4000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def scan(
    documents: Mapping[str, Sequence[dict]], workdir: Path, subject_of: Callable[[dict], str]
) -> ScanResult:
    """Scan `documents` ({file stem: objects}) and key each failed check by `subject_of(object)`."""
    index = {}
    for stem, objects in documents.items():
        (workdir / f"{stem}.yaml").write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
        for obj in objects:
            index[(f"/{stem}.yaml", obj["kind"], obj["metadata"]["name"])] = obj
    command = [str(checkov_executable()), "-d", str(workdir), "--framework", "kubernetes", "-o", "json",
               "--compact", "--skip-download"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if completed.returncode not in (0, 1):  # 1: some check failed
        raise RuntimeError(f"checkov exited {completed.returncode}:\n{completed.stderr[-4000:]}")
    report = json.loads(completed.stdout)
    if isinstance(report, list):  # one report per framework; we ask for one
        (report,) = report
    findings = []
    for check in report["results"]["failed_checks"]:
        obj = _object_of(index, check["file_path"], check["resource"])
        findings.append(Finding(check["check_id"], subject_of(obj), check["check_name"], check["resource"]))
    summary = report["summary"]
    scanned = frozenset(c["resource"] for c in report["results"]["passed_checks"] + report["results"]["failed_checks"])
    return ScanResult(passed=summary["passed"], failed=summary["failed"], resource_count=summary["resource_count"],
                      parsing_errors=summary["parsing_errors"], findings=tuple(sorted(findings)), scanned=scanned)
