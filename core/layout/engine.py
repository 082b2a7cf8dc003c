"""Positions for a layout's boxes: `dot` within a time limit, else the layered fallback with a notice;
the layered engine at once for thousands of boxes.

One place for both callers: a whole graph (`layout_graph`) and the content of a box opened in
place (`core.layout.expand`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from fuselens.core.layout import dot
from fuselens.core.layout.dot import dot_source
from fuselens.core.layout.layered import layered_positions
from fuselens.core.layout.model import Layout
from fuselens.core.layout.plain import apply_plain

DOT_MAX_BOXES = 1000  # above this many boxes the rows of the layered engine, without trying dot


def position_boxes(layout: Layout, timeout: float, cancelled: Callable[[], bool] | None = None) -> bool:
    """Fill positions, size and edge routes; `layout.engine` and `layout.notice` say which engine did.

    Past DOT_MAX_BOXES boxes (a 20k-node graph's overview has 1,775) the layered engine is chosen
    at once: dot takes 0.2 s for them on an idle machine but ran past its 8 s limit on the loaded
    2-core one, and that picture is seen zoomed out anyway. False when a fallback was used (worth
    trying again later), True when the layout is the one meant for this graph.
    """
    if len(layout.nodes) > DOT_MAX_BOXES:
        layout.engine, layout.notice = "layered", f"{len(layout.nodes):,} boxes: drawn in rows by depth"
        layered_positions(layout)
        return True
    source, keys = dot_source(layout)
    why_not_dot: str | None = None
    try:
        apply_plain(layout, dot.run_dot(source, timeout, cancelled), keys)
    except subprocess.TimeoutExpired:
        why_not_dot = f"dot took longer than {timeout:g} s"
    except (FileNotFoundError, RuntimeError, OSError) as e:
        why_not_dot = str(e)
    if why_not_dot is not None:
        layout.engine, layout.notice = "layered", f"{why_not_dot}; showing a simpler layout"
        layered_positions(layout)
        return False
    return True
