"""The documentation in docs/ carries facts generated from the code; these tests keep them in step, and build the
site the way CI does (`mkdocs build --strict`: a broken link or anchor fails)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from intake.questionnaire import markdown_table
from portal import configuration_docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def between(text: str, marker: str) -> str:
    start = text.index(f"<!-- {marker}:start -->") + len(f"<!-- {marker}:start -->")
    return text[start:text.index(f"<!-- {marker}:end -->")].strip()


def test_questionnaire_table_is_the_generated_one():
    page = (DOCS / "questionnaire.md").read_text()
    assert between(page, "questionnaire") == markdown_table().strip(), "run: python manage.py questionnaire_docs"


def test_every_environment_variable_read_is_documented():
    assert configuration_docs.problems() == []


def test_configuration_page_is_the_generated_one():
    assert (DOCS / "configuration.md").read_text() == configuration_docs.page(), \
        "run: python -m portal.configuration_docs --write"


def test_the_scanner_finds_every_way_the_code_reads_the_environment(tmp_path):
    module = tmp_path / "settings_like.py"
    module.write_text(
        "import os\n"
        "A = os.environ.get('PLAIN', '5')\n"
        "B = int(os.getenv('GETENV', '7'))\n"
        "C = os.environ['REQUIRED']\n"
        "D = env_bool('FLAG', True)\n"
        "E = env_list('HOSTS', 'a,b')\n"
        "F = os.environ.get('NO_DEFAULT') or 'fallback'\n"
        "G = os.environ.get('COMPUTED', str(1024 * 1024))\n"
        "os.environ['WRITTEN'] = 'x'\n"
    )
    reads = {name: default for name, default, _ in configuration_docs.reads_in_python(module)}
    assert reads == {"PLAIN": "5", "GETENV": "7", "REQUIRED": None, "FLAG": "true", "HOSTS": "a,b",
                     "NO_DEFAULT": None, "COMPUTED": "str(1024 * 1024)"}


@pytest.mark.django_db
def test_api_table_lists_every_operation_of_the_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    operations = {(method.upper(), path) for path, item in schema["paths"].items() for method in item
                  if method in {"get", "post", "put", "patch", "delete"}}
    table = between((DOCS / "api.md").read_text(), "api-endpoints")
    documented = set(re.findall(r"^\| `([A-Z]+)` \| `([^`]+)` \|", table, re.M))
    assert documented == operations, {"undocumented": sorted(operations - documented),
                                      "not in the schema": sorted(documented - operations)}


def test_the_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()


def test_the_docs_extra_builds_the_site_without_the_test_tools():
    """`pip install -e '.[docs]'` is enough for `mkdocs build` (the built-in theme, no plugins); the test extras
    include it rather than pinning MkDocs a second time."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert [requirement.split("==")[0] for requirement in extras["docs"]] == ["mkdocs"]
    assert f"{project['name']}[docs]" in extras["test"]
    assert not any(r.startswith("mkdocs") for r in extras["test"])
    assert "plugins" not in (ROOT / "mkdocs.yml").read_text()
