"""What is drawn: which graph nodes become boxes, what each box shows, and the edges between boxes.

Drawn as separate nodes, the Const and Identity(Const) weight reads of a frozen graph make `dot`
run for minutes (MobileNetV2: killed after 9 min); folded into the op that reads them the same
graph lays out in a fraction of a second. A collapsed name scope is one box for all its nodes.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from fuselens.core.graph import Graph, TensorRef, proto
from fuselens.core.graph.opclass import op_category
from fuselens.core.layout.model import SCOPE_PREFIX, Layout, LayoutEdge, LayoutNode
from fuselens.core.layout.overview import drawn_name

# px per character of the view's three label fonts (bold 8.5 pt op type, 7.5 pt name, 6.5 pt weights),
# measured with DejaVu Sans plus a margin, so that op types such as FusedBatchNormV3 are not clipped
OP_CHAR_WIDTH = 7.9
NAME_CHAR_WIDTH = 6.3
WEIGHT_CHAR_WIDTH = 5.7
MAX_NODE_WIDTH = 320.0  # wide enough for a 46-character AutoFuse kernel name
NODE_HEIGHT = 40.0
WEIGHT_LINE_HEIGHT = 14.0


def short_name(name: str, parts: int = 2) -> str:
    """The last `parts` name components: `block_1_expand_BN/batchnorm/mul_1` -> `batchnorm/mul_1`."""
    return "/".join(name.split("/")[-parts:])


def format_shape(shape: tuple[int | None, ...] | None) -> str:
    if shape is None:
        return ""
    if not shape:
        return "scalar"
    return "×".join("?" if d is None else str(d) for d in shape)


def const_shape(graph: Graph, name: str) -> tuple[int | None, ...] | None:
    """Shape of a constant from its TensorProto header, without decoding the values."""
    source = graph.const_source(name)
    if source is None:
        return None
    return proto.shape_tuple(graph.node(source).attr["value"].tensor.tensor_shape)


def tensor_shape(graph: Graph, name: str, port: int) -> tuple[int | None, ...] | None:
    """The output's shape if the graph knows it without work (recorded on every node, or inferred already).

    Never triggers TensorFlow's shape inference itself (that imports TensorFlow): the window's
    fusion worker, which has TensorFlow loaded anyway, fills it in with `core.formats.tfshapes.ensure_shapes()`.
    """
    if graph.records_shapes or graph.shapes_ready:
        return graph.output_shape(name, port)
    return None


_folded: weakref.WeakKeyDictionary[Graph, tuple[list[str], dict[str, list[str]], dict[str, str]]] = \
    weakref.WeakKeyDictionary()


def fold_constants(graph: Graph) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """(drawn nodes, weights folded into each drawn node, owner of every folded constant).

    Kept per graph (graphs are not edited once built): the overview, the first layout and every
    box opened in place read it, and it is a pass over the whole graph (0.1 s at 20k nodes).
    """
    if (known := _folded.get(graph)) is None:
        known = _folded[graph] = _fold(graph)
    return known


def _fold(graph: Graph) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    # From the graph's arrays (Graph.const_mask, data_edges): asking each node whether it is a constant and what
    # reads it took 1.0 s of the 100k-node graph's first view; only the folded constants' edges are walked here.
    count = len(graph)
    names = graph.node_names(range(count))
    readers, producers = graph.data_edges()
    real = producers < count
    folded = graph.const_mask & (np.bincount(producers[real], minlength=count) > 0)  # a constant something reads
    drawn = [names[i] for i in np.flatnonzero(~folded).tolist()]
    first_input = np.full(count, -1, dtype=np.int64)  # each node's first data input (-1: none, or missing)
    reading, first = np.unique(readers, return_index=True)
    first_input[reading] = np.where(real[first], producers[first], -1)
    weight_edges = np.flatnonzero(real & ~folded[readers] & folded[np.where(real, producers, 0)])
    weights: dict[str, list[str]] = defaultdict(list)
    owner: dict[str, str] = {}
    for reader, producer in zip(readers[weight_edges].tolist(), producers[weight_edges].tolist(), strict=True):
        name = names[reader]
        weights[name].append(names[producer])
        node = producer
        while node >= 0 and folded[node] and names[node] not in owner:
            owner[names[node]] = name
            node = int(first_input[node])
    # constants read only by other folded constants' dead ends stay with any consumer found
    for i in np.flatnonzero(folded).tolist():
        name = names[i]
        if name not in owner:
            owner[name] = next(iter(graph.consumer_nodes(name)), name)
    return drawn, weights, owner


def _collapsed_scope(name: str, collapsed: frozenset[str]) -> str | None:
    """The outermost collapsed scope containing `name`, if any (a walk over its own prefixes, so
    the cost is its depth, not the number of collapsed scopes)."""
    end = name.find("/")
    while end != -1:
        if name[:end] in collapsed:
            return name[:end]
        end = name.find("/", end + 1)
    return None


def _class_mix(graph: Graph, names: list[str]) -> str:
    """A collapsed scope's op-class mix, biggest first: `12 conv · 30 elementwise · 4 norm`."""
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        counts[op_category(graph.op(name), fused=graph.fused_info(name) is not None)] += 1
    return " · ".join(f"{n} {c}" for c, n in sorted(counts.items(), key=lambda kv: -kv[1])[:4])


