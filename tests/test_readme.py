"""The README is the door: small, true about the two commands, and every link in it leads somewhere."""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_readme_names_the_two_commands_and_ci_runs_the_test_command():
    assert "./scripts/demo" in README and "./scripts/test" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/test" in ci


def test_the_two_commands_exist_and_are_executable():
    for name in ("demo", "test"):
        script = ROOT / "scripts" / name
        assert script.is_file() and os.access(script, os.X_OK), f"scripts/{name}"


def test_readme_stays_a_door_not_a_manual():
    assert len(README.encode()) <= 15 * 1024, "move the detail into docs/ (README at most 15 KB)"


def test_every_relative_link_in_the_readme_resolves():
    targets = [target for target, _ in LINK.findall(README) if "://" not in target]
    assert "docs/index.md" in targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, missing


def test_the_readme_links_every_page_of_the_site_nav():
    """Each page in mkdocs.yml's nav is reachable from the README (nav entries are `Title: page.md`)."""
    nav = re.findall(r":\s+([\w/-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    unlinked = [page for page in nav if f"docs/{page}" not in README and page != "index.md"]
    assert not unlinked, f"link these from the README's Documentation table: {unlinked}"
