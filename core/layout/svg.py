"""A laid-out graph as a standalone SVG picture: boxes in the op-class palette, edges, status outlines.

For pages that must open offline without Qt (the lesson export): the same boxes and positions the
window draws, written as SVG text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from fuselens.core.graph.opclass import BORDER, DIFF_COLOURS, PALETTE
from fuselens.core.layout.model import Layout, LayoutEdge

STATUS_OUTLINE = {status: border for status, (_fill, border) in DIFF_COLOURS.items()}
MARGIN = 12.0
NAMESPACE = "http://www.w3.org/2000/svg"


def _path(edge: LayoutEdge) -> str:
    points = edge.points
    if not points:
        return ""
    start = f"M{points[0][0]:.1f},{points[0][1]:.1f}"
    if edge.spline and len(points) >= 4 and (len(points) - 1) % 3 == 0:
        rest = " ".join(f"C{a[0]:.1f},{a[1]:.1f} {b[0]:.1f},{b[1]:.1f} {c[0]:.1f},{c[1]:.1f}"
                        for a, b, c in zip(points[1::3], points[2::3], points[3::3]))
    else:
        rest = " ".join(f"L{x:.1f},{y:.1f}" for x, y in points[1:])
    return f"{start} {rest}"


def standalone_svg(svg: str) -> str:
    """An inline <svg> element (as `layout_svg` writes it) as a document of its own: a file or a data-URI
    image needs the namespace an HTML page supplies."""
    return svg.replace("<svg ", f"<svg xmlns='{NAMESPACE}' ", 1)


def layout_svg(layout: Layout, status: Mapping[str, str] | None = None, *, title: str = "") -> str:
    """`layout` as one inline <svg> element; `status` maps a box key to removed / new / modified (its outline)."""
    status = status or {}
    width, height = layout.width + 2 * MARGIN, layout.height + 2 * MARGIN
    parts = [f"<svg width='{width:.0f}' height='{height:.0f}' "
             f"viewBox='{-MARGIN:.0f} {-MARGIN:.0f} {width:.0f} {height:.0f}' role='img' "
             f"font-family='sans-serif'><title>{html.escape(title)}</title>",
             "<defs><marker id='arrow' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' markerHeight='7' "
             "orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#5f6368'/></marker></defs>"]
    for edge in layout.edges:
        dash = " stroke-dasharray='4 3'" if edge.control else ""
        parts.append(f"<path d='{_path(edge)}' fill='none' stroke='#5f6368' stroke-width='1.2'{dash} "
                     "marker-end='url(#arrow)'/>")
    for key, node in layout.nodes.items():
        x, y = node.x - node.width / 2, node.y - node.height / 2
        outline = STATUS_OUTLINE.get(status.get(key, ""), BORDER[node.category])
        stroke = 3 if key in status else 1
        parts.append(f"<g><title>{html.escape(key)}</title><rect x='{x:.1f}' y='{y:.1f}' width='{node.width:.1f}' "
                     f"height='{node.height:.1f}' rx='6' fill='{PALETTE[node.category]}' stroke='{outline}' "
                     f"stroke-width='{stroke}'/>")
        lines = [(node.op, 13, "bold", "#1f1f1f"), (node.title, 11, "normal", "#303030")]
        if node.weight_text:
            lines.append((node.weight_text, 10, "normal", "#5f6368"))
        top = node.y - (len(lines) - 1) * 7
        for i, (text, size, weight, colour) in enumerate(lines):
            parts.append(f"<text x='{node.x:.1f}' y='{top + i * 14 + 4:.1f}' font-size='{size}' "
                         f"font-weight='{weight}' fill='{colour}' text-anchor='middle'>{html.escape(text)}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
