"""No module of the front ends and the session imports itself back through others, counting imports
inside functions (the ones that kept `cli/run_cmd.py`, `hosts_cmd.py` and `npu_cmd.py` in a circle).
Imports under `if TYPE_CHECKING:` are annotations only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cli", "session", "gui")


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def imported(tree: ast.Module) -> set[str]:
    """Every module named by an import statement anywhere in the file, TYPE_CHECKING blocks left out."""
    annotations_only = {id(node) for branch in ast.walk(tree)
                        if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
                        for node in ast.walk(branch)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def import_graph() -> nx.DiGraph:
    files = {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        graph.add_edges_from((name, other) for other in imported(ast.parse(path.read_text())) & files.keys()
                             if other != name)
    return graph


def test_the_import_graph_sees_function_level_imports():
    graph = import_graph()
    assert graph.has_edge("cli.run_cmd", "cli.hosts_cmd")  # `run --host` imports it inside run_run


def test_no_import_circle_among_cli_session_and_gui_modules():
    assert list(nx.simple_cycles(import_graph())) == []
