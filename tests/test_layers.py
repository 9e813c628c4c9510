"""The layer contracts of pyproject.toml ([tool.importlinter], docs/architecture.md "Layers"), checked with
`lint-imports` the way a developer runs it: the apps point one way, the pure modules import nothing from Django,
and product code never imports the fake API server or the tests."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(config: Path) -> subprocess.CompletedProcess:
    # --no-cache: a cache written by another checkout or an older graph must not decide the verdict.
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", str(config)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_layer_contracts_are_kept():
    result = lint_imports(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path):
    # workflows.leases imports intake.services (the lease sweep cancels through the state machine); a contract
    # putting services above leases is broken by that import, wherever it stands: the graph counts imports inside
    # functions too.
    config = (ROOT / "pyproject.toml").read_text() + """
[[tool.importlinter.contracts]]
id = "services-above-leases"
name = "Intake's services above the workflows' leases"
type = "layers"
layers = ["intake.services", "workflows.leases"]
"""
    (tmp_path / "pyproject.toml").write_text(config)
    result = lint_imports(tmp_path / "pyproject.toml")
    assert result.returncode == 1
    assert "workflows.leases is not allowed to import intake.services" in result.stdout
    assert "workflows.leases -> intake.services" in result.stdout
