"""The register's Markdown and JSON exports, `manage.py register_export`, and the example in docs/register.md
(generated from the demo data with that command): it must keep the structure the command produces today."""
from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from register.export import register_markdown
from register.selectors import register_build
from tests.register.conftest import INFERENCE

pytestmark = pytest.mark.django_db
EXAMPLE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "register.md"
START, END = "<!-- register-example:start -->", "<!-- register-example:end -->"
HEADINGS = ["# Platform decision register", "## 1. Sharing strategy per workload class",
            "## 2. Scheduling model per cluster and pool", "## 3. Gang scheduling per cluster", "## 4. Tenant isolation",
            "## 5. Driver lifecycle", "## 6. Chargeback coverage", "## 7. Preemption"]
TABLE = "| verdict | subject | state | owner | signed off | evidence |"


def structure(markdown: str) -> dict:
    """What must not change between two exports of the same data: headings, table headers, and per table row its
    verdict and subject (dates, counts and request ids do change)."""
    lines = markdown.splitlines()
    rows = []
    for line in lines:
        if line.startswith("| ") and not line.startswith(TABLE):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows.append((cells[0].strip("*"), cells[1]))
    return {"headings": [line for line in lines if line.startswith("#")],
            "tables": sum(1 for line in lines if line == TABLE), "rows": rows}


def test_the_markdown_has_one_heading_and_table_per_section(inventory, engineer, team_a, place):
    place(engineer, team_a, "chat", INFERENCE)

    text = register_markdown(register_build())

    shape = structure(text)
    assert shape["headings"] == HEADINGS[:3] + ["### Migration to DRA: what would change for the live requests"] \
        + HEADINGS[3:]
    assert shape["tables"] == 7
    assert ("inherited", "gpu-east/h100-train") in shape["rows"]
    assert re.search(r"^- #\d+ team-a/chat \(running, mig\): adds `ResourceClaimTemplate/gpu-team-a/chat-r\d+-gpu`",
                     text, re.M)


def test_cells_are_escaped(inventory):
    register = register_build()
    register["sections"][0]["items"][0]["state"] = "a | b\nc"
    assert "| a \\| b c |" in register_markdown(register)


def test_the_command_prints_markdown_or_json(inventory, tmp_path):
    out = StringIO()
    call_command("register_export", stdout=out)
    assert out.getvalue().startswith("# Platform decision register\n")

    out = StringIO()
    call_command("register_export", "--format", "json", "--days", "7", stdout=out)
    body = json.loads(out.getvalue())
    assert body["window"]["days"] == 7 and len(body["sections"]) == 7

    target = tmp_path / "register.md"
    call_command("register_export", "--output", str(target), stderr=StringIO())
    assert target.read_text().startswith("# Platform decision register")
    with pytest.raises(CommandError, match="--days: A whole number of days from 1 to 365."):
        call_command("register_export", "--days", "0")


def test_the_docs_example_is_the_demo_register_in_structure():
    """Regenerate with: python manage.py load_demo && python manage.py register_export (docs/register.md, "The demo
    register")."""
    call_command("load_demo", stdout=StringIO())
    text = EXAMPLE_PAGE.read_text()
    example = text[text.index(START) + len(START):text.index(END)].strip()
    assert example.startswith("```markdown\n") and example.endswith("\n```")
    example = example[len("```markdown\n"):-len("\n```")]

    fresh = StringIO()
    call_command("register_export", stdout=fresh)

    assert structure(example) == structure(fresh.getvalue())
    assert structure(example)["headings"][0] == "# Platform decision register"
