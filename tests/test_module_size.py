"""A module does one job and stays under 400 lines: every Python module of the project outside migrations, tests
and benchmarks, unless its first line is a comment saying why it is kept whole (`# Kept whole: <why>`)
(docs/testing.md)."""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
KEPT_WHOLE = re.compile(r"# Kept whole: \S.{20,}")  # the reason, in words, not just the marker

# Not the product: its tests, benchmarks and migrations; and what tools and builds put in the checkout.
SKIPPED_AT_TOP = {"tests", "bench"}
SKIPPED_ANYWHERE = {"migrations", "__pycache__", "node_modules", "venv", "site", "build", "staticfiles", "var",
                    "test-artifacts"}


def _skipped(directory: Path) -> bool:
    name = directory.name
    return (name.startswith(".") or name in SKIPPED_ANYWHERE or name.endswith(".egg-info")
            or (directory.parent == ROOT and name in SKIPPED_AT_TOP) or (directory / "pyvenv.cfg").exists())


def product_modules() -> dict[str, list[str]]:
    """Every product module, relative path -> its lines."""
    modules = {}
    for folder, subfolders, files in os.walk(ROOT):
        here = Path(folder)
        subfolders[:] = sorted(d for d in subfolders if not _skipped(here / d))
        for name in sorted(files):
            if name.endswith(".py"):
                path = here / name
                modules[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8").splitlines()
    return modules


def over_the_limit(modules: dict[str, list[str]]) -> set[str]:
    return {path for path, lines in modules.items()
            if len(lines) > MAX_LINES and not KEPT_WHOLE.fullmatch(lines[0].strip())}


def test_the_walk_sees_the_product_and_not_its_tests():
    modules = product_modules()
    assert {"manage.py", "portal/settings/base.py", "intake/hooks.py", "provisioning/kube/client.py"} <= set(modules)
    assert not [path for path in modules if path.startswith(("tests/", "bench/", ".venv/")) or "/migrations/" in path]


def test_no_module_is_over_400_lines_without_saying_why_it_is_kept_whole():
    too_long = sorted(over_the_limit(product_modules()))
    assert not too_long, (
        f"over {MAX_LINES} lines: {too_long}. Split each into a package whose __init__.py re-exports its public "
        "names, or make its first line '# Kept whole: <why>'.")

