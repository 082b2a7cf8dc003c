"""A fused node opens in place in the after pane: its function body's nodes inside its box, wired
to the outer edges, the original nodes lit in the before pane; again (or Enter) closes it; inside
an open scope box it works the same."""

from __future__ import annotations

from PySide6.QtCore import Qt

import fuselens.gui.pane
from fuselens.core.layout import FRAME_PREFIX, SCOPE_PREFIX, Layout
from fuselens.core.layout.expand import BODY_SEP, PORT_PREFIX
from tests.gui.helpers import WAIT_MS, open_and_wait, wait_idle

LAYER_NORM = "bert/encoder/layer_0/attention/output/LayerNorm"


def geometry(layout: Layout) -> tuple[dict, list]:
    return ({k: (n.x, n.y, n.width, n.height, n.open) for k, n in layout.nodes.items()},
            sorted((e.source, e.target, e.control, e.points) for e in layout.edges))


def body_boxes(layout: Layout, fused: str) -> dict[str, str]:
    """Body box key -> the function-body node it draws, ports as `@input_0` / `@output_0`."""
    return {k: k.split(BODY_SEP, 1)[1] for k, n in layout.nodes.items() if n.parent == fused}


def test_a_fused_layernorm_opens_in_place_and_closes_again(qtbot, window, monkeypatch):
    full_layouts = []
    layout_graph = fuselens.gui.pane.layout_graph
    monkeypatch.setattr(fuselens.gui.pane, "layout_graph",
                        lambda *a, **k: full_layouts.append(a) or layout_graph(*a, **k))
    open_and_wait(qtbot, window, "bert_layernorm")
    after, before = window.panes["after"], window.panes["before"]
    fused = after.shown_graph
    info = fused.fused_info(LAYER_NORM)
    assert info is not None and info.op_type == "LayerNorm"
    closed = after.shown
    full_layouts.clear()

    window._on_activated("after", LAYER_NORM)  # a double-click on the fused node
    qtbot.waitUntil(lambda: after.shown.nodes[LAYER_NORM].open, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert not full_layouts
    opened = after.shown
    function = fused.functions[info.function]
    drawn = {n.name for n in function.node_def if n.op != "Const"}  # constants are drawn in their readers
    ports = {PORT_PREFIX + a.name for a in (*function.signature.input_arg, *function.signature.output_arg)}
    assert set(body_boxes(opened, LAYER_NORM).values()) == drawn | ports
    assert set(after.view.items_by_key) == set(opened.nodes)
    assert all(opened.nodes[k].original == name for k, name in body_boxes(opened, LAYER_NORM).items()
               if not name.startswith(PORT_PREFIX))
    # the outer edges reach the argument and result boxes, not the fused node's frame
    port_input = f"{LAYER_NORM}{BODY_SEP}{PORT_PREFIX}input_0"
    port_output = f"{LAYER_NORM}{BODY_SEP}{PORT_PREFIX}output_0"
    assert any(e.target == port_input and BODY_SEP not in e.source for e in opened.edges)
    assert any(e.source == port_output and BODY_SEP not in e.target for e in opened.edges)
    assert not any(LAYER_NORM in (e.source, e.target) for e in opened.edges)
    # selected: the before pane lights exactly the original nodes that are drawn
    assert after.view.selected_keys == {LAYER_NORM}
    assert before.view.selected_keys == set(before.view.keys_for(info.nodes)) and len(before.view.selected_keys) > 5

    after.view.setFocus()
    qtbot.keyClick(after.view, Qt.Key.Key_Return)  # Enter on the selected open node closes it
    qtbot.waitUntil(lambda: not after.shown.nodes[LAYER_NORM].open, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert geometry(after.shown) == geometry(closed)
    assert set(after.view.items_by_key) == set(closed.nodes)
    qtbot.keyClick(after.view, Qt.Key.Key_Enter)  # and opens it again
    qtbot.waitUntil(lambda: after.shown.nodes[LAYER_NORM].open, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert geometry(after.shown) == geometry(opened)
    assert not full_layouts


def test_a_fused_node_opens_inside_an_open_scope_box(qtbot, window):
    open_and_wait(qtbot, window, "bert_layernorm")
    after = window.panes["after"]
    scope = "bert/encoder/layer_0/attention"
    window.session.set_collapsed("before", frozenset({scope}))  # follows the before pane, like the overview
    window.session.set_collapsed("after", frozenset({scope}))
    qtbot.waitUntil(lambda: after.shown.collapsed == {scope} and window.panes["before"].shown.collapsed == {scope},
                    timeout=WAIT_MS)
    wait_idle(qtbot, window)
    collapsed = after.shown
    assert LAYER_NORM not in collapsed.nodes and SCOPE_PREFIX + scope in collapsed.nodes

    window._on_activated("after", SCOPE_PREFIX + scope)
    qtbot.waitUntil(lambda: FRAME_PREFIX + scope in after.shown.nodes, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert after.shown.nodes[LAYER_NORM].parent == FRAME_PREFIX + scope
    window._on_activated("after", LAYER_NORM)
    qtbot.waitUntil(lambda: after.shown.nodes[LAYER_NORM].open, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    nested = after.shown
    frame, body = nested.nodes[FRAME_PREFIX + scope], body_boxes(nested, LAYER_NORM)
    assert body and all(nested.nodes[k].parent == LAYER_NORM for k in body)
    f_left, f_top, f_right, f_bottom = frame.rect  # the scope's frame grew around the opened node
    n_left, n_top, n_right, n_bottom = nested.nodes[LAYER_NORM].rect
    assert f_left <= n_left and n_right <= f_right and f_top <= n_top and n_bottom <= f_bottom
    assert set(after.view.items_by_key) | set(after.view.frame_items) == set(nested.nodes)
    assert set(after.view.frame_items) == {frame.key}

    window._on_activated("after", FRAME_PREFIX + scope)  # closing the scope closes what is inside it
    qtbot.waitUntil(lambda: SCOPE_PREFIX + scope in after.shown.nodes, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert geometry(after.shown) == geometry(collapsed)
