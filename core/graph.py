"""Graph IR: an immutable-by-convention view of a TF GraphDef with producer/consumer indexes.

A pass never edits a NodeDef it received. It asks `graph.editor()` for a copy-on-write
`GraphEditor`, changes that, and `build()`s a new `Graph`; the original stays untouched
(`tests/core/test_graph.py` checks this by serialising before and after).
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import sys
from array import array
from collections import defaultdict
from collections.abc import (
    Callable,
    Collection,
    Hashable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    MutableSequence,
    Sequence,
    ValuesView,
)
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from core import opdefs, proto
from core.errors import FuseLensError
from core.fused import FUSED_NODES_ATTR, FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR, XLA_MUST_COMPILE_ATTR, FusedInfo
from core.wording import shown

if TYPE_CHECKING:
    import networkx as nx

# Ops that only forward their input unchanged: a constant behind them is still a constant.
FORWARDING_OPS = frozenset({"Identity", "Snapshot", "StopGradient"})
# Ops whose back edges legitimately close a cycle (TF1 while loops).
LOOP_BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})
# Constants up to this size are decoded once per graph (Graph.const_value).
CACHED_CONST_BYTES = 16 << 10
# A node up to this size (read from a .pb, or made by a pass) is kept as its serialized record and decoded
# when read; a larger one (a weight) is kept parsed, which costs about its bytes and no copy per read.
WRITTEN_NODE_BYTES = 4 << 10
# Nodes that are never a model output even when nothing consumes them.
NON_OUTPUT_OPS = frozenset({"NoOp", "Const", "Assert", "VarHandleOp", "SaveV2", "RestoreV2"})

K = TypeVar("K", bound=Hashable)


def topological_sort(keys: Iterable[K], edges: Iterable[tuple[K, K]]) -> list[K]:
    """Kahn's order of `keys` along `edges` (source before target), the one topological sort of FuseLens.

    Among ready keys the one listed first goes first, so the order follows the order the model
    was written in (kernel names and counters depend on it). Keys on a cycle, and keys after
    one, are left out: a result shorter than `keys` means a cycle. Edges naming a key not in
    `keys` are ignored.
    """
    position = {key: i for i, key in enumerate(keys)}
    listed = list(position)
    count = len(listed)
    waiting = [0] * count
    # Edge s -> t as the int s * count + t, sorted: the successors of a key sit together, and no
    # per-key list is allocated (a big graph would otherwise leave the garbage collector busy).
    codes: list[int] = []
    for source, target in edges:
        s, t = position.get(source), position.get(target)
        if s is not None and t is not None:
            codes.append(s * count + t)
            waiting[t] += 1
    codes.sort()
    first = [bisect.bisect_left(codes, i * count) for i in range(count + 1)]
    order: list[int] = []
    _kahn(waiting, lambda i: (code % count for code in codes[first[i]:first[i + 1]]), order)
    return [listed[i] for i in order]


def _kahn(waiting: list[int], successors: Callable[[int], Iterable[int]], order: MutableSequence[int]) -> None:
    """Kahn's loop over ids 0..len(waiting)-1, appending to `order`: `waiting[i]` counts i's predecessors
    not yet ordered (it is used up); among ready ids the smallest goes first (the order the model was
    written in). Shared by topological_sort() and the Graph's own order over its edge arrays."""
    ready = [i for i, deg in enumerate(waiting) if deg == 0]  # ascending, so already a heap
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for t in successors(i):
            waiting[t] -= 1
            if waiting[t] == 0:
                heapq.heappush(ready, t)


@dataclass(frozen=True, order=True, slots=True)
class TensorRef:
    """One input string of a NodeDef: `name`, `name:port` or `^name` (control)."""

    node: str
    port: int = 0
    control: bool = False

    @classmethod
    def parse(cls, text: str) -> TensorRef:
        if text.startswith("^"):
            return cls(sys.intern(text[1:]), 0, True)
        name, sep, port = text.rpartition(":")
        if sep and port.isdigit():
            return cls(sys.intern(name), int(port))
        return cls(sys.intern(text), 0)

    def __str__(self) -> str:
        if self.control:
            return f"^{self.node}"
        return self.node if self.port == 0 else f"{self.node}:{self.port}"


@dataclass(frozen=True, slots=True)
class Consumer:
    """A data edge seen from its producer: `node` reads the tensor at input slot `index`."""

    node: str
    index: int
    port: int


