"""A big graph opens as an overview of its scopes; a double-click, a search hit or a match opens
only the scope it needs; the after pane follows the before pane's scopes."""

from __future__ import annotations

from benchmarks.bench_amct import synthetic
from core.layout import SCOPE_PREFIX
from core.layout.overview import BIG_GRAPH_NODES
from tests.gui.helpers import WAIT_MS, open_and_wait, wait_idle


def scope_boxes(pane) -> set[str]:
    return {k[len(SCOPE_PREFIX):] for k in pane.shown.nodes if k.startswith(SCOPE_PREFIX)}


def test_a_5k_node_graph_opens_collapsed_and_expands_one_scope_at_a_time(qtbot, window, tmp_path):
    path = tmp_path / "synthetic5k.pb"
    graph = synthetic(5000)
    path.write_bytes(graph.graph_def.SerializeToString())
    open_and_wait(qtbot, window, str(path), timeout=WAIT_MS * 2)
    before, after = window.panes["before"], window.panes["after"]
    assert len(graph) > BIG_GRAPH_NODES and len(before.shown.nodes) < len(graph) / 5
    assert window.session.collapsed["before"] == before.shown.collapsed and scope_boxes(before)
    assert scope_boxes(after) and scope_boxes(after) <= window.session.collapsed["before"]  # the same scopes
    block = "block7"
    assert block in scope_boxes(before)
    drawn_before = len(before.shown.nodes)
    window._on_activated("before", SCOPE_PREFIX + block)  # a double-click on the scope box
    qtbot.waitUntil(lambda: before.shown is not None and block not in scope_boxes(before), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert block not in window.session.collapsed["before"] and block not in window.session.collapsed["after"]
    inside = [n for n in before.shown.nodes if n.startswith(block + "/")]
    assert inside and len(before.shown.nodes) == drawn_before - 1 + len(inside)
    assert "block8" in scope_boxes(before)  # the others stay collapsed
    hidden = "block10/bn/batchnorm/Rsqrt"  # a small-op BatchNorm deep inside a collapsed block
    window.search.setText(hidden.split("/")[-1])
    window.select_key("before", SCOPE_PREFIX + "block10")  # what a click on the box selects: no expand
    assert "block10" in scope_boxes(before)
    window.selection.select_original([hidden], origin="search")  # a search hit inside it opens it
    qtbot.waitUntil(lambda: hidden in before.shown.nodes, timeout=WAIT_MS)
