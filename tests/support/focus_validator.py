"""The FinOps Foundation's FOCUS validator (PyPI `focus-validator`, pinned in focus-validator.txt beside this file),
run on a file the way its README runs it, with its own override file.

It lives in its own virtualenv, `.venv-focus/` at the checkout's root, made here on first use (as
tests/portal/test_openapi_lint.py installs its Node.js linter into node_modules/): the validator pins pandas,
numpy, pandera and pydantic versions of its own, which must never be resolved together with the portal's
dependencies in `.venv/`. A lock keeps two test processes from building it at once.

Its 1.0.0 release has quirks the tests work around, each checked in its source:
* it reads its currency codes from the relative path `focus_validator/utils/currency_codes.csv`
  (`utils/download_currency_codes.py`), so it runs with its package's parent folder as the working directory;
* pandera 0.17 imports `multimethod.overload`, removed in multimethod 1.11 (pinned 1.10 here);
* it writes its verdicts as JUnit XML (`--output-type unittest`) and always exits 0, so the XML is read.
"""
from __future__ import annotations

import fcntl
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-focus"
REQUIREMENTS = Path(__file__).with_name("focus-validator.txt")
# The validator's own override file: the two rules of 1.0.0 that check something else than FOCUS 1.0 says.
OVERRIDES = ROOT / "tests" / "chargeback" / "focus" / "validator-overrides.yaml"


def _bin(name: str) -> Path:
    return VENV / "bin" / name


def ensure_validator() -> Path:
    """The validator's virtualenv, built or rebuilt when focus-validator.txt changed. Returns its site-packages."""
    stamp = VENV / ".installed"
    wanted = REQUIREMENTS.read_text()
    with open(ROOT / ".venv-focus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text() != wanted:
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=300)
            subprocess.run([str(_bin("python")), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                            "-r", str(REQUIREMENTS)], check=True, timeout=900)
            stamp.write_text(wanted)
    found = subprocess.run(
        [str(_bin("python")), "-c", "import focus_validator, pathlib; print(pathlib.Path(focus_validator.__file__).parents[1])"],
        check=True, capture_output=True, text=True, timeout=120)
    return Path(found.stdout.strip())


def validate(data_file: Path, *, version: str = "1.0", overrides: Path | None = OVERRIDES) -> dict[str, tuple[str, str]]:
    """Run the validator on a CSV: {check id: (passed | failed | skipped | errored, message)} for every check."""
    site_packages = ensure_validator()
    output = data_file.with_suffix(".validator.xml")
    command = [str(_bin("focus-validator")), "--data-file", str(data_file.resolve()), "--validate-version", version,
               "--output-type", "unittest", "--output-destination", str(output.resolve())]
    if overrides is not None:
        command += ["--override-file", str(overrides)]
    ran = subprocess.run(command, cwd=site_packages, capture_output=True, text=True, timeout=600)
    assert output.is_file(), f"the validator wrote no report: {ran.stdout}\n{ran.stderr}"
    results = {}
    for case in ET.parse(output).getroot().iter("testcase"):
        check = case.get("name").split(" :: ")[0]
        status, message = "passed", ""
        for kind, name in (("failure", "failed"), ("error", "errored"), ("skipped", "skipped")):
            found = case.find(kind)
            if found is not None:
                status, message = name, found.get("message", "")
        results[check] = (status, message)
    return results


def problems(results: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The checks that did not pass (and were not turned off by the override file)."""
    return {check: f"{status}: {message}" for check, (status, message) in results.items()
            if status in ("failed", "errored")}
