"""`fuselens inspect`: what is in a model, as data (the CLI and the GUI both print it)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fuselens.core.graph import Graph


def scope_counts(graph: Graph, depth: int = 1) -> Counter[str]:
    """Node count per name scope, cut to the first `depth` parts ('' for top-level nodes)."""
    counts: Counter[str] = Counter()
    for name in graph.nodes:
        parts = name.split("/")[:-1]
        counts["/".join(parts[:depth])] += 1
    return counts


def summarize(graph: Graph, *, top_scopes: int = 10) -> dict[str, Any]:
    inputs = []
    for name in graph.placeholders():
        dtype, shape = graph.placeholder_spec(name)
        inputs.append({"name": name, "dtype": dtype, "shape": None if shape is None else list(shape)})
    scopes = [{"scope": s, "nodes": n} for s, n in scope_counts(graph).most_common() if s][:top_scopes]
    return {
        "source": graph.source,
        "nodes": len(graph),
        "edges": graph.edge_count(),
        "ops": graph.op_histogram(),
        "inputs": inputs,
        "outputs": graph.outputs(),
        "scopes": scopes,
        "functions": sorted(graph.functions),
    }


def format_summary(summary: dict[str, Any]) -> str:
    def shape_text(shape: list[int | None] | None) -> str:
        return "?" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"

    lines = [
        f"{summary['source']}: {summary['nodes']} nodes, {summary['edges']} edges, {len(summary['ops'])} op types",
        "inputs:  " + (", ".join(f"{i['name']} {i['dtype']} {shape_text(i['shape'])}" for i in summary["inputs"])
                       or "(none)"),
        "outputs: " + (", ".join(summary["outputs"][:8]) or "(none)")
        + (f" (+{len(summary['outputs']) - 8} more)" if len(summary["outputs"]) > 8 else ""),
        "ops:",
    ]
    lines += [f"  {op:28s} {count:6d}" for op, count in summary["ops"].items()]
    if summary["scopes"]:
        lines.append("top scopes:")
        lines += [f"  {s['scope']:28s} {s['nodes']:6d}" for s in summary["scopes"]]
    if summary["functions"]:
        lines.append("functions: " + ", ".join(summary["functions"]))
    return "\n".join(lines)
