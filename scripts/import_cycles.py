#!/usr/bin/env python3
"""Count imports between the portal's top-level packages, imports inside functions included, and list the cycles:
between packages, and between the modules inside each package (a circle of modules closed by an import inside a
function is a circle all the same). Exits 1 when there is one of either kind.

Run from the repository root: `python scripts/import_cycles.py` (add `--edges` to list every import).
Standard library only, so it runs before anything is installed; `lint-imports` (pyproject.toml) enforces the layers.
tests/test_import_cycles.py runs it.
"""

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gpu", "portal", "intake", "provisioning", "chargeback", "register", "workflows", "demo", "kubesim",
            "deploy")


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


class _Imports(ast.NodeVisitor):
    def __init__(self, name: str, mods: dict[str, Path]):
        self.name, self.mods, self.found = name, mods, set()
        self.package = mods[name].name == "__init__.py"

    def _owner(self, dotted: str) -> str | None:
        """The project module `dotted` names, or the package holding it."""
        while dotted and dotted not in self.mods:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if owner := self._owner(alias.name):
                self.found.add(owner)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.name.split(".")
            base = parts if self.package else parts[:-1]
            base = base[:len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            owner = full if full in self.mods else self._owner(module)
            if owner:
                self.found.add(owner)


def module_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (every import but those under `if TYPE_CHECKING:`)."""
    mods = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py") if (ROOT / package).is_dir() else []:
            if "migrations" not in path.parts:
                mods[module_name(path)] = path
    graph = {}
    for name, path in mods.items():
        visitor = _Imports(name, mods)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        graph[name] = visitor.found - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


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
    inside = circles(module_graph())
    print(f"circles of modules inside a package: {len(inside)}")
    for component in inside:
        print(f"  {len(component)} modules: {', '.join(component)}")
    return 1 if found or inside else 0


if __name__ == "__main__":
    sys.exit(main())
