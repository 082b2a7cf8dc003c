"""A lesson: one self-contained page (HTML, or Markdown) that teaches every match of a fused model.

Per match: the before and after pictures of its neighbourhood (inline SVG from core/layout, no Qt),
the explanation with its numbers (Match.explanation, rendered by passes/explain_render.py), and a
summary table. Nothing is fetched from outside, so the page opens offline; it is built from the
pipeline alone, so the window (no TensorFlow) writes the same page as `fuselens lesson`.
"""

from __future__ import annotations

import base64
import html
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Provenance
from fuselens.core.layout import Layout, dot_source, layered_positions, visible_graph
from fuselens.core.layout.dot import run_dot
from fuselens.core.layout.plain import apply_plain
from fuselens.core.layout.svg import layout_svg, standalone_svg
from fuselens.passes.base import Match
from fuselens.passes.explain_render import explanation_html, explanation_markdown, human_bytes
from fuselens.passes.pipeline import PipelineResult

DOT_SECONDS = 5.0
MAX_BOXES = 60  # a neighbourhood bigger than this is cut to the match itself


@dataclass(frozen=True)
class LessonItem:
    pass_id: str
    family: str
    match: Match
    before_svg: str
    after_svg: str


def _around(graph: Graph, core: Iterable[str]) -> set[str]:
    """The nodes and their direct data producers and readers: enough context to see the rewrite."""
    core = [n for n in core if n in graph]
    found = set(core)
    for name in core:
        found.update(r.node for r in graph.inputs(name) if not r.control)
        found.update(graph.consumer_nodes(name))
    return found


def _sub_layout(full: Layout, names: Iterable[str], core: set[str]) -> Layout:
    """The boxes drawing `names` (the core's boxes always; neighbours while under MAX_BOXES), positioned."""
    core_keys = {full.owner[n] for n in core if n in full.owner}
    keys = {full.owner[n] for n in names if n in full.owner}
    if len(keys) > MAX_BOXES:
        keys = core_keys
    nodes = {k: full.nodes[k] for k in full.nodes if k in keys}
    edges = [e for e in full.edges if e.source in keys and e.target in keys]
    layout = Layout(nodes, edges, {n: k for n, k in full.owner.items() if k in keys})
    source, order = dot_source(layout)
    try:
        apply_plain(layout, run_dot(source, DOT_SECONDS), order)
    except (subprocess.TimeoutExpired, FileNotFoundError, RuntimeError, OSError):
        layered_positions(layout)
    return layout


def _sides(pipeline: PipelineResult, match: Match) -> tuple[set[str], set[str]]:
    """The match's nodes in the original graph, and what they are in the fused graph."""
    provenance = pipeline.provenance or Provenance(tuple(pipeline.original.nodes))
    before = {n for n in match.nodes if n in pipeline.original}
    if not before:  # a match on nodes an earlier pass created: start from those nodes' origins
        before = {o for n in match.nodes for o in provenance.origins(n)}
    after = {d for n in before for d in provenance.descendants(n) if d in pipeline.fused}
    return before, after


def build_lesson(pipeline: PipelineResult, match_ids: Iterable[str] | None = None) -> list[LessonItem]:
    """One item per match (every match, or those whose id is in `match_ids`), in pipeline order."""
    wanted = set(match_ids) if match_ids is not None else None
    provenance = pipeline.provenance or Provenance(tuple(pipeline.original.nodes))
    full_before, full_after = visible_graph(pipeline.original), visible_graph(pipeline.fused)
    items = []
    for result in pipeline.results:
        family = pipeline.config.get_pass(result.pass_id).family
        for match in result.matches:
            if wanted is not None and match.id not in wanted:
                continue
            before, after = _sides(pipeline, match)
            left = _sub_layout(full_before, _around(pipeline.original, before), before)
            right = _sub_layout(full_after, _around(pipeline.fused, after), after)
            left_status = {full_before.owner[n]: provenance.original_status(n) for n in before
                           if n in full_before.owner and provenance.original_status(n) != "unchanged"}
            right_status = {full_after.owner[n]: provenance.status(n) for n in after
                            if n in full_after.owner and provenance.status(n) != "unchanged"}
            items.append(LessonItem(result.pass_id, family, match,
                                    layout_svg(left, left_status, title=f"before: {match.id}"),
                                    layout_svg(right, right_status, title=f"after: {match.id}")))
    return items


