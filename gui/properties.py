"""The properties panel: the selected node, match or near miss, in words and small tables.

It reads the graphs and the selection and renders HTML; it never changes anything.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable

import numpy as np
from PySide6.QtWidgets import QDialog, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.fused import FUSED_NODES_ATTR, FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR
from fuselens.core.graph.provenance import Provenance
from fuselens.core.layout import format_shape, tensor_shape
from fuselens.gui.selection import Selection
from fuselens.passes.base import Match, NearMiss
from fuselens.passes.explain_render import explanation_html

HIDDEN_ATTRS = {"_output_shapes", "value", FUSED_NODES_ATTR}
MAX_LISTED = 40


def esc(value: object) -> str:
    return html.escape(str(value))


def array_summary(array: np.ndarray) -> str:
    """A short numpy preview: shape, dtype, range, mean and the first values."""
    flat = array.reshape(-1)
    head = np.array2string(flat[:6], precision=4, separator=", ", suppress_small=True)
    text = f"{array.dtype} {format_shape(array.shape) or 'scalar'}"
    if flat.size and np.issubdtype(array.dtype, np.number):
        text += f"  min {flat.min():.4g}  max {flat.max():.4g}  mean {flat.mean():.4g}"
    return f"{text}<br><tt>{esc(head)}{' …' if flat.size > 6 else ''}</tt>"


def name_list(names: Iterable[str], separator: str = "<br>") -> str:
    return separator.join(f"<tt>{esc(n)}</tt>" for n in sorted(names)[:MAX_LISTED])


def _table(rows: Iterable[tuple[str, str]]) -> str:
    """Label above value: a narrow panel keeps long node names readable."""
    return "".join(f"<p style='margin:6px 0 0 0'><b>{k}</b></p><div style='margin-left:8px'>{v}</div>"
                   for k, v in rows)


def node_html(graph: Graph, name: str, provenance: Provenance | None, *, fused_side: bool) -> str:
    node = graph.node(name)
    shown_op = graph.attr(name, FUSED_OP_TYPE_ATTR) or node.op
    parts = [f"<h3 style='margin:2px 0'>{esc(shown_op)}</h3><div><tt>{esc(name)}</tt></div>"]
    if provenance is not None:
        status = provenance.status(name) if fused_side else provenance.original_status(name)
        if status != "unchanged":
            parts.append(f"<p><b>{status}</b>")
            rewrite = provenance.rewrite_of(name) if fused_side else None
            if rewrite is not None:
                match = f" (match #{rewrite.match_index})" if rewrite.match_index >= 0 else ""
                parts.append(f" by <b>{esc(rewrite.pass_id)}</b>{match}")
            if not fused_side:
                after = provenance.descendants(name)
                parts.append(f"<br>now: {esc(', '.join(after)) if after else 'gone'}")
            parts.append("</p>")
    if FUSION_PASS_ATTR in node.attr:
        originals = graph.attr(name, FUSED_NODES_ATTR) or []
        parts.append(_table([("pass", esc(graph.attr(name, FUSION_PASS_ATTR))), ("function", esc(node.op)),
                             ("original nodes", "<br>".join(esc(o) for o in originals[:MAX_LISTED]))]))
    inputs, weights = [], []
    for ref in graph.inputs(name):
        if graph.is_const(ref.node):
            value = graph.const_value(ref.node)
            weights.append(f"<tt>{esc(ref.node)}</tt><br>{array_summary(value)}")
        else:
            inputs.append(f"<tt>{esc(ref)}</tt> {esc(format_shape(tensor_shape(graph, ref.node, ref.port)))}")
    inputs += [f"<tt>^{esc(c)}</tt> (control)" for c in graph.control_inputs(name)]
    outputs = []
    if "_output_shapes" in node.attr:
        for port, _ in enumerate(node.attr["_output_shapes"].list.shape):
            readers = [c.node for c in graph.consumers(name, port)]
            outputs.append(f":{port} {esc(format_shape(tensor_shape(graph, name, port)))}"
                           f" → {esc(', '.join(readers[:5]))}{' …' if len(readers) > 5 else ''}")
    attrs = [(esc(k), esc(_attr_text(graph, name, k))) for k in sorted(node.attr) if k not in HIDDEN_ATTRS]
    if node.op == "Const":
        weights.append(array_summary(graph.const_value(name)))
    rows = [("inputs", "<br>".join(inputs) or "—"), ("outputs", "<br>".join(outputs) or "—")]
    if weights:
        rows.append(("folded constants", "<br>".join(weights)))
    parts.append(_table(rows))
    if attrs:
        parts.append("<h4 style='margin:6px 0 2px'>attributes</h4>" + _table(attrs))
    return "".join(parts)


def _attr_text(graph: Graph, name: str, key: str) -> str:
    value = graph.attr(name, key)
    if isinstance(value, np.ndarray):
        return f"tensor {format_shape(value.shape)}"
    if key in ("T", "dtype", "DstT", "SrcT", "Tidx", "out_type"):
        return proto.dtype_name(value) if isinstance(value, int) else str(value)
    text = str(value)
    return text if len(text) < 200 else text[:200] + " …"


def item_html(item: Match | NearMiss) -> str:
    if isinstance(item, NearMiss):
        rows = [("nodes", "<br>".join(f"<tt>{esc(n)}</tt>" for n in item.nodes[:MAX_LISTED]))]
        fault = [f"<tt>{esc(n)}</tt>" for n in item.culprit.nodes[:MAX_LISTED]]
        if item.culprit.edge:
            fault.append(f"the edge <tt>{esc(item.culprit.edge[0])}</tt> → <tt>{esc(item.culprit.edge[1])}</tt>")
        rows.insert(0, ("at fault (red on the graph)", "<br>".join(fault) or "the structure as a whole"))
        return (f"<h3 style='margin:2px 0;color:#c5221f'>✘ near miss: {esc(item.pass_id)}</h3>"
                f"<p><b>{esc(item.anchor)}</b>: {esc(item.reason)}</p>" + _table(rows))
    rows = [("summary", esc(item.summary)), ("anchor", f"<tt>{esc(item.anchor)}</tt>"),
            ("nodes", "<br>".join(f"<tt>{esc(n)}</tt>" for n in item.nodes[:MAX_LISTED]))]
    if item.bindings:
        rows.append(("bindings", "<br>".join(f"{esc(k)} = <tt>{esc(v)}</tt>" for k, v in item.bindings.items())))
    if item.weights:
        rows.append(("folded weights", "<br>".join(f"<tt>{esc(w)}</tt>" for w in item.weights)))
    if item.details:
        rows.append(("details", f"<pre>{esc(json.dumps(item.details, indent=1, default=str)[:4000])}</pre>"))
    return (f"<h3 style='margin:2px 0;color:#188038'>✔ match #{item.index}: {esc(item.pass_id)}</h3>"
            + explanation_html(item.explanation) + _table(rows))


class PropertiesPanel(QTextBrowser):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setPlaceholderText("Select a node, a match or a near miss")

    def show_selection(self, selection: Selection, original: Graph | None, fused: Graph | None,
                       provenance: Provenance | None) -> None:
        parts: list[str] = []
        if selection.item is not None:
            parts.append(item_html(selection.item))
        fused_side = selection.origin == "after"
        graph, names = (fused, selection.after) if fused_side else (original, selection.before)
        if graph is not None and len(names) == 1 and selection.item is None:
            parts.append(node_html(graph, next(iter(names)), provenance, fused_side=fused_side))
            other = selection.before if fused_side else selection.after
            if other:
                label = "from" if fused_side else "becomes"
                parts.append(f"<p><b>{label}:</b> {name_list(other, ', ')}</p>")
        elif names and selection.item is None:
            parts.append(f"<p>{len(names)} nodes:<br>{name_list(names)}</p>")
        self.setHtml("".join(parts))


class FusedBodyDialog(QDialog):
    """A fused node's body: the library function's node_def list (op, name, inputs)."""

    def __init__(self, graph: Graph, name: str, parent: QWidget | None = None):
        super().__init__(parent)
        node = graph.node(name)
        self.setWindowTitle(f"Body of {name} ({node.op})")
        self.resize(720, 420)
        tree = QTreeWidget(self)
        tree.setHeaderLabels(["op", "name", "inputs"])
        function = graph.functions.get(node.op)
        body = list(function.node_def) if function is not None else []
        for node_def in body:
            QTreeWidgetItem(tree, [node_def.op, node_def.name, ", ".join(node_def.input)])
        for column in range(2):
            tree.resizeColumnToContents(column)
        self.tree = tree
        layout = QVBoxLayout(self)
        layout.addWidget(tree)


def show_body_table(graph: Graph | None, key: str, parent: QWidget) -> None:
    """A fused node's body as a table (its node's context menu), when `key` is a fused node of `graph`."""
    if graph is not None and key in graph and graph.fused_info(key) is not None:
        FusedBodyDialog(graph, key, parent).exec()
