"""Positions for a layout's boxes: `dot` within a time limit, else the layered fallback with a notice.

One place for both callers: a whole graph (`layout_graph`) and the content of a box opened in
place (`core.layout.expand`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from core.layout import dot
from core.layout.dot import dot_source
from core.layout.layered import layered_positions
from core.layout.model import Layout
from core.layout.plain import apply_plain


def position_boxes(layout: Layout, timeout: float, cancelled: Callable[[], bool] | None = None) -> None:
    """Fill positions, size and edge routes; `layout.engine` and `layout.notice` say which engine did."""
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
