"""Graph layout for the view: Graphviz `dot` positions, constants folded into their consumers.

Drawn as separate nodes, the Const and Identity(Const) weight reads of a frozen graph make
`dot` run for minutes (MobileNetV2: killed after 9 min); folded into the op that reads them
the same graph lays out in a fraction of a second. Name scopes can be collapsed into one box.

`dot` runs as a child process with a time limit; past it (or when `dot` is missing or fails)
a layered layout computed here by topological depth is used instead, with a notice saying
why. Results are cached by a structural fingerprint of the graph plus the collapse state, in
memory and on disk in the user cache, so reopening a model or re-expanding a scope is instant.
Coordinates are scene pixels, y pointing down, node positions are centres.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from core import proto
from core.errors import Cancelled, FuseLensError
from core.fused import FUSED_OP_TYPE_ATTR
from core.graph import Graph, TensorRef
from core.io import write_bytes_atomic
from core.opclass import Category, op_category

LAYOUT_VERSION = 2  # bump when the output changes, so stale disk-cache files are not reused
DOT_TIMEOUT = 8.0  # seconds before the layered fallback takes over
SCOPE_PREFIX = "scope:"
POINTS_PER_INCH = 72.0
# px per character of the view's three label fonts (bold 8.5 pt op type, 7.5 pt name, 6.5 pt weights),
# measured with DejaVu Sans plus a margin, so that op types such as FusedBatchNormV3 are not clipped
OP_CHAR_WIDTH = 7.9
NAME_CHAR_WIDTH = 6.3
WEIGHT_CHAR_WIDTH = 5.7
MAX_NODE_WIDTH = 320.0  # wide enough for a 46-character AutoFuse kernel name
NODE_HEIGHT = 40.0
WEIGHT_LINE_HEIGHT = 14.0


@dataclass(frozen=True)
class LayoutNode:
    key: str  # the graph node's name, or SCOPE_PREFIX + scope for a collapsed scope box
    op: str  # op type shown; a fused node shows its fused op type, a scope box "scope"
    title: str  # short name shown under the op
    category: Category
    members: tuple[str, ...]  # graph nodes drawn by this box (itself, or every node of the scope)
    weights: tuple[str, ...] = ()  # constants (or Identity reads of them) folded into this box
    weight_text: str = ""  # shapes of the folded weights, one line
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0

    @property
    def is_scope(self) -> bool:
        return self.key.startswith(SCOPE_PREFIX)


@dataclass(frozen=True)
class LayoutEdge:
    source: str  # layout node keys
    target: str
    tensor: str  # the producer tensor, `name` or `name:port`; control edges `^name`
    label: str  # tensor shape, "" when unknown
    control: bool = False
    points: tuple[tuple[float, float], ...] = ()  # B-spline control points (dot) or a polyline (layered)
    spline: bool = True


@dataclass
class Layout:
    nodes: dict[str, LayoutNode]
    edges: list[LayoutEdge]
    owner: dict[str, str]  # every graph node -> key of the box that draws it
    width: float = 0.0
    height: float = 0.0
    engine: str = "dot"  # "dot" or "layered"
    notice: str = ""  # why the fallback was used
    seconds: float = 0.0
    collapsed: frozenset[str] = frozenset()
    scopes: tuple[str, ...] = ()  # scopes that can be collapsed (two or more drawn nodes)
    cached: bool = False

    def key_of(self, graph_node: str) -> str | None:
        return self.owner.get(graph_node)

    def to_json(self) -> dict:
        return {"nodes": [asdict(n) for n in self.nodes.values()], "edges": [asdict(e) for e in self.edges],
                "owner": self.owner, "width": self.width, "height": self.height, "engine": self.engine,
                "notice": self.notice, "seconds": self.seconds, "collapsed": sorted(self.collapsed),
                "scopes": list(self.scopes)}

    @classmethod
    def from_json(cls, data: dict) -> Layout:
        nodes = {}
        for n in data["nodes"]:
            n = dict(n, members=tuple(n["members"]), weights=tuple(n["weights"]))
            nodes[n["key"]] = LayoutNode(**n)
        edges = [LayoutEdge(**dict(e, points=tuple(tuple(p) for p in e["points"]))) for e in data["edges"]]
        return cls(nodes, edges, data["owner"], data["width"], data["height"], data["engine"], data["notice"],
                   data["seconds"], frozenset(data["collapsed"]), tuple(data["scopes"]))


# ---- what is drawn ------------------------------------------------------------------------------
def scope_of(name: str) -> str:
    return name.rpartition("/")[0]


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
    """The shape recorded in `_output_shapes`, else the graph's inferred shape once it is ready.

    Never triggers TensorFlow's shape inference itself (that imports TensorFlow): the window's
    fusion worker, which has TensorFlow loaded anyway, fills it in with `Graph.ensure_shapes()`.
    """
    node = graph.node(name)
    if "_output_shapes" in node.attr:
        shapes = node.attr["_output_shapes"].list.shape
        return proto.shape_tuple(shapes[port]) if port < len(shapes) else None
    return graph.output_shape(name, port) if graph.shapes_ready else None


def _fold_constants(graph: Graph) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """(drawn nodes, weights folded into each drawn node, owner of every folded constant)."""
    folded = {n.name for n in graph if graph.is_const(n.name) and graph.consumers(n.name)}
    drawn = [n.name for n in graph if n.name not in folded]
    weights: dict[str, list[str]] = defaultdict(list)
    owner: dict[str, str] = {}
    for name in drawn:
        for ref in graph.inputs(name):
            if ref.node in folded:
                weights[name].append(ref.node)
                node = ref.node
                while node in folded and node not in owner:
                    owner[node] = name
                    inputs = graph.inputs(node)
                    node = inputs[0].node if inputs else ""
    # constants read only by other folded constants' dead ends stay with any consumer found
    for name in folded:
        owner.setdefault(name, next(iter(graph.consumer_nodes(name)), name))
    return drawn, weights, owner


def _collapsed_scope(name: str, collapsed: frozenset[str]) -> str | None:
    """The outermost collapsed scope containing `name`, if any."""
    best = None
    for scope in collapsed:
        if name.startswith(scope + "/") and (best is None or len(scope) < len(best)):
            best = scope
    return best


def _node_size(op: str, title: str, weight_text: str) -> tuple[float, float]:
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


def visible_graph(graph: Graph, collapsed: Iterable[str] = ()) -> Layout:
    """The boxes and edges to draw (positions all zero): constants folded, scopes collapsed."""
    collapsed = frozenset(collapsed)
    drawn, weights, const_owner = _fold_constants(graph)
    owner: dict[str, str] = {}
    members: dict[str, list[str]] = defaultdict(list)
    for name in drawn:
        scope = _collapsed_scope(name, collapsed)
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
            weight_text = f"{len(box_weights)} weights" if box_weights else ""
        else:
            node = graph.node(key)
            fused_type = graph.attr(key, FUSED_OP_TYPE_ATTR)
            op = fused_type or node.op
            title = short_name(key)
            category = op_category(node.op, fused=fused_type is not None)
            weight_text = "  ".join(format_shape(const_shape(graph, w)) or "?" for w in box_weights)
        width, height = _node_size(op, title, weight_text)
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
            if ref.node in const_owner:  # a folded weight is not an edge
                continue
            edge_id = (source, target, ref.control)
            if edge_id in seen:
                continue
            seen.add(edge_id)
            label = "" if ref.control else format_shape(tensor_shape(graph, ref.node, ref.port))
            edges.append(LayoutEdge(source, target, str(ref), label, ref.control))
    return Layout(nodes, edges, owner, collapsed=collapsed, scopes=collapsible_scopes(drawn))


# ---- positions ----------------------------------------------------------------------------------
def dot_source(layout: Layout) -> tuple[str, list[str]]:
    """The DOT text (through the graphviz package) and the node keys in id order (`n0`, `n1`, ...)."""
    import graphviz

    keys = list(layout.nodes)
    ids = {key: f"n{i}" for i, key in enumerate(keys)}
    dot = graphviz.Digraph(graph_attr={"rankdir": "TB", "nodesep": "0.25", "ranksep": "0.45"},
                           node_attr={"shape": "box", "fixedsize": "true", "label": ""})
    for key in keys:
        node = layout.nodes[key]
        dot.node(ids[key], width=f"{node.width / POINTS_PER_INCH:.3f}", height=f"{node.height / POINTS_PER_INCH:.3f}")
    for edge in layout.edges:
        dot.edge(ids[edge.source], ids[edge.target], **({"style": "dashed"} if edge.control else {}))
    return dot.source, keys


def _run_dot(source: str, timeout: float, cancelled: Callable[[], bool] | None) -> str:
    """`dot -Tplain` with a time limit; polls `cancelled` so a cancel does not wait for dot."""
    exe = shutil.which("dot")
    if exe is None:
        raise FileNotFoundError("Graphviz `dot` is not installed")
    with subprocess.Popen([exe, "-Tplain"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        deadline = time.monotonic() + timeout
        pending_input: str | None = source
        while True:
            try:
                poll = max(0.0, min(0.05, deadline - time.monotonic()))
                out, err = process.communicate(pending_input, timeout=poll)
                break
            except subprocess.TimeoutExpired:
                pending_input = None
                if cancelled and cancelled():
                    process.kill()
                    process.communicate()
                    raise Cancelled() from None
                if time.monotonic() > deadline:
                    process.kill()
                    process.communicate()
                    raise
        if process.returncode != 0:
            raise RuntimeError(f"dot failed: {err.strip()[:200]}")
    return out


def _apply_dot_plain(layout: Layout, plain: str, keys: list[str]) -> None:
    """Fill positions from `dot -Tplain` (inches, y up) as scene pixels (y down)."""
    scale = POINTS_PER_INCH
    height = 0.0
    positions: dict[str, tuple[float, float]] = {}
    edge_points: dict[tuple[str, str], list[tuple[tuple[float, float], ...]]] = defaultdict(list)
    for line in plain.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "graph":
            layout.width, height = float(parts[2]) * scale, float(parts[3]) * scale
        elif parts[0] == "node":
            positions[keys[int(parts[1][1:])]] = (float(parts[2]) * scale, height - float(parts[3]) * scale)
        elif parts[0] == "edge":
            count = int(parts[3])
            coords = parts[4:4 + 2 * count]
            points = tuple((float(coords[i]) * scale, height - float(coords[i + 1]) * scale)
                           for i in range(0, len(coords), 2))
            edge_points[(keys[int(parts[1][1:])], keys[int(parts[2][1:])])].append(points)
    layout.height = height
    _place(layout, positions)
    placed = []
    for edge in layout.edges:
        routes = edge_points.get((edge.source, edge.target))
        points = routes.pop(0) if routes else ()
        placed.append(LayoutEdge(edge.source, edge.target, edge.tensor, edge.label, edge.control, points, True))
    layout.edges = placed


def _place(layout: Layout, positions: dict[str, tuple[float, float]]) -> None:
    layout.nodes = {key: replace(node, x=positions[key][0], y=positions[key][1])
                    for key, node in layout.nodes.items()}


def layered_positions(layout: Layout) -> None:
    """The cheap fallback: rank = longest path from a source, order in a rank by parents' mean x."""
    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    for edge in layout.edges:
        preds[edge.target].append(edge.source)
        succs[edge.source].append(edge.target)
    indegree = {key: len(preds[key]) for key in layout.nodes}
    ready = [key for key, d in indegree.items() if d == 0]
    rank: dict[str, int] = dict.fromkeys(ready, 0)
    order: list[str] = []
    while ready:
        key = ready.pop()
        order.append(key)
        for nxt in succs[key]:
            rank[nxt] = max(rank.get(nxt, 0), rank[key] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    for key in layout.nodes:  # nodes on a cycle (TF1 loops): after everything else
        rank.setdefault(key, max(rank.values(), default=0) + 1)
    rows: dict[int, list[str]] = defaultdict(list)
    for key in layout.nodes:
        rows[rank[key]].append(key)
    gap_x, gap_y = 24.0, 36.0
    row_height = NODE_HEIGHT + WEIGHT_LINE_HEIGHT + gap_y
    positions: dict[str, tuple[float, float]] = {}
    for r in sorted(rows):
        row = rows[r]
        wanted = {k: (sum(positions[p][0] for p in preds[k] if p in positions) /
                      max(1, sum(1 for p in preds[k] if p in positions))) for k in row}
        row.sort(key=lambda k: wanted[k])
        x = 0.0
        for key in row:
            width = layout.nodes[key].width
            x = max(x, wanted[key] - width / 2) if r else x
            positions[key] = (x + width / 2, r * row_height + row_height / 2)
            x += width + gap_x
    layout.width = max((positions[k][0] + layout.nodes[k].width / 2 for k in positions), default=0.0)
    layout.height = (max(rows, default=0) + 1) * row_height
    _place(layout, positions)
    layout.edges = [LayoutEdge(e.source, e.target, e.tensor, e.label, e.control,
                               (positions[e.source], positions[e.target]), False) for e in layout.edges]


# ---- caching and the entry point ---------------------------------------------------------------
def structure_key(graph: Graph, collapsed: Iterable[str] = ()) -> str:
    """What the layout depends on: names, ops, wiring, shapes and collapse state, not weight values."""
    digest = hashlib.sha1(f"v{LAYOUT_VERSION}\n".encode())
    for node in graph:
        shapes = node.attr["_output_shapes"].SerializeToString() if "_output_shapes" in node.attr else b""
        fused = node.attr[FUSED_OP_TYPE_ATTR].s if FUSED_OP_TYPE_ATTR in node.attr else b""
        digest.update(f"{node.name}\0{node.op}\0{','.join(node.input)}\0".encode() + shapes + fused + b"\n")
    if graph.shapes_ready and not graph.records_shapes:  # edge labels from inferred shapes
        digest.update(b"inferred shapes\n")
    for scope in sorted(collapsed):
        digest.update(f"collapsed\0{scope}\n".encode())
    return digest.hexdigest()


@dataclass
class LayoutCache:
    """Layouts by structure key: in memory, and as JSON files under `directory` when given."""

    directory: Path | None = None
    limit: int = 32
    _memory: dict[str, Layout] = field(default_factory=dict)

    def get(self, key: str) -> Layout | None:
        if key in self._memory:
            return self._memory[key]
        if self.directory is None:
            return None
        path = self.directory / f"{key}.json"
        try:
            layout = Layout.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or stale file: lay out again
        self._remember(key, layout)
        return layout

    def put(self, key: str, layout: Layout) -> None:
        self._remember(key, layout)
        if self.directory is not None:
            with contextlib.suppress(FuseLensError, OSError):  # a read-only cache folder only costs speed
                write_bytes_atomic(self.directory / f"{key}.json", json.dumps(layout.to_json()).encode())

    def _remember(self, key: str, layout: Layout) -> None:
        self._memory[key] = layout
        while len(self._memory) > self.limit:
            self._memory.pop(next(iter(self._memory)))


def default_cache() -> LayoutCache:
    from core.samples import cache_dir

    return LayoutCache(cache_dir() / "layouts")


def layout_graph(
    graph: Graph,
    collapsed: Iterable[str] = (),
    *,
    cache: LayoutCache | None = None,
    timeout: float = DOT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Layout:
    """Positions for every drawn box and edge; `dot` within `timeout`, else the layered fallback."""
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
    source, keys = dot_source(layout)
    try:
        _apply_dot_plain(layout, _run_dot(source, timeout, cancelled), keys)
    except subprocess.TimeoutExpired:
        layout.engine, layout.notice = "layered", f"dot took longer than {timeout:g} s; showing a simpler layout"
        layered_positions(layout)
    except (FileNotFoundError, RuntimeError, OSError) as e:
        layout.engine, layout.notice = "layered", f"{e}; showing a simpler layout"
        layered_positions(layout)
    layout.seconds = time.perf_counter() - start
    if cache is not None and layout.engine == "dot":
        cache.put(key, layout)
    return layout
