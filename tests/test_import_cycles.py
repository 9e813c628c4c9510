"""No circle of imports, between the apps or between the modules inside one: `scripts/import_cycles.py`, the way a
developer runs it, counts every import (inside functions too), so a circle dodged by an import inside a function
is still found."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_module_of_an_app_imports_itself_through_others():
    result = subprocess.run([sys.executable, "scripts/import_cycles.py"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert "pairs of packages on a cycle (directly or through others): 0" in result.stdout, result.stdout
    assert "circles of modules inside a package: 0" in result.stdout, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