def _saved_cells(match: Match) -> tuple[str, str]:
    """Launches saved and bytes saved (weights for a fold, memory traffic for a kernel), as table text."""
    x = match.explanation or {}
    saved = x.get("saved", {})
    launches = saved.get("launches_saved")
    if "weight_bytes_saved" in saved:
        data = f"{human_bytes(saved['weight_bytes_saved'])} of weights"
    elif x.get("bytes_moved_before") is not None and x.get("bytes_moved_after") is not None:
        data = f"{human_bytes(x['bytes_moved_before'] - x['bytes_moved_after'])} moved"
    elif saved.get("intermediate_bytes") is not None:
        data = f"{human_bytes(saved['intermediate_bytes'])} of intermediates"
    else:
        data = "—"
    return ("—" if launches is None else str(launches)), data


STYLE = """
body{font-family:sans-serif;max-width:1200px;margin:24px auto;padding:0 16px;color:#202124}
h1{font-size:1.6em} h2{border-top:1px solid #ddd;padding-top:16px}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
.pictures{display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start}
.pictures figure{margin:0;overflow:auto;max-width:100%;border:1px solid #eee;padding:4px}
.explanation table td,.explanation table th{border:none}
"""


def lesson_html(pipeline: PipelineResult, items: list[LessonItem], *, model: str) -> str:
    """The whole page: title, summary table, then one section per match."""
    e = html.escape
    rows = []
    for i, item in enumerate(items, 1):
        launches, data = _saved_cells(item.match)
        title = (item.match.explanation or {}).get("title", item.match.summary)
        rows.append(f"<tr><td><a href='#m{i}'>{i}</a></td><td>{e(item.pass_id)}</td><td><tt>{e(item.match.anchor)}"
                    f"</tt></td><td>{e(title)}</td><td>{launches}</td><td>{e(data)}</td></tr>")
    sections = []
    for i, item in enumerate(items, 1):
        sections.append(
            f"<h2 id='m{i}'>{i}. {e(item.pass_id)}: <tt>{e(item.match.anchor)}</tt></h2>"
            f"<p>{e(item.match.summary)}</p><div class='pictures'>"
            f"<figure>{item.before_svg}<figcaption>before (red: removed, amber: changed)</figcaption></figure>"
            f"<figure>{item.after_svg}<figcaption>after (green: new, amber: changed)</figcaption></figure></div>"
            f"<div class='explanation'>{explanation_html(item.match.explanation)}</div>")
    head = (f"<p>{len(pipeline.original)} nodes before, {len(pipeline.fused)} after; "
            f"{len(items)} matches explained.</p>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>FuseLens lesson: {e(model)}</title><style>{STYLE}</style></head><body>"
            f"<h1>FuseLens lesson: {e(model)}</h1>{head}"
            "<table><tr><th>#</th><th>pass</th><th>match</th><th>what</th><th>launches saved</th><th>saved</th></tr>"
            f"{''.join(rows)}</table>{''.join(sections)}</body></html>\n")


def _svg_image(svg: str, alt: str) -> str:
    """An SVG as a data-URI image."""
    return f"![{alt}](data:image/svg+xml;base64,{base64.b64encode(standalone_svg(svg).encode()).decode()})"


def lesson_markdown(pipeline: PipelineResult, items: list[LessonItem], *, model: str) -> str:
    lines = [f"# FuseLens lesson: {model}", "",
             f"{len(pipeline.original)} nodes before, {len(pipeline.fused)} after; {len(items)} matches explained.",
             "", "| # | pass | match | launches saved | saved |", "|---|---|---|---|---|"]
    for i, item in enumerate(items, 1):
        launches, data = _saved_cells(item.match)
        lines.append(f"| {i} | {item.pass_id} | `{item.match.anchor}` | {launches} | {data} |")
    for i, item in enumerate(items, 1):
        lines += ["", f"## {i}. {item.pass_id}: `{item.match.anchor}`", "", item.match.summary, "",
                  _svg_image(item.before_svg, "before"), _svg_image(item.after_svg, "after"), "",
                  explanation_markdown(item.match.explanation)]
    return "\n".join(lines) + "\n"


def write_lesson(path: str | Path, pipeline: PipelineResult, *, model: str,
                 match_ids: Iterable[str] | None = None, protect: str | None = None) -> Path:
    """The lesson as HTML (Markdown when the name ends in .md), written atomically."""
    items = build_lesson(pipeline, match_ids)
    render = lesson_markdown if str(path).lower().endswith(".md") else lesson_html
    return write_bytes_atomic(path, render(pipeline, items, model=model).encode("utf-8"), protect=protect)
