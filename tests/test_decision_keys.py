"""A decision is read through its type (`intake.decisions.Decision`), never by string key: a renamed field then
fails where the code is checked, not in production.

The scan reads the product code and the tests (as syntax trees) for a string key of the decision read off
something that names a decision (`decision["cluster"]`, `r.decision.get("gang")`, `body["decision"]["strategy"]`,
`(decision or {}).get("lease")`, or a name bound to one of those), outside the type's module. Queries into the
stored JSON (`decision__cluster=`, `KeyTextTransform("cluster", "decision")`, `decision->'guardrails'` in SQL)
stay strings, as the ORM and SQL need; the scan checks each key they name is a field of the type.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from intake.decisions import Decision

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ["gpu", "portal", "intake", "provisioning", "chargeback", "register", "workflows", "demo", "kubesim", "bench",
           "deploy", "scripts", "tests"]
# The type's module reads and writes the JSON; its test pins the stored shapes, key by key; this file holds samples.
EXEMPT = {"intake/decisions/decision.py", "tests/intake/test_decision_type.py", "tests/test_decision_keys.py"}
KEYS = frozenset(Decision().to_json())
_NAMED = re.compile(r"(^|_)decision$")
_SQL_KEY = re.compile(r"\bdecision\s*->>?\s*'(\w+)'")
_LOOKUP = re.compile(r"^decision__(\w+?)(__|$)")


def _names_a_decision(node: ast.AST, aliases: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return bool(_NAMED.search(node.id)) or node.id in aliases
    if isinstance(node, ast.Attribute):
        return bool(_NAMED.search(node.attr))
    if isinstance(node, ast.Subscript):
        return _constant(node.slice) == "decision"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and _constant(node.args[0]) == "decision"
    if isinstance(node, ast.BoolOp):
        return _names_a_decision(node.values[0], aliases)
    return False


def _constant(node: ast.AST | None):
    return node.value if isinstance(node, ast.Constant) else None


def _key_read(node: ast.AST, aliases: set[str]) -> str | None:
    """The key, when `node` reads a decision key by string."""
    if isinstance(node, ast.Subscript) and _names_a_decision(node.value, aliases):
        key = _constant(node.slice)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
          and node.args and _names_a_decision(node.func.value, aliases)):
        key = _constant(node.args[0])
    else:
        return None
    return key if key in KEYS else None


def _aliases(tree: ast.AST) -> set[str]:
    """Names bound to a decision (`d = gpu_request.decision`), anywhere in the module."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _names_a_decision(node.value, set()):
                found.add(node.targets[0].id)
    return found


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases = _aliases(tree)
    where = path.relative_to(ROOT)
    problems = []
    for node in ast.walk(tree):
        key = _key_read(node, aliases)
        if key:
            problems.append(f"{where}:{node.lineno}: reads the decision's {key!r} by string; use Decision.{key}")
        if isinstance(node, ast.keyword) and node.arg and (match := _LOOKUP.match(node.arg)):
            if match.group(1) not in KEYS:
                problems.append(f"{where}:{node.value.lineno}: {node.arg}: no decision field {match.group(1)!r}")
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in
                ("KeyTextTransform", "KeyTransform") and len(node.args) == 2 and _constant(node.args[1]) == "decision"):
            if _constant(node.args[0]) not in KEYS:
                problems.append(f"{where}:{node.lineno}: {_constant(node.args[0])!r}: no decision field")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for sql_key in _SQL_KEY.findall(node.value):
                if sql_key not in KEYS:
                    problems.append(f"{where}:{node.lineno}: decision->'{sql_key}': no decision field")
    return problems


def _files():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in EXEMPT and ".venv" not in path.parts and "node_modules" not in path.parts:
                yield path


def test_no_decision_key_is_read_by_string_outside_the_type():
    problems = [problem for path in _files() for problem in _problems(path)]
    assert not problems, "\n".join(problems)


def test_the_scan_finds_each_way_of_reading_a_key_by_string(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "a = gpu_request.decision['cluster']\n"
        "b = decision.get('gang')\n"
        "c = body['decision']['strategy']\n"
        "d = (request.decision or {}).get('lease')\n"
        "e = gpu_request.decision\n"
        "f = e['node_pool']\n"
        "g = response.json().get('decision')['replicas']\n"
        "GpuRequest.objects.filter(decision__clusterr='x')\n"
        "KeyTextTransform('pool', 'decision')\n"
        "sql = \"SELECT r.decision->>'gpu' FROM r\"\n"
        "ok = decision.cluster, body['decision'], evidence['decision']['scope'], rows['cluster']\n"
        "GpuRequest.objects.filter(decision__cluster='x', decision__gang__isnull=True)\n"
    )
    found = _problems_at(sample)
    assert sorted(line for line, _ in found) == [1, 2, 3, 4, 6, 7, 8, 9, 10], found


def _problems_at(path: Path) -> list[tuple[int, str]]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return [(int(p.split(":")[1]), p) for p in _problems(path)]
    finally:
        ROOT = saved
