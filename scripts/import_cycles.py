#!/usr/bin/env python3
"""Count imports between the portal's top-level packages, imports inside functions included, and list the cycles.

Run from the repository root: `python scripts/import_cycles.py` (add `--edges` to list every import).
Standard library only, so it runs before anything is installed; `lint-imports` (pyproject.toml) enforces the layers.
"""

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gpu", "portal", "intake", "provisioning", "chargeback", "register", "demo", "kubesim", "deploy")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import statement in the module."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:  # relative: resolve against this module's package
                    base = module.split(".")
                    base = base if is_package else base[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                found.append((target, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return found


def edges() -> dict[tuple[str, str], list[str]]:
    """(from package, to package) -> "file:line" of each import, migrations left out (they are history)."""
    result: dict[tuple[str, str], list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else []:
            if "migrations" in path.parts:
                continue
            module = module_name(path)
            tree = ast.parse(path.read_text(), str(path))
            for target, line, in_function in imported_names(tree, module, path.name == "__init__.py"):
                top = target.split(".")[0]
                if top in PACKAGES and top != package:
                    where = f"{path.relative_to(ROOT)}:{line}" + (" (in a function)" if in_function else "")
                    result[(package, top)].append(where)
    return result


def cycles(graph: dict[tuple[str, str], list[str]]) -> list[tuple[str, str]]:
    """Pairs of packages that import each other, directly or through others (same strongly connected component)."""
    adjacency = defaultdict(set)
    for source, target in graph:
        adjacency[source].add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(adjacency[node])
        return False

    return [(a, b) for a in PACKAGES for b in PACKAGES if a < b and reaches(a, b) and reaches(b, a)]


def main() -> int:
    graph = edges()
    for (source, target), places in sorted(graph.items()):
        inside = sum("(in a function)" in place for place in places)
        print(f"{source:>12} -> {target:<12} {len(places):3} imports ({inside} inside functions)")
        if "--edges" in sys.argv:
            for place in places:
                print(f"{'':16}{place}")
    mutual = [(a, b) for (a, b) in sorted(graph) if a < b and (b, a) in graph]
    print(f"packages importing each other directly: {len(mutual)}")
    for a, b in mutual:
        print(f"  {a} <-> {b}: {len(graph[(a, b)])} one way, {len(graph[(b, a)])} the other")
    found = cycles(graph)
    print(f"pairs of packages on a cycle (directly or through others): {len(found)}")
    for a, b in found:
        print(f"  {a} <-> {b}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
