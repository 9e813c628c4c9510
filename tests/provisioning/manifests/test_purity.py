"""The renderer is pure Python: nothing in provisioning/manifests imports Django (style rule 9)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import provisioning.manifests

PACKAGE = Path(provisioning.manifests.__file__).resolve().parent
REPO = PACKAGE.parent.parent


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_no_module_of_the_package_imports_django_or_rest_framework():
    offenders = {
        path.name: sorted(
            name for name in _imports(path) if name.split(".")[0] in {"django", "rest_framework", "celery"}
        )
        for path in PACKAGE.glob("*.py")
    }
    assert not {name: mods for name, mods in offenders.items() if mods}


def test_importing_and_rendering_loads_no_django_module():
    code = (
        "import sys\n"
        "from provisioning.manifests import render_all, validate_objects\n"
        "from tests.provisioning.manifests.matrix import cases\n"
        "case = cases()[0]\n"
        "validate_objects(render_all(case.team, case.request, case.cluster), case.cluster.kubernetes_version)\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