class Graph:
    """A GraphDef plus indexes. Treat as immutable; use `editor()` to derive a new graph.

    A graph a pass built shares every NodeDef it did not change with the graph it came from (no
    copy per pass), and writes its GraphDef only when asked (`graph_def`; `serialized()` and
    `to_bytes()` serialize without it).
    """

    def __init__(self, graph_def: proto.GraphDef | SerializedGraphDef, *, source: str = "<graph>",
                 validate: bool = True):
        # A SerializedGraphDef (a .pb read) is kept as its bytes; its nodes are decoded when read.
        self._graph_def: proto.GraphDef | SerializedGraphDef | None = graph_def
        ids: dict[str, int] = {}
        where = array("q")  # GraphDef position of each node (a later node of the same name wins)
        duplicates: list[str] = []
        for position, node in enumerate(graph_def.node):
            name = sys.intern(node.name)  # one string per name, however many edges name it
            i = ids.get(name)
            if i is None:
                ids[name] = len(where)
                where.append(position)
            else:
                duplicates.append(name)
                where[i] = position
        self._index(_NodeTable(ids, [graph_def.node], where), graph_def.library, graph_def.versions, source,
                    validate, duplicates)

    @classmethod
    def _assembled(cls, nodes: _NodeTable, library: proto.FunctionDefLibrary, versions: Any, source: str,
                   validate: bool) -> Graph:
        """A graph of these nodes (an editor's), with no GraphDef until one is asked for."""
        graph = cls.__new__(cls)
        graph._graph_def = None
        graph._index(nodes, library, versions, source, validate)
        return graph

    def _index(self, nodes: _NodeTable, library: proto.FunctionDefLibrary, versions: Any, source: str,
               validate: bool, duplicates: Iterable[str] = ()) -> None:
        """The edge indexes as int32 arrays over node ids (a node's position in GraphDef order), not as
        Python objects per edge: a 20k-node graph's tuples of TensorRef and Consumer took ~5 MB, its
        arrays take ~0.3. The small objects (`TensorRef`, `Consumer`) are made when asked for."""
        self.library, self.versions, self.source = library, versions, source
        self.nodes: Mapping[str, proto.NodeDef] = nodes
        # Node ids: positions in GraphDef order; names an input reads that are no node (a graph read
        # without validation) get the ids after them, so their readers are indexed too.
        self._names: list[str] = list(nodes)
        self._ids: dict[str, int] = nodes.ids
        self._missing: dict[str, int] = {}
        # Inputs in CSR form: node i's inputs are edges _in_start[i] .. _in_start[i + 1] - 1, each a
        # producer id and a port (-1: a control input).
        starts, producers, ports = array("i", [0]), array("i"), array("i")
        ids, missing, names = self._ids, self._missing, self._names
        # Each node's op as a code into the graph's list of op names: the passes ask for ops most (a third
        # of their node reads), and a node read from bytes is decoded at each read; 4 B a node.
        op_codes: dict[str, int] = {}
        self._ops = array("i")
        for node in self.nodes.values():
            code = op_codes.get(node.op)
            if code is None:
                code = op_codes[node.op] = len(op_codes)
            self._ops.append(code)
            for text in node.input:
                producer = ids.get(text) if ":" not in text and text[:1] != "^" else None
                if producer is None:
                    ref = TensorRef.parse(text)
                    producer = ids.get(ref.node)
                    if producer is None:
                        producer = missing.get(ref.node)
                        if producer is None:
                            producer = missing[ref.node] = len(names)
                            names.append(ref.node)
                    ports.append(-1 if ref.control else ref.port)
                else:
                    ports.append(0)
                producers.append(producer)
            starts.append(len(producers))
        self._in_start, self._in_node, self._in_port = starts, producers, ports
        self._op_names = list(op_codes)
        # Readers in CSR form: producer p's reading edges are _out_edge[_out_start[p] .. _out_start[p + 1] - 1],
        # its data edges first, each kind in reader order then slot order (the order the inputs are listed).
        node_ids = np.frombuffer(producers, dtype=np.int32)
        control = np.frombuffer(ports, dtype=np.int32) < 0
        order = np.argsort(node_ids.astype(np.int64) * 2 + control, kind="stable").astype(np.int32)
        self._out_edge = array("i", order.tobytes())
        self._out_start = array("i", [0])
        self._out_start.frombytes(np.cumsum(np.bincount(node_ids, minlength=len(names)), dtype=np.int32).tobytes())
        self._in_reader = array("i", np.repeat(np.arange(len(self.nodes), dtype=np.int32),
                                               np.diff(np.frombuffer(starts, dtype=np.int32))).tobytes())
        self._shapes: dict[tuple[str, int], tuple[int | None, ...] | None] | None = None
        self._const_values: dict[str, np.ndarray] = {}
        if validate:
            self.validate(duplicates)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its bytes plus any shapes already known (the window's TensorFlow helper sends graphs); a
        graph read from a .pb as its records were read (SerializedGraphDef.as_read)."""
        graph_def = self._graph_def
        data = graph_def.as_read() if isinstance(graph_def, SerializedGraphDef) else self.to_bytes()
        return _unpickle_graph, (data, self.source, self._shapes)

    @property
    def graph_def(self) -> proto.GraphDef:
        """The GraphDef; for a graph read from bytes, parsed now, and for one a pass built, written now (a copy
        of every node); then kept."""
        if isinstance(self._graph_def, SerializedGraphDef):
            self._graph_def = self._graph_def.parsed()
        if self._graph_def is None:
            graph_def = proto.GraphDef()
            graph_def.node.extend(self.nodes.values())
            graph_def.library.CopyFrom(self.library)
            graph_def.versions.CopyFrom(self.versions)
            self._graph_def = graph_def
        return self._graph_def

    def to_bytes(self) -> bytes:
        """The GraphDef serialized deterministically (see serialized())."""
        return b"".join(self.serialized())

    def serialized(self) -> Iterator[bytes]:
        """The GraphDef serialized deterministically, in pieces, without writing the GraphDef first.

        Nodes are GraphDef field 1, before every other field, so the bytes are each node's record
        (tag and length, then the node) followed by the rest of the message serialized on its own.
        A writer that takes the pieces one by one never holds a big graph's bytes whole.
        """
        if isinstance(self._graph_def, SerializedGraphDef):
            yield from self._graph_def.serialized()
            return
        if self._graph_def is not None:
            yield self._graph_def.SerializeToString(deterministic=True)
            return
        yield from _node_records(node.SerializeToString(deterministic=True) for node in self.nodes.values())
        # Then library (field 2) and versions (field 4), each set (so written even when empty) as
        # `graph_def` sets them. The library goes a record at a time too (its functions, gradients and
        # registered gradients, fields 1-3, in that order): serialized whole, a big graph's AutoFuse
        # functions were two more copies of it in memory at once (the encoder's buffer and the bytes).
        records = [(field, item) for field, items in ((1, self.library.function), (2, self.library.gradient),
                                                      (3, self.library.registered_gradients)) for item in items]
        yield _record_head(2, sum(len(_record_head(field, item.ByteSize())) + item.ByteSize()
                                  for field, item in records))
        for field, item in records:
            payload = item.SerializeToString(deterministic=True)
            yield _record_head(field, len(payload))
            yield payload
        payload = self.versions.SerializeToString(deterministic=True)
        yield _record_head(4, len(payload))
        yield payload

    def adopt_shapes(self, shapes: dict[tuple[str, int], tuple[int | None, ...] | None]) -> None:
        """Take output shapes computed elsewhere (another process's `ensure_shapes()` of this graph)."""
        self._shapes = dict(shapes)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "<bytes>", validate: bool = True) -> Graph:
        """The graph of a serialized GraphDef, kept as its bytes (see SerializedGraphDef)."""
        return cls(SerializedGraphDef.read(data), source=source, validate=validate)

    @classmethod
    def from_nodes(cls, nodes: Iterable[proto.NodeDef], *, source: str = "<nodes>",
                   validate: bool = True) -> Graph:
        """A graph of these NodeDefs (tests and hand-built graphs)."""
        graph_def = proto.GraphDef()
        graph_def.node.extend(nodes)
        return cls(graph_def, source=source, validate=validate)

    def editor(self) -> GraphEditor:
        return GraphEditor(self)

    # ---- basic queries ------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[proto.NodeDef]:
        return iter(self.nodes.values())

    def in_graph_order(self, names: Iterable[str]) -> list[str]:
        """`names` in GraphDef order, in time linear in len(names) (not in the graph's size)."""
        return sorted(set(names), key=self._ids.__getitem__)

    def node(self, name: str) -> proto.NodeDef:
        try:
            return self.nodes[name]
        except KeyError:
            raise KeyError(f"no node named {name!r} in {self.source}") from None

    def op(self, name: str) -> str:
        try:
            return self._op_names[self._ops[self._ids[name]]]
        except KeyError:
            raise KeyError(f"no node named {name!r} in {self.source}") from None

    def op_type(self, name: str) -> str:
        """The op a user thinks of: a fused call node's `_fused_op_type` (LayerNorm, AscBackend), else its op."""
        node = self.node(name)
        if FUSED_OP_TYPE_ATTR in node.attr:
            return node.attr[FUSED_OP_TYPE_ATTR].s.decode()
        return node.op

    def fused_info(self, name: str) -> FusedInfo | None:
        """The fusion record of a fused call node (None for any other node)."""
        attrs = self.node(name).attr
        if FUSION_PASS_ATTR not in attrs:
            return None
        return FusedInfo(pass_id=attrs[FUSION_PASS_ATTR].s.decode(),
                         op_type=attrs[FUSED_OP_TYPE_ATTR].s.decode() if FUSED_OP_TYPE_ATTR in attrs else "",
                         nodes=tuple(s.decode() for s in attrs[FUSED_NODES_ATTR].list.s)
                         if FUSED_NODES_ATTR in attrs else (),
                         function=self.node(name).op,
                         xla=XLA_MUST_COMPILE_ATTR in attrs and attrs[XLA_MUST_COMPILE_ATTR].b)

    def inputs(self, name: str) -> list[TensorRef]:
        """Data inputs only, in slot order."""
        i = self._ids[name]
        names, start, end = self._names, self._in_start[i], self._in_start[i + 1]
        return [TensorRef(names[producer], port)
                for producer, port in zip(self._in_node[start:end], self._in_port[start:end]) if port >= 0]

    def control_inputs(self, name: str) -> list[str]:
        i = self._ids[name]
        start, end = self._in_start[i], self._in_start[i + 1]
        return [self._names[producer]
                for producer, port in zip(self._in_node[start:end], self._in_port[start:end]) if port < 0]

    def input_node(self, name: str, index: int) -> str:
        return self.inputs(name)[index].node

    def _reading_edges(self, name: str) -> array:
        """The edges that read `name` (data first), empty for a name nothing reads."""
        i = self._ids.get(name)
        if i is None:
            i = self._missing.get(name)
            if i is None:
                return array("i")
        return self._out_edge[self._out_start[i]:self._out_start[i + 1]]

    def consumers(self, name: str, port: int | None = None) -> list[Consumer]:
        """Data consumers of a node's outputs (of one `port` if given)."""
        found = []
        for edge in self._reading_edges(name):
            p = self._in_port[edge]
            if p < 0:
                break  # the control edges come last
            if port is None or p == port:
                reader = self._in_reader[edge]
                found.append(Consumer(self._names[reader], edge - self._in_start[reader], p))
        return found

    def control_consumers(self, name: str) -> list[str]:
        return [self._names[self._in_reader[edge]] for edge in self._reading_edges(name) if self._in_port[edge] < 0]

    def consumer_nodes(self, name: str) -> list[str]:
        """Distinct nodes that read any output of `name` (data or control), in graph order."""
        names, readers = self._names, self._in_reader
        return list(dict.fromkeys([names[readers[edge]] for edge in self._reading_edges(name)]))

    def attr(self, name: str, key: str, default: Any = None) -> Any:
        """A node attribute as a Python value (s decoded, lists as lists, tensors as arrays)."""
        node = self.node(name)
        if key not in node.attr:
            return default
        return attr_value(node.attr[key])

    # ---- constants ----------------------------------------------------------------------
    def const_chain(self, name: str, *, through: Collection[str] = FORWARDING_OPS) -> list[str] | None:
        """`name` and the nodes down to the Const whose value it carries; None when it carries none.

        The one definition of "is a constant" (is_const, const_source and const_value ask it).
        Forwarding ops pass a constant on (a frozen ReadVariableOp is an Identity); a pass may
        widen `through`, e.g. with Reshape, whose other inputs (shape, axis) must then be
        constants themselves. The chain is what a fold of the value touches.
        """
        chain: list[str] = []
        while name in self.nodes and name not in chain:
            chain.append(name)
            op = self._op_names[self._ops[self._ids[name]]]
            if op == "Const":
                return chain
            inputs = self.inputs(name)
            if op not in through or not inputs or not all(self.is_const(ref.node) for ref in inputs[1:]):
                return None
            name = inputs[0].node
        return None

    def const_source(self, name: str, *, through: Collection[str] = FORWARDING_OPS) -> str | None:
        """The Const node behind `name` (see const_chain), or None."""
        chain = self.const_chain(name, through=through)
        return chain[-1] if chain else None

    def is_const(self, name: str, *, through: Collection[str] = FORWARDING_OPS) -> bool:
        """Whether `name` carries a Const's value (see const_chain)."""
        return self.const_chain(name, through=through) is not None

    def const_value(self, name: str) -> np.ndarray | None:
        """The value `name` forwards unchanged from a Const (a pass that reshapes computes its own), read-only.

        Passes ask for the same small constants many times (a BatchNorm's statistics by the check, the
        details, the explanation and the fold), so values up to CACHED_CONST_BYTES are decoded once per
        graph and shared; larger ones (weights) are decoded per call and not kept.
        """
        source = self.const_source(name)
        if source is None:
            return None
        value = self._const_values.get(source)
        if value is None:
            value = proto.tensor_to_ndarray(self.nodes[source].attr["value"].tensor)
            value.flags.writeable = False
            if value.nbytes <= CACHED_CONST_BYTES:
                self._const_values[source] = value
        return value

    # ---- model interface ----------------------------------------------------------------
    def placeholders(self) -> list[str]:
        """From the op codes, no node decoded: the window asks on the GUI thread when a model opens."""
        if "Placeholder" not in self._op_names:
            return []
        code = self._op_names.index("Placeholder")
        return [self._names[i] for i, op in enumerate(self._ops) if op == code]

    def outputs(self) -> list[str]:
        """Nodes whose data nothing reads: what a user of the frozen graph fetches."""
        return [
            n.name
            for n in self
            if n.op not in NON_OUTPUT_OPS and n.op != "Placeholder" and not self.consumers(n.name)
        ]

    def placeholder_spec(self, name: str) -> tuple[str, tuple[int | None, ...] | None]:
        """(dtype name, shape) of a Placeholder; shape None when the rank is unknown."""
        node = self.node(name)
        shape = proto.shape_tuple(node.attr["shape"].shape) if "shape" in node.attr else None
        return proto.dtype_name(node.attr["dtype"].type), shape

    # ---- shapes and dtypes ------------------------------------------------------------
    def output_shape(self, name: str, port: int = 0) -> tuple[int | None, ...] | None:
        """Static shape of an output, from `_output_shapes` or TensorFlow's shape inference.

        Inference imports TensorFlow once per graph; samples carry `_output_shapes` already, and
        then one node's are read from its attribute (no table of every shape of every graph a pass built).
        """
        if self._shapes is None and self.records_shapes:
            shapes = self.recorded_shapes(name) or []
            return shapes[port] if port < len(shapes) else None
        return self.ensure_shapes().get((name, port))

    def ensure_shapes(self) -> dict[tuple[str, int], tuple[int | None, ...] | None]:
        """Every output's shape, computed now: a worker calls this so the GUI thread never waits on TF."""
        if self._shapes is None:
            self._shapes = self._shapes_from_attrs()
            if self._shapes is None:
                from core.tfshapes import infer_tensors

                self._shapes = {k: shape for k, (_, shape) in infer_tensors(self).items()}
        return self._shapes

    def recorded_shapes(self, name: str) -> list[tuple[int | None, ...] | None] | None:
        """A node's output shapes as its `_output_shapes` records them; None when it records none
        (never asks TensorFlow, so a pass can carry shapes over to the nodes it creates for free)."""
        node = self.node(name)
        if "_output_shapes" not in node.attr:
            return None
        return [proto.shape_tuple(shape) for shape in node.attr["_output_shapes"].list.shape]

    @property
    def shapes_ready(self) -> bool:
        """True once output shapes are known without further work (see ensure_shapes)."""
        return self._shapes is not None or self.records_shapes

    @cached_property
    def records_shapes(self) -> bool:
        """True when every node carries `_output_shapes` (samples, frozen Keras and SavedModels do)."""
        return all("_output_shapes" in node.attr or node.op == "NoOp" for node in self)

    def output_dtype(self, name: str, port: int = 0) -> int:
        """DataType enum of an output, from the op's definition (no TensorFlow: core/opdefs.py)."""
        return self.node_outputs(name)[port].dtype

    def node_outputs(self, name: str) -> list[opdefs.Output]:
        """A node's output tensors in port order: output argument, index in it, dtype."""
        node = self.node(name)
        return opdefs.op_info(node.op, self.functions).node_outputs(node)

    def _shapes_from_attrs(self) -> dict[tuple[str, int], tuple[int | None, ...] | None] | None:
        if not self.records_shapes:
            return None
        shapes: dict[tuple[str, int], tuple[int | None, ...] | None] = {}
        for node in self:
            if "_output_shapes" not in node.attr:
                continue
            for port, shape in enumerate(node.attr["_output_shapes"].list.shape):
                shapes[(node.name, port)] = proto.shape_tuple(shape)
        return shapes

    # ---- structure ----------------------------------------------------------------------
    @cached_property
    def functions(self) -> Mapping[str, proto.FunctionDef]:
        """The library's functions by name (do not modify)."""
        return {f.signature.name: f for f in self.library.function}

    @cached_property
    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        for piece in self.serialized():
            digest.update(piece)
        return digest.hexdigest()

    def op_histogram(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for name in self.nodes:
            counts[self.op_type(name)] += 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def edge_count(self) -> int:
        return len(self._in_node)

    def topological_order(self) -> list[str]:
        """Nodes in topological_sort() order over data and control edges, minus TF1 while-loop back
        edges (out of LOOP_BACK_EDGE_OPS); GraphDef order among ready nodes. Computed once per graph."""
        return [self._names[i] for i in self._topological[0]]

    def topological_index(self) -> Mapping[str, int]:
        """Each node's position in topological_order() (nodes on or after a cycle have none)."""
        return _Positions(self._ids, self._topological[1])

    @cached_property
    def _topological(self) -> tuple[array, array]:
        """(node ids in topological_order(), each node's position in it or -1): topological_sort()'s
        Kahn order, on the arrays (the same order: among ready nodes the first in GraphDef order)."""
        count = len(self.nodes)
        loop = [self._op_names[code] in LOOP_BACK_EDGE_OPS for code in self._ops]
        waiting = [0] * count
        readers, out_edge, out_start = self._in_reader, self._out_edge, self._out_start
        for producer, reader in zip(self._in_node, readers):
            if producer < count and not loop[producer]:
                waiting[reader] += 1
        order = array("i")
        _kahn(waiting, lambda i: () if loop[i] else (readers[e] for e in out_edge[out_start[i]:out_start[i + 1]]),
              order)
        positions = array("i", [-1]) * count
        for position, i in enumerate(order):
            positions[i] = position
        return order, positions

    def _position(self, name: str) -> int:
        """`name`'s position in topological_order(), -1 when it has none."""
        i = self._ids.get(name)
        return -1 if i is None else self._topological[1][i]

    def reaches(self, sources: Iterable[str], targets: Collection[str]) -> tuple[str, str] | None:
        """Whether a path along data or control edges leads from one of `sources` into `targets`:
        (the first such source, the last node before the target it enters), else None.

        Sources are tried in order. Nodes after every target in topological order are not
        walked (only a loop back edge could lead back from there), and a node walked once is
        not walked again, so a call is linear in the graph. Back edges between walked nodes
        are followed: a group that would swallow part of a loop frame counts as a cycle.
        """
        position = self._position
        limit = max((position(t) for t in targets), default=-1)
        seen: set[str] = set()
        for source in sources:
            stack = [source]
            while stack:
                name = stack.pop()
                if name in seen or not 0 <= position(name) <= limit:
                    continue
                seen.add(name)
                for reader in self.consumer_nodes(name):
                    if reader in targets:
                        return source, name
                    stack.append(reader)
        return None

    def contraction_cycle(self, group: Iterable[str]) -> tuple[str, str, str] | None:
        """A path that leaves `group` and comes back into it, so that contracting the group into one
        node would close a cycle: (the member it leaves, its first and its last node outside).

        Members are tried in topological order, each one's readers in graph order; None when safe.
        """
        members = set(group)
        exits: dict[str, str] = {}  # first node outside -> the member it reads
        for member in sorted(members, key=self._position):
            for reader in self.consumer_nodes(member):
                if reader not in members:
                    exits.setdefault(reader, member)
        found = self.reaches(exits, members)
        if found is None:
            return None
        first, last = found
        return exits[first], first, last

    def to_networkx(self, *, control: bool = True) -> nx.MultiDiGraph:
        import networkx as nx

        g = nx.MultiDiGraph()
        for node in self:
            g.add_node(node.name, op=node.op)
        for edge, (producer, port) in enumerate(zip(self._in_node, self._in_port)):
            if port < 0 and not control:
                continue
            reader = self._in_reader[edge]
            g.add_edge(self._names[producer], self._names[reader], port=max(port, 0),
                       index=edge - self._in_start[reader], control=port < 0)
        return g

    def validate(self, duplicates: Iterable[str] = ()) -> None:
        """Raise one FuseLensError listing what makes this graph unusable."""
        problems: list[str] = []
        duplicates = sorted(set(duplicates))
        if duplicates:
            problems.append(f"duplicate node names: {', '.join(shown(d) for d in duplicates[:5])}")
        if not self.nodes:
            problems.append("the graph has no nodes")
        count = len(self.nodes)
        dangling = [
            f"{shown(self._names[reader])} -> {shown(TensorRef(self._names[producer], max(port, 0), port < 0))}"
            for producer, port, reader in zip(self._in_node, self._in_port, self._in_reader) if producer >= count
        ]
        if dangling:
            more = f" (+{len(dangling) - 3} more)" if len(dangling) > 3 else ""
            problems.append(f"inputs name missing nodes: {'; '.join(dangling[:3])}{more}")
        if not problems and len(self.topological_order()) != len(self.nodes):
            problems.append("the graph has a cycle outside a TensorFlow while loop")
        if problems:
            raise FuseLensError(f"{self.source}: " + "; ".join(problems))


def _node_records(payloads: Iterable[bytes]) -> Iterator[bytes]:
    """Each serialized NodeDef as a GraphDef node record (field 1): its head, then itself."""
    for payload in payloads:
        yield _record_head(1, len(payload))
        yield payload


def _record_head(field: int, length: int) -> bytes:
    """The head of a length-delimited protobuf record: its tag and its length (both varints)."""
    head = bytearray()
    for value in ((field << 3) | 2, length):
        while value > 0x7F:
            head.append(value & 0x7F | 0x80)
            value >>= 7
        head.append(value)
    return bytes(head)


class SerializedGraphDef:
    """A serialized GraphDef kept as its bytes: `node` decodes a NodeDef each time one is read, and only the
    rest (library, versions) is parsed. Parsed whole, a GraphDef takes ~7.5x its bytes (a 20k-node graph's
    2.5 MB took 18.7 MB); a graph read from a .pb needs little more than the .pb. A node over
    WRITTEN_NODE_BYTES (a weight) is parsed once instead: parsed, it costs about its bytes, and decoding it
    at each read copied the weights of a model made of them (ResNet50: +0.55 CPU s). It stands in for the
    GraphDef where a Graph reads one (`node`, `library`, `versions`)."""

    __slots__ = ("node", "rest")

    def __init__(self, data: bytes, starts: array, ends: array, rest: list[tuple[int, int]]):
        self.node = _NodeRecords.read(data, starts, ends)
        self.rest = proto.GraphDef.FromString(b"".join(data[start:end] for start, end in rest))

    @classmethod
    def read(cls, data: bytes) -> SerializedGraphDef | proto.GraphDef:
        """`data` kept as bytes; parsed whole instead when its top level is not the plain one walked here
        (which also raises DecodeError for corrupt data). A node record that does not decode raises
        DecodeError when it is read."""
        spans = _top_level_records(data)
        return proto.GraphDef.FromString(data) if spans is None else cls(data, *spans)

    def parsed(self) -> proto.GraphDef:
        """The GraphDef the bytes read held: its nodes in their order, then the rest merged in."""
        graph_def = proto.GraphDef()
        graph_def.node.extend(self.node)
        graph_def.MergeFrom(self.rest)
        return graph_def

    @property
    def library(self) -> proto.FunctionDefLibrary:
        return self.rest.library

    @property
    def versions(self) -> Any:
        return self.rest.versions

    def as_read(self) -> bytes:
        """A GraphDef of the same graph, its node records as they were read (none decoded), not the bytes
        `serialized()` writes: what pickling sends. Decoding and writing again every node made pickling the
        20k-node graph 53 ms instead of 13, DenseNet121 60 instead of 34 (each fusion the window asks of its
        TensorFlow helper sends the graph)."""
        return b"".join(chain(_node_records(self.node.payloads()), [self.rest.SerializeToString()]))

    def serialized(self) -> Iterator[bytes]:
        """What the parsed GraphDef serializes to (deterministically), in pieces: its nodes (field 1) come
        first, then the rest, fields in order and unknown ones last, as the parsed message writes them."""
        yield from _node_records(node.SerializeToString(deterministic=True) for node in self.node)
        yield self.rest.SerializeToString(deterministic=True)


def _top_level_records(data: bytes) -> tuple[array, array, list[tuple[int, int]]] | None:
    """A serialized GraphDef's NodeDef records (field 1) as the start and end of each payload, and the spans
    of its other records; None when its top level has anything but well-formed records of the four wire
    types a GraphDef writes (a node that is no length-delimited record, a group, a truncation)."""
    starts, ends = array("i"), array("i")
    rest: list[tuple[int, int]] = []
    size, i = len(data), 0
    try:
        while i < size:
            head = i
            key, i = _varint(data, i)
            wire = key & 7
            if wire == 2:
                length, i = _varint(data, i)
                end = i + length
                if end > size:
                    return None
                if key >> 3 == 1:
                    starts.append(i)
                    ends.append(end)
                else:
                    rest.append((head, end))
                i = end
                continue
            if key >> 3 in (0, 1):
                return None
            if wire == 0:
                _, i = _varint(data, i)
            elif wire in (1, 5):
                i += 8 if wire == 1 else 4
            else:
                return None
            if i > size:
                return None
            rest.append((head, i))
    except IndexError:  # a varint cut off by the end
        return None
    return starts, ends, rest


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """The varint at data[i:] and the position after it."""
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7


class _NodeRecords(Sequence[proto.NodeDef]):
    """A SerializedGraphDef's nodes, or an edit's: the NodeDef at a position is decoded from its bytes when
    asked for (a new message each time; ~0.6 us for a typical node), or read from `parsed` where its end is
    -1 (its start is then its position there)."""

    __slots__ = ("data", "ends", "parsed", "starts")

    def __init__(self, data: bytes, starts: array, ends: array, parsed: Sequence[proto.NodeDef] = ()):
        self.data, self.starts, self.ends, self.parsed = data, starts, ends, parsed

    @classmethod
    def read(cls, data: bytes, starts: array, ends: array) -> _NodeRecords:
        """The records at these spans of `data`, those over WRITTEN_NODE_BYTES parsed (into one message, so
        they share its arena) and the others copied out of `data`, which is not kept."""
        if all(end - start <= WRITTEN_NODE_BYTES for start, end in zip(starts, ends)):
            return cls(data, starts, ends)
        parsed = proto.GraphDef()
        kept_starts, kept_ends, pieces, size = array("i"), array("i"), [], 0
        for start, end in zip(starts, ends):
            if end - start > WRITTEN_NODE_BYTES:
                kept_starts.append(len(parsed.node))
                kept_ends.append(-1)
                parsed.node.add().MergeFromString(data[start:end])
            else:
                kept_starts.append(size)
                size += end - start
                kept_ends.append(size)
                pieces.append(data[start:end])
        return cls(b"".join(pieces), kept_starts, kept_ends, parsed.node)

    @classmethod
    def written(cls, nodes: Iterable[proto.NodeDef]) -> _NodeRecords:
        """These nodes serialized, one record each."""
        starts, ends, payloads, end = array("i"), array("i"), [], 0
        for node in nodes:
            payload = node.SerializeToString()
            starts.append(end)
            end += len(payload)
            ends.append(end)
            payloads.append(payload)
        return cls(b"".join(payloads), starts, ends)

    def __getitem__(self, position: int) -> proto.NodeDef:  # type: ignore[override]
        end = self.ends[position]
        if end < 0:
            return self.parsed[self.starts[position]]
        return proto.NodeDef.FromString(self.data[self.starts[position]:end])

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[proto.NodeDef]:
        data, parse, parsed = self.data, proto.NodeDef.FromString, self.parsed
        return (parsed[start] if end < 0 else parse(data[start:end]) for start, end in zip(self.starts, self.ends))

    def payloads(self) -> Iterator[bytes]:
        """Each node's record as held: the bytes read (not decoded), a parsed node written out."""
        data, parsed = self.data, self.parsed
        return (parsed[start].SerializeToString() if end < 0 else data[start:end]
                for start, end in zip(self.starts, self.ends))


class _Positions(Mapping[str, int]):
    """Graph.topological_index(): node name -> position, read from the graph's arrays (no dict per graph)."""

    def __init__(self, ids: dict[str, int], positions: array):
        self._ids, self._positions = ids, positions

    def __getitem__(self, name: str) -> int:
        position = self._positions[self._ids[name]]
        if position < 0:
            raise KeyError(name)
        return position

    def __iter__(self) -> Iterator[str]:
        names = list(self._ids)
        return (names[i] for i in sorted(range(len(names)), key=self._positions.__getitem__)
                if self._positions[i] >= 0)

    def __len__(self) -> int:
        return sum(1 for position in self._positions if position >= 0)


class _NodeTable(Mapping[str, proto.NodeDef]):
    """`Graph.nodes`: name -> NodeDef in GraphDef order, read from the containers that hold the nodes (a
    parsed GraphDef's repeated field, the records of a .pb read or of a pass's edit). A NodeDef's Python
    object is made when asked for and lives as long as its user keeps it: one held per node took ~160 B,
    3.2 MB on a 20k-node graph, for every graph a pass built too."""

    __slots__ = ("containers", "ids", "where")

    def __init__(self, ids: dict[str, int], containers: list[Any], where: array):
        # where[i]: node i's container (its index in `containers`) << 32 | its position in that container.
        self.ids, self.containers, self.where = ids, containers, where

    def __getitem__(self, name: str) -> proto.NodeDef:
        where = self.where[self.ids[name]]
        return self.containers[where >> 32][where & 0xFFFFFFFF]

    def get(self, name: str, default: Any = None) -> Any:
        i = self.ids.get(name)
        if i is None:
            return default
        where = self.where[i]
        return self.containers[where >> 32][where & 0xFFFFFFFF]

    def __contains__(self, name: object) -> bool:
        return name in self.ids

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def values(self) -> ValuesView[proto.NodeDef]:
        return _NodeValues(self)

    def items(self) -> ItemsView[str, proto.NodeDef]:
        return _NodeItems(self)


class _NodeValues(ValuesView):  # type: ignore[type-arg]
    """A _NodeTable's NodeDefs in order, read from the containers without a name lookup each."""

    def __iter__(self) -> Iterator[proto.NodeDef]:
        containers = self._mapping.containers
        return (containers[where >> 32][where & 0xFFFFFFFF] for where in self._mapping.where)


class _NodeItems(ItemsView):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[tuple[str, proto.NodeDef]]:
        return zip(self._mapping, self._mapping.values())


def _unpickle_graph(data: bytes, source: str, shapes: Any) -> Graph:
    graph = Graph.from_bytes(data, source=source, validate=False)
    graph._shapes = shapes
    return graph


def attr_value(value: proto.AttrValue) -> Any:
    """An AttrValue as plain Python: bytes decoded, lists as lists, tensors as numpy arrays."""
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    if kind in ("i", "f", "b", "type"):
        return getattr(value, kind)
    if kind == "shape":
        return proto.shape_tuple(value.shape)
    if kind == "tensor":
        return proto.tensor_to_ndarray(value.tensor)
    if kind == "func":
        return value.func.name
    if kind == "list":
        lst = value.list
        for field in ("s", "i", "f", "b", "type", "shape"):
            items = list(getattr(lst, field))
            if items:
                if field == "s":
                    return [x.decode("utf-8", "replace") for x in items]
                if field == "shape":
                    return [proto.shape_tuple(x) for x in items]
                return items
        return []
    return None


class GraphEditor:
    """Copy-on-write edits over a Graph; `build()` returns a new Graph, the source is untouched."""

    def __init__(self, graph: Graph):
        self.source = graph
        # The edit as changes over the source's nodes (no copy of its node table): the arena position of
        # each node copied or added, the source nodes whose place is vacated, the added ones in order.
        self._changed: dict[str, int] = {}
        self._gone: set[str] = set()
        self._appended: dict[str, None] = {}
        self._added_after: dict[str, list[str]] = defaultdict(list)
        # New and changed nodes are made in one message, so they share its arena: a NodeDef of its
        # own costs ~3x the memory (each gets an arena), and a pass on a big graph makes thousands.
        self._arena = proto.GraphDef()
        self._library: proto.FunctionDefLibrary | None = None  # the source's functions and the added ones
        self._function_names: set[str] | None = None
        # Readers gained in this edit (producer -> reader nodes), on top of the source graph's
        # consumer index; nodes handed out by mutable() since the last redirect are re-read first.
        self._new_readers: dict[str, dict[str, None]] = defaultdict(dict)
        self._unindexed: set[str] = set()

    def __contains__(self, name: object) -> bool:
        return name in self._appended or (name in self.source.nodes and name not in self._gone)

    def node(self, name: str) -> proto.NodeDef:
        """Read-only access (may be the source graph's NodeDef: do not modify)."""
        if name not in self:
            raise KeyError(name)
        position = self._changed.get(name)
        return self.source.nodes[name] if position is None else self._arena.node[position]

    def names(self) -> list[str]:
        """The edit's nodes: the source's still in place, in its order, then the added ones."""
        return [name for name in self.source.nodes if name not in self._gone] + list(self._appended)

    def mutable(self, name: str) -> proto.NodeDef:
        """A private copy of the node that this editor may change.

        Change it before the next redirect: redirect re-reads the inputs of nodes handed out since
        the previous one, so a copy kept and changed later may be missed.
        """
        self._unindexed.add(name)
        if name not in self._changed:
            copy = self._arena.node.add()
            copy.CopyFrom(self.node(name))
            self._changed[name] = len(self._arena.node) - 1
            return copy
        return self.node(name)

    def add(self, node: proto.NodeDef, *, after: str | None = None,
            shapes: Sequence[tuple[int | None, ...] | None] | None = None) -> str:
        """Add a copy of a new node (placed after `after` in the output order when given); change it
        later through mutable().

        `shapes`, its outputs' static shapes, are recorded as `_output_shapes`; a Const's are read
        from its value when the source graph records shapes. So a graph that records every shape
        stays one that does, and later passes and the window need no TensorFlow to know them.
        """
        name = sys.intern(node.name)  # the new graph's key, as the names it shares are
        if name in self:
            raise ValueError(f"node {name!r} already exists")
        stored = self._arena.node.add()
        stored.CopyFrom(node)
        if shapes is None and node.op == "Const" and self.source.records_shapes:
            shapes = [proto.shape_tuple(node.attr["value"].tensor.tensor_shape)]
        if shapes is not None and "_output_shapes" not in node.attr:
            stored.attr["_output_shapes"].list.shape.extend(proto.shape_proto(shape) for shape in shapes)
        self._changed[name] = len(self._arena.node) - 1
        self._appended[name] = None
        self._unindexed.add(name)
        self._added_after[after or ""].append(name)
        return name

    def remove(self, *names: str) -> None:
        for name in names:
            self._changed.pop(name, None)
            if name in self._appended:
                del self._appended[name]
            elif name in self.source.nodes:
                self._gone.add(name)

    def unique_name(self, base: str) -> str:
        if base not in self:
            return base
        i = 1
        while f"{base}_{i}" in self:
            i += 1
        return f"{base}_{i}"

    def set_input(self, name: str, index: int, ref: TensorRef | str) -> None:
        self.mutable(name).input[index] = str(ref)

    def redirect(self, old: TensorRef, new: TensorRef, *, exclude: Iterable[str] = ()) -> None:
        """Make every reader of tensor `old` read `new` instead; for port 0, nodes that wait on
        `old`'s node (control edges) wait on `new`'s node. Cost: the readers of `old`, not the graph."""
        data = {str(old), f"{old.node}:{old.port}"}
        control = f"^{old.node}" if old.port == 0 else None

        def rewrite(text: str) -> str | None:
            if text in data:
                return str(new)
            return f"^{new.node}" if text == control else None

        self._rewire(old.node, exclude, rewrite)

    def redirect_control(self, old: str, new: str, *, exclude: Iterable[str] = ()) -> None:
        """Make every node that waits on `old` (a control edge) wait on `new`; data readers are kept."""
        control = f"^{old}"
        self._rewire(old, exclude, lambda text: f"^{new}" if text == control else None)

    def _rewire(self, producer: str, exclude: Iterable[str], rewrite: Callable[[str], str | None]) -> None:
        """Apply `rewrite` (input string -> replacement, or None to keep) to the inputs of `producer`'s readers."""
        excluded = set(exclude)
        for name in self._readers(producer):
            if name in excluded:
                continue
            for i, text in enumerate(self.node(name).input):
                replaced = rewrite(text)
                if replaced is not None:
                    self.mutable(name).input[i] = replaced

    def _readers(self, producer: str) -> list[str]:
        """Nodes of this edit that may read `producer` (a superset: the caller checks the inputs)."""
        for name in self._unindexed:
            node = self.node(name) if name in self else None
            for text in node.input if node is not None else ():
                self._new_readers[TensorRef.parse(text).node][name] = None
        self._unindexed.clear()
        found = dict.fromkeys(self.source.consumer_nodes(producer))
        found.update(self._new_readers.get(producer, {}))
        return [name for name in found if name in self]

    def has_function(self, name: str) -> bool:
        """Whether the source graph's library or this edit has a function `name` (constant time, so
        a pass that adds a function per kernel stays linear)."""
        if self._function_names is None:
            library = self._library if self._library is not None else self.source.library
            self._function_names = {f.signature.name for f in library.function}
        return name in self._function_names

    def add_function(self, function: proto.FunctionDef) -> None:
        """Add a copy of `function` to the new graph's library."""
        if self._library is None:
            self._library = proto.FunctionDefLibrary()
            self._library.CopyFrom(self.source.library)
        self._library.function.add().CopyFrom(function)
        if self._function_names is not None:
            self._function_names.add(function.signature.name)

    def build(self, *, validate: bool = True) -> Graph:
        """The new graph: the source's NodeDefs that were not changed are shared, not copied (its node
        table points at them where they are), and the new ones are written out of this edit's arena."""
        library = self._library if self._library is not None else self.source.library
        table = self.source.nodes
        assert isinstance(table, _NodeTable)
        arena = len(table.containers) << 32
        ids: dict[str, int] = {}  # the new graph's, filled in its order (no second name-keyed dict)
        where = array("q")  # see _NodeTable

        def emit(name: str) -> None:
            if name not in ids and name in self:
                position = self._changed.get(name)
                ids[name] = len(where)
                where.append(table.where[table.ids[name]] if position is None else arena | position)
            for added in self._added_after.get(name, ()):
                emit(added)

        for name in table:
            emit(name)
        for name in self._added_after.get("", ()):
            emit(name)
        for name in self._appended:  # added after a node that was later removed
            emit(name)
        # The arena's nodes the new graph keeps are written out as NodeDef records (~1/7 of their parsed
        # size), the ones copied and then removed in this edit left out. A node over WRITTEN_NODE_BYTES (a
        # weight) stays in the arena: parsed, it costs about its bytes, and written out it would be held
        # twice while the graph is built (ResNet50's folded weights: +145 MB at fuse's peak). Only the
        # containers some node is in are kept: an arena or records none of whose nodes is left are freed.
        stored = self._arena.node
        kept = sorted(code & 0xFFFFFFFF for code in where if code & ~0xFFFFFFFF == arena)
        written = {position: i for i, position in enumerate(p for p in kept
                                                            if stored[p].ByteSize() <= WRITTEN_NODE_BYTES)}
        containers = [*table.containers, _NodeRecords.written(stored[p] for p in written), stored]
        for i, code in enumerate(where):
            if code & ~0xFFFFFFFF == arena:
                position = written.get(code & 0xFFFFFFFF)
                where[i] = code + (1 << 32) if position is None else arena | position
        used = sorted({code >> 32 for code in where})
        moved = {old << 32: new << 32 for new, old in enumerate(used)}
        for i, code in enumerate(where):
            where[i] = moved[code & ~0xFFFFFFFF] | (code & 0xFFFFFFFF)
        nodes = _NodeTable(ids, [containers[i] for i in used], where)
        return Graph._assembled(nodes, library, self.source.versions, self.source.source, validate)