def node_size(op: str, title: str, weight_text: str) -> tuple[float, float]:
    text = max(len(op) * OP_CHAR_WIDTH, len(title) * NAME_CHAR_WIDTH, len(weight_text) * WEIGHT_CHAR_WIDTH)
    width = min(max(text + 24.0, 84.0), MAX_NODE_WIDTH)
    return width, NODE_HEIGHT + (WEIGHT_LINE_HEIGHT if weight_text else 0.0)


def collapsible_scopes(names: Iterable[str]) -> tuple[str, ...]:
    """Every scope prefix holding at least two of `names`, outermost first."""
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            counts["/".join(parts[:i])] += 1
    return tuple(sorted((s for s, c in counts.items() if c >= 2), key=lambda s: (s.count("/"), s)))


def visible_graph(graph: Graph, collapsed: Iterable[str] = (), only: Iterable[str] | None = None) -> Layout:
    """The boxes and edges to draw (positions all zero): constants folded, scopes collapsed.

    `only` limits it to these drawn nodes (the content of a box opened in place), with the
    edges between them and the constants they read.
    """
    collapsed = frozenset(collapsed)
    drawn, weights, folded = fold_constants(graph)
    const_owner = folded
    if only is not None:
        drawn = list(only)
        inside = set(drawn)
        const_owner = {const: consumer for const, consumer in folded.items() if consumer in inside}
    owner: dict[str, str] = {}
    members: dict[str, list[str]] = defaultdict(list)
    shown_as = drawn_names(graph, drawn)  # the boxes' scopes here, the collapsible scopes at the end
    for name, drawn_as in zip(drawn, shown_as):
        scope = _collapsed_scope(drawn_as, collapsed)
        key = SCOPE_PREFIX + scope if scope else name
        owner[name] = key
        members[key].append(name)
    for const, consumer in const_owner.items():
        owner[const] = owner.get(consumer, consumer)

    nodes: dict[str, LayoutNode] = {}
    for key, names in members.items():
        box_weights = tuple(w for n in names for w in weights.get(n, ()))
        if key.startswith(SCOPE_PREFIX):
            scope = key[len(SCOPE_PREFIX):]
            op, title, category = "scope", f"{short_name(scope, 2)} ({len(names)} ops)", "other"
            weight_text = _class_mix(graph, names)
        else:
            plain_op = graph.op(key)
            fused = graph.fused_info(key)
            op = fused.op_type if fused and fused.op_type else plain_op  # LayerNorm, not its function's name
            title = short_name(key)
            category = op_category(plain_op, fused=fused is not None)
            weight_text = "  ".join(format_shape(const_shape(graph, w)) or "?" for w in box_weights)
        width, height = node_size(op, title, weight_text)
        nodes[key] = LayoutNode(key, op, title, category, tuple(names), box_weights, weight_text,
                                width=width, height=height)

    edges: list[LayoutEdge] = []
    seen: set[tuple[str, str, bool]] = set()
    for name in drawn:
        target = owner[name]
        refs = graph.inputs(name) + [TensorRef(c, control=True) for c in graph.control_inputs(name)]
        for ref in refs:
            source = owner.get(ref.node)
            if source is None or source == target or (ref.control and graph.is_const(ref.node)):
                continue
            if ref.node in folded:  # a folded weight is not an edge
                continue
            edge_id = (source, target, ref.control)
            if edge_id in seen:
                continue
            seen.add(edge_id)
            label = "" if ref.control else format_shape(tensor_shape(graph, ref.node, ref.port))
            edges.append(LayoutEdge(source, target, str(ref), label, ref.control))
    return Layout(nodes, edges, owner, collapsed=collapsed, scopes=collapsible_scopes(shown_as))


def drawn_names(graph: Graph, drawn: Iterable[str] | None = None) -> list[str]:
    """The names the drawn nodes are drawn under (constants folded away; fused nodes in the scope of
    what they replaced), which the scope boxes and the overview of a big graph are made of."""
    return [drawn_name(graph, n) for n in (fold_constants(graph)[0] if drawn is None else drawn)]
