"""Running Graphviz `dot` on the drawn graph: the DOT text, and `dot -Tplain` as a child process.

A child process we start ourselves (not the graphviz package's `pipe`), because on a large graph
`dot` can run for minutes: past a time limit, or when the user cancels, it is killed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable

from fuselens.core.errors import Cancelled
from fuselens.core.layout.model import Layout

DOT_TIMEOUT = 8.0  # seconds before the layered fallback takes over
POINTS_PER_INCH = 72.0
POLL_SECONDS = 0.05  # how often a running dot checks for a cancel


def dot_source(layout: Layout) -> tuple[str, list[str]]:
    """The DOT text (through the graphviz package) and the node keys in id order (`n0`, `n1`, ...)."""
    import graphviz

    keys = list(layout.nodes)
    ids = {key: f"n{i}" for i, key in enumerate(keys)}
    dot = graphviz.Digraph(graph_attr={"rankdir": "TB", "nodesep": "0.25", "ranksep": "0.45"},
                           node_attr={"shape": "box", "fixedsize": "true", "label": ""})
    for key in keys:
        node = layout.nodes[key]
        dot.node(ids[key], width=f"{node.width / POINTS_PER_INCH:.3f}", height=f"{node.height / POINTS_PER_INCH:.3f}")
    for edge in layout.edges:
        dot.edge(ids[edge.source], ids[edge.target], **({"style": "dashed"} if edge.control else {}))
    return dot.source, keys


def run_dot(source: str, timeout: float, cancelled: Callable[[], bool] | None = None) -> str:
    """`dot -Tplain` output; raises TimeoutExpired past `timeout` and Cancelled when `cancelled()` says so.

    Polls `cancelled` while dot runs, so a cancel does not wait for dot to finish.
    """
    exe = shutil.which("dot")
    if exe is None:
        raise FileNotFoundError("Graphviz `dot` is not installed")
    with subprocess.Popen([exe, "-Tplain"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        deadline = time.monotonic() + timeout
        pending_input: str | None = source
        while True:
            try:
                poll = max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
                out, err = process.communicate(pending_input, timeout=poll)
                break
            except subprocess.TimeoutExpired:
                pending_input = None
                if cancelled and cancelled():
                    process.kill()
                    process.communicate()
                    raise Cancelled() from None
                if time.monotonic() > deadline:
                    process.kill()
                    process.communicate()
                    raise
        if process.returncode != 0:
            raise RuntimeError(f"dot failed: {err.strip()[:200]}")
    return out
