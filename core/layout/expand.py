"""Opening one box in place: a collapsed scope or a fused node grows into its content, the rest stays put.

Laying a 20k-node graph out again because one scope box opened takes `dot` seconds and moves
everything the user was looking at. Here only the box's content is laid out (a scope's nodes,
its sub-scopes collapsed when it is big; a fused node's library function, with its arguments and
results as small port boxes), then spliced into the shown layout: the box becomes a frame the size
of its content (a scope's frame is keyed FRAME_PREFIX + scope, a fused node keeps its key), boxes
beyond it move right (beside it) or down (below it) to make room, every other box keeps its
position, and the edges that crossed the box's border now end at the inner boxes they really
connect to. Closing a box gives back the layout it was opened from, exactly. Contents are cached
by graph structure and box, so opening a box again costs no `dot` run.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from fuselens.core.graph import Graph, proto
from fuselens.core.layout.cache import LayoutCache, structure_key
from fuselens.core.layout.drawn import (
    OP_CHAR_WIDTH,
    const_shape,
    fold_constants,
    format_shape,
    node_size,
    short_name,
    tensor_shape,
    visible_graph,
)
from fuselens.core.layout.engine import position_boxes
from fuselens.core.layout.model import FRAME_PREFIX, SCOPE_PREFIX, Layout, LayoutEdge, LayoutNode, copy_with

BODY_SEP = "::"  # a fused node's body box is keyed `<fused node><BODY_SEP><body node>`
PORT_PREFIX = "@"  # body boxes of the function's arguments (`@input_0`) and results (`@output_0`)
FRAME_PAD = 16.0  # space between an open box's border and its content
FRAME_HEADER = 30.0  # an open box's title line above its content
PORT_HEIGHT = 32.0
CONTENT_DOT_TIMEOUT = 3.0  # seconds for one box's content; past it the layered fallback
MAX_STEPS = 16  # more scopes than this to open or close at once: one layout of everything is cheaper
EPS = 0.5


def is_body_key(key: str) -> bool:
    """Whether a layout key is a box inside an opened fused node."""
    return BODY_SEP in key


def open_box(graph: Graph, layout: Layout, key: str, inside: frozenset[str] = frozenset(), *,
             cache: LayoutCache | None = None, timeout: float = CONTENT_DOT_TIMEOUT,
             cancelled: Callable[[], bool] | None = None) -> Layout:
    """`layout` with box `key` opened in place; `inside` are the scopes to keep collapsed within it.

    Raises KeyError when `key` is not a closed box of the layout, ValueError when it has no content
    (neither a scope box nor a fused node whose function is in the graph's library).
    """
    box = layout.nodes[key]
    if box.open:
        raise KeyError(f"{key} is open already")
    inside = frozenset(inside)
    content = _content(graph, box, inside, cache, timeout, cancelled)
    header = (len(box.op) + 2 + len(box.title)) * OP_CHAR_WIDTH + 2 * FRAME_PAD  # "op  title" in the bold font
    width = max(box.width, content.width + 2 * FRAME_PAD, header)
    height = max(box.height, content.height + FRAME_HEADER + FRAME_PAD)
    dx, dy = width - box.width, height - box.height
    left, top, _right, _bottom = box.rect
    shifts, ancestors = _shifts(layout.nodes, key, dx, dy)

    frame = FRAME_PREFIX + box.scope if box.is_scope else key  # a fused node keeps its key: it is still drawn
    nodes: dict[str, LayoutNode] = {}
    for k, node in layout.nodes.items():
        if k == key:
            nodes[frame] = replace(node, key=frame, x=left + width / 2, y=top + height / 2, width=width,
                                   height=height, open=True, members=() if box.is_scope else box.members)
        elif k in ancestors:
            nodes[k] = replace(node, x=node.x + dx / 2, y=node.y + dy / 2, width=node.width + dx,
                               height=node.height + dy)
        elif k in shifts:
            sx, sy = shifts[k]
            nodes[k] = copy_with(node, x=node.x + sx, y=node.y + sy)
        else:
            nodes[k] = node
    ox, oy = left + (width - content.width) / 2, top + FRAME_HEADER
    for k, node in content.nodes.items():
        nodes[k] = copy_with(node, x=node.x + ox, y=node.y + oy, parent=frame)

    owner = dict(layout.owner)
    if box.is_scope:
        owner.update(content.owner)
        owner.update({name: frame for name, k in owner.items() if k == key})  # constants of no inner box
    moved = ancestors | {frame}
    edges: list[LayoutEdge] = []
    for edge in layout.edges:
        if key in (edge.source, edge.target):
            continue  # replaced by the edges to and from the inner boxes
        shift = shifts.get(edge.source, (0.0, 0.0))
        if edge.source in moved or edge.target in moved or shift != shifts.get(edge.target, (0.0, 0.0)):
            edges.append(_routed(edge, nodes))
        elif shift != (0.0, 0.0):
            edges.append(_translated(edge, *shift))
        else:
            edges.append(edge)
    edges += [_translated(edge, ox, oy) for edge in content.edges]
    edges += [_routed(edge, nodes) for edge in _crossing(graph, box, content, owner, nodes)]

    collapsed = (layout.collapsed - {box.scope}) | inside if box.is_scope else layout.collapsed
    return Layout(nodes, edges, owner,
                  width=max(layout.width + dx, max(n.x + n.width / 2 for n in nodes.values())),
                  height=max(layout.height + dy, max(n.y + n.height / 2 for n in nodes.values())),
                  engine=layout.engine, notice=layout.notice, seconds=layout.seconds, collapsed=collapsed,
                  scopes=layout.scopes, opened=(*layout.opened, (key, inside)), previous=layout)


def close_box(graph: Graph, layout: Layout, key: str, *, cache: LayoutCache | None = None,
              timeout: float = CONTENT_DOT_TIMEOUT, cancelled: Callable[[], bool] | None = None) -> Layout:
    """`layout` with the opened box `key` closed: the layout it was opened from, with the boxes
    opened after it (and not inside it) opened again. Raises KeyError when `key` was not opened."""
    steps = [k for k, _ in layout.opened]
    if key not in steps:
        raise KeyError(f"{key} was not opened in place")
    index = steps.index(key)
    base = layout
    for _ in range(len(steps) - index):
        assert base.previous is not None  # every opened step keeps the layout it was made from
        base = base.previous
    for k, inside in layout.opened[index + 1:]:
        if k in base.nodes and not base.nodes[k].open:
            base = open_box(graph, base, k, inside, cache=cache, timeout=timeout, cancelled=cancelled)
    return base


def follow_collapsed(graph: Graph, layout: Layout, wanted: frozenset[str], *, cache: LayoutCache | None = None,
                     timeout: float = CONTENT_DOT_TIMEOUT,
                     cancelled: Callable[[], bool] | None = None) -> Layout | None:
    """`layout` with scopes opened and closed in place until its collapsed scopes are `wanted`.

    None when that cannot be done in place: a scope to collapse that was not opened in place, a
    scope to open that is not drawn as a box, or more than MAX_STEPS scopes to change (Expand all
    scopes on an overview of 1,775 boxes): the caller lays the graph out again.
    """
    want = outermost(wanted)
    if len(want ^ outermost(layout.collapsed)) > MAX_STEPS:
        return None
    current = layout
    for _ in range(len(wanted) + len(layout.collapsed) + len(layout.opened) + 1):
        have = outermost(current.collapsed)
        if have == want:
            return current
        opened_keys = {k for k, _ in current.opened}
        to_close = sorted(want - have, key=lambda s: (s.count("/"), s))
        if to_close:
            key = SCOPE_PREFIX + to_close[0]
            if key not in opened_keys:
                return None
            current = close_box(graph, current, key, cache=cache, timeout=timeout, cancelled=cancelled)
            continue
        scope = min(have - want, key=lambda s: (s.count("/"), s))
        key = SCOPE_PREFIX + scope
        if key not in current.nodes or current.nodes[key].open:
            return None
        inside = frozenset(s for s in wanted if s.startswith(scope + "/"))
        current = open_box(graph, current, key, inside, cache=cache, timeout=timeout, cancelled=cancelled)
    return None


def outermost(collapsed: frozenset[str]) -> frozenset[str]:
    """The collapsed scopes that are drawn: a scope inside another collapsed one changes nothing."""
    def hidden(scope: str) -> bool:
        end = scope.find("/")
        while end != -1:
            if scope[:end] in collapsed:
                return True
            end = scope.find("/", end + 1)
        return False
    return frozenset(s for s in collapsed if not hidden(s))


# ---- content ------------------------------------------------------------------------------------

def _content(graph: Graph, box: LayoutNode, inside: frozenset[str], cache: LayoutCache | None, timeout: float,
             cancelled: Callable[[], bool] | None) -> Layout:
    """The box's content laid out on its own, top left at (0, 0), keys as they will be drawn."""
    cache_key = ""
    if cache is not None:
        digest = hashlib.sha1(f"in place\0{structure_key(graph)}\0{box.key}\0".encode())
        for scope in sorted(inside):
            digest.update(f"{scope}\0".encode())
        cache_key = digest.hexdigest()
        if (hit := cache.get(cache_key)) is not None:
            return hit
    if box.is_scope:
        content = visible_graph(graph, inside, only=box.members)
    elif graph.fused_info(box.key) is not None and graph.fused_info(box.key).function in graph.functions:
        content = _body(graph, box.key)
    else:
        raise ValueError(f"{box.key} has no content to open")
    if position_boxes(content, timeout, cancelled) and cache is not None:
        cache.put(cache_key, content)
    return content


def _body(graph: Graph, name: str) -> Layout:
    """A fused node's function body as boxes: its nodes (constants folded), an `input i` box per
    argument (titled with the outer tensor) and an `output k` box per result."""
    function = graph.functions[graph.fused_info(name).function]
    body = proto.GraphDef()
    for arg in function.signature.input_arg:
        node = body.node.add(name=PORT_PREFIX + arg.name, op="Placeholder")
        node.attr["dtype"].type = arg.type
    args = {arg.name for arg in function.signature.input_arg}
    for node_def in function.node_def:
        copy = body.node.add()
        copy.CopyFrom(node_def)
        del copy.input[:]
        copy.input.extend(_graph_input(text, args) for text in node_def.input)
    for out in function.signature.output_arg:
        body.node.add(name=PORT_PREFIX + out.name, op="Identity", input=[_graph_input(function.ret[out.name], args)])
    inner = visible_graph(Graph(body, source=f"body of {name}", validate=False))

    outer_inputs = graph.inputs(name)
    nodes: dict[str, LayoutNode] = {}
    for key, node in inner.nodes.items():
        new_key = f"{name}{BODY_SEP}{key}"
        if key.startswith(PORT_PREFIX):
            kind, _, index = key[len(PORT_PREFIX):].rpartition("_")
            title, weight_text = kind, ""
            if kind == "input" and int(index) < len(outer_inputs):  # titled with the tensor it receives
                ref = outer_inputs[int(index)]
                title = short_name(str(ref))
                if graph.is_const(ref.node) or graph.const_source(ref.node) is not None:
                    weight_text = format_shape(const_shape(graph, ref.node)) or "?"
            elif kind == "output":  # titled with who reads it
                readers = graph.consumers(name, int(index))
                title = f"→ {short_name(readers[0].node)}" if readers else "not read"
                title += f" +{len(readers) - 1}" if len(readers) > 1 else ""
            op = f"{kind} {index}"
            width = node_size(op, title, weight_text)[0]
            nodes[new_key] = replace(node, key=new_key, op=op, title=title, category="other", members=(name,),
                                     weight_text=weight_text, width=width,
                                     height=PORT_HEIGHT + (12.0 if weight_text else 0.0))
        else:
            nodes[new_key] = replace(node, key=new_key, members=(name,), original=key)
    edges = [replace(e, source=f"{name}{BODY_SEP}{e.source}", target=f"{name}{BODY_SEP}{e.target}")
             for e in inner.edges]
    return Layout(nodes, edges, {})


def _graph_input(text: str, args: set[str]) -> str:
    """A function body's input (`arg`, `node:out:index`, `^node`) as a graph input (`@arg`, `node:index`)."""
    if text.startswith("^"):
        return text
    if text in args:
        return PORT_PREFIX + text
    node, _, index = text.partition(":")
    index = index.rpartition(":")[2] if index else "0"
    return node if index == "0" else f"{node}:{index}"


# ---- splicing -----------------------------------------------------------------------------------

def _shifts(nodes: dict[str, LayoutNode], key: str, dx: float,
            dy: float) -> tuple[dict[str, tuple[float, float]], set[str]]:
    """How far each box moves when `key` grows by (dx, dy) with its top left fixed, and the open boxes
    around it (which grow by the same). At each level, from the box out to the top: a box (with all
    it contains) below the grown one moves down, one beside it on its right moves right."""
    children: dict[str, list[str]] = defaultdict(list)
    for k, node in nodes.items():
        children[node.parent].append(k)
    shifts: dict[str, tuple[float, float]] = {}
    ancestors: set[str] = set()
    reference = nodes[key]
    while True:
        _left, top, right, bottom = reference.rect
        for k in children[reference.parent]:
            if k == reference.key:
                continue
            n_left, n_top, _n_right, n_bottom = nodes[k].rect
            if n_top >= bottom - EPS:
                shift = (0.0, dy)
            elif n_bottom > top + EPS and n_left >= right - EPS:
                shift = (dx, 0.0)
            else:
                continue
            if shift == (0.0, 0.0):
                continue
            stack = [k]
            while stack:
                k2 = stack.pop()
                shifts[k2] = shift
                stack += children.get(k2, ())
        if not reference.parent:
            return shifts, ancestors
        ancestors.add(reference.parent)
        reference = nodes[reference.parent]


def _crossing(graph: Graph, box: LayoutNode, content: Layout, owner: dict[str, str],
              nodes: dict[str, LayoutNode]) -> list[LayoutEdge]:
    """The edges between the opened box's inner boxes and the boxes outside it, from the graph's
    wiring (a scope member's inputs and readers; a fused node's inputs and readers through its ports)."""
    folded = fold_constants(graph)[2]

    def port(key: str, kind: str, index: int) -> str:
        """An edge to or from an opened fused node ends at its argument or result box."""
        inner = f"{key}{BODY_SEP}{PORT_PREFIX}{kind}_{index}"
        return inner if inner in nodes else key

    edges: dict[tuple[str, str, bool], LayoutEdge] = {}

    def add(source: str, target: str, tensor: str, label: str, control: bool = False) -> None:
        if source != target:
            edges.setdefault((source, target, control), LayoutEdge(source, target, tensor, label, control))

    inner_keys = set(content.nodes)
    members = box.members if box.is_scope else ()
    for name in members:
        for ref in graph.inputs(name):
            if ref.node in folded or owner.get(ref.node) in inner_keys or ref.node not in owner:
                continue
            add(port(owner[ref.node], "output", ref.port), owner[name], str(ref),
                format_shape(tensor_shape(graph, ref.node, ref.port)))
        for control in graph.control_inputs(name):
            if control in owner and owner[control] not in inner_keys and not graph.is_const(control):
                add(owner[control], owner[name], f"^{control}", "", True)
        for consumer in graph.consumers(name):
            if consumer.node in owner and owner[consumer.node] not in inner_keys:
                add(owner[name], port(owner[consumer.node], "input", consumer.index),
                    name if consumer.port == 0 else f"{name}:{consumer.port}",
                    format_shape(tensor_shape(graph, name, consumer.port)))
        for reader in graph.control_consumers(name):
            if reader in owner and owner[reader] not in inner_keys:
                add(owner[name], owner[reader], f"^{name}", "", True)
    if not box.is_scope:
        name = box.key
        for slot, ref in enumerate(graph.inputs(name)):
            if ref.node not in folded and ref.node in owner:
                add(port(owner[ref.node], "output", ref.port), port(name, "input", slot), str(ref),
                    format_shape(tensor_shape(graph, ref.node, ref.port)))
        for consumer in graph.consumers(name):
            if consumer.node in owner:
                add(port(name, "output", consumer.port), port(owner[consumer.node], "input", consumer.index),
                    name if consumer.port == 0 else f"{name}:{consumer.port}",
                    format_shape(tensor_shape(graph, name, consumer.port)))
        for control in graph.control_inputs(name):
            if control in owner and not graph.is_const(control):
                add(owner[control], name, f"^{control}", "", True)
        for reader in graph.control_consumers(name):
            if reader in owner:
                add(name, owner[reader], f"^{name}", "", True)
    return list(edges.values())


def _translated(edge: LayoutEdge, dx: float, dy: float) -> LayoutEdge:
    return copy_with(edge, points=tuple((x + dx, y + dy) for x, y in edge.points))


def _routed(edge: LayoutEdge, nodes: dict[str, LayoutNode]) -> LayoutEdge:
    """A simple curve from the bottom of the source box to the top of the target box."""
    source, target = nodes[edge.source], nodes[edge.target]
    x0, y0 = source.x, source.y + source.height / 2
    x1, y1 = target.x, target.y - target.height / 2
    bend = max(18.0, abs(y1 - y0) / 3)
    return replace(edge, points=((x0, y0), (x0, y0 + bend), (x1, y1 - bend), (x1, y1)), spline=True)
