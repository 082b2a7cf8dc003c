"""Graph layout for the view: Graphviz `dot` positions, constants folded into their consumers.

`layout_graph` is the whole flow; each step lives in its own module:
  * `drawn`   which nodes become boxes (constants folded, scopes collapsed), their labels and sizes
  * `dot`     the DOT text, and `dot` run as a child process with a time limit and cancel
  * `plain`   dot's `-Tplain` output read back as scene positions and splines
  * `layered` the fallback past the time limit (or when `dot` is missing or fails), with a notice
  * `engine`  dot within its time limit, else the layered fallback: one place for both
  * `expand`  one box (a collapsed scope, a fused node) opened or closed in place in a shown layout
  * `cache`   results by a structural fingerprint of the graph plus the collapse state, in memory
              and on disk in the user cache, so reopening a model or re-expanding a scope is instant
  * `model`   the Layout, its boxes and edges
Coordinates are scene pixels, y pointing down, node positions are centres. The layout never
triggers TensorFlow's shape inference: edges are labelled with shapes the graph already knows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from fuselens.core.errors import Cancelled
from fuselens.core.graph import Graph
from fuselens.core.layout.cache import LAYOUT_VERSION, LayoutCache, default_cache, structure_key
from fuselens.core.layout.dot import DOT_TIMEOUT, dot_source
from fuselens.core.layout.drawn import (
    collapsible_scopes,
    const_shape,
    format_shape,
    short_name,
    tensor_shape,
    visible_graph,
)
from fuselens.core.layout.engine import position_boxes
from fuselens.core.layout.layered import layered_positions
from fuselens.core.layout.model import FRAME_PREFIX, SCOPE_PREFIX, Layout, LayoutEdge, LayoutNode

__all__ = [
    "DOT_TIMEOUT",
    "FRAME_PREFIX",
    "LAYOUT_VERSION",
    "SCOPE_PREFIX",
    "Layout",
    "LayoutCache",
    "LayoutEdge",
    "LayoutNode",
    "collapsible_scopes",
    "const_shape",
    "default_cache",
    "dot_source",
    "format_shape",
    "layered_positions",
    "layout_graph",
    "short_name",
    "structure_key",
    "tensor_shape",
    "visible_graph",
]


def layout_graph(
    graph: Graph,
    collapsed: Iterable[str] = (),
    *,
    cache: LayoutCache | None = None,
    timeout: float = DOT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Layout:
    """Positions for every drawn box and edge: `dot` within `timeout` (else the layered fallback), or
    the layered engine at once for thousands of boxes."""
    start = time.perf_counter()
    collapsed = frozenset(collapsed)
    key = structure_key(graph, collapsed) if cache is not None else ""
    if cache is not None and (hit := cache.get(key)) is not None:
        hit.cached = True
        return hit
    if progress:
        progress("folding constants")
    layout = visible_graph(graph, collapsed)
    if cancelled and cancelled():
        raise Cancelled()
    if progress:
        progress(f"dot: {len(layout.nodes)} boxes, {len(layout.edges)} edges")
    meant = position_boxes(layout, timeout, cancelled)
    layout.seconds = time.perf_counter() - start
    if cache is not None and meant:
        cache.put(key, layout)
    return layout
