"""docs/architecture.md names the functions and modules the main path goes through; every one of them exists.

Each dotted name in backticks that starts with one of the project's packages is imported (the longest importable
prefix) and the rest read with getattr; each path in backticks (`provisioning/fit.py`, `reconcile/`) is a file or
folder of the checkout or of one of its apps."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("gpu", "portal", "intake", "provisioning", "chargeback", "register", "workflows", "demo", "kubesim")
DOTTED = re.compile(r"`((?:%s)(?:\.[A-Za-z_]\w*)+)(?:\(\))?`" % "|".join(PACKAGES))  # not `demo.py`: a file
PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*(?:\.py|/))`")


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError:
            return False
        return True
    return False


def test_the_walk_from_the_web_form_to_the_chargeback_report_is_on_the_page():
    text = PAGE.read_text()
    walk = text[text.index("### From the web form to the chargeback report"):text.index("### The decision as a type")]
    names = DOTTED.findall(walk)
    assert "workflows.views.request_new" in names and "chargeback.selectors.report_rows" in names
    assert len(names) >= 30


def test_every_dotted_name_on_the_page_exists():
    names = sorted({name for name in DOTTED.findall(PAGE.read_text()) if not name.endswith(".py")})
    assert names
    missing = [name for name in names if not resolves(name)]
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"


def test_every_path_on_the_page_exists():
    paths = sorted(set(PATH.findall(PAGE.read_text())))
    assert "provisioning/contract.py" in paths
    bases = [ROOT] + [ROOT / package for package in (*PACKAGES, "deploy")] + [ROOT / "provisioning" / "reconcile"]
    missing = [path for path in paths if not any((base / path).exists() for base in bases)]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
