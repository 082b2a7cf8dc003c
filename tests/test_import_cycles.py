"""No import cycle among the project's modules, counting the imports inside functions.

import-linter sees module-level imports only as a graph of packages; a function-level import that closes
a circle (a module reaching back into the one that imports it) hides a dependency both ways. Here every
`import` / `from ... import` anywhere in a module (functions, methods, branches) is an edge to the project
module it names; an edge under `if TYPE_CHECKING:` is not run and is not counted. Every strongly connected
component of more than one module is a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The top-level packages checked: the whole tree.
CHECKED = ("core", "passes", "session", "cli", "gui")
PREFIX = "fuselens."  # every project import goes through the fuselens package


def project_modules(root: Path, packages: Iterable[str], prefix: str = "") -> dict[str, Path]:
    """Module name (as imported: `prefix` + its dotted path) -> file for every .py in these packages (a
    folder without __init__.py is data, not a package: core/ascend/host/ holds the host's script)."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if not all((root.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts))):
                continue
            name = prefix + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for statement in node.body:
                skipped.update(id(inner) for inner in ast.walk(statement))
    return skipped


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def known(target: str) -> str | None:
        """`target`, else its longest prefix that is a project module."""
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(filter(None, (known(alias.name) for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in modules else known(base) or "")
    found.discard("")
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with a cycle (Tarjan's, iterative), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
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


def import_graph(root: Path, packages: Iterable[str], prefix: str = "") -> dict[str, set[str]]:
    modules = project_modules(root, packages, prefix)
    return {name: imported_modules(name, path, modules) - {name} for name, path in modules.items()}


def _described(component: list[str], edges: dict[str, set[str]]) -> str:
    members = set(component)
    links = [f"{a} -> {b}" for a in component for b in sorted(edges[a] & members)]
    return f"{len(component)} modules: " + "; ".join(links)


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_cycle(package):
    edges = import_graph(ROOT, [package], PREFIX)
    assert any(edges.values()), f"no import found in {package}/: the module names do not match the imports"
    found = cycles(edges)
    assert not found, f"import cycles in {package}/ (function-level imports count):\n" + "\n".join(
        _described(component, edges) for component in found)


def test_a_function_level_import_that_closes_a_circle_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text("def g():\n    from pkg import a\n    return a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n")
    (package / "d.py").write_text("from . import c\n")
    edges = import_graph(tmp_path, ["pkg"])
    assert edges["pkg.d"] == {"pkg.c"} and edges["pkg.c"] == set()
    assert cycles(edges) == [["pkg.a", "pkg.b"]]
