"""The graph and its queries: an immutable-by-convention view of a TF GraphDef with producer/consumer indexes.

A pass never edits a NodeDef it received. It asks `graph.editor()` for a copy-on-write
`GraphEditor`, changes that, and `build()`s a new `Graph`; the original stays untouched
(`tests/core/test_graph.py` checks this by serialising before and after).
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import opdefs, proto
from fuselens.core.graph.edges import Consumer, TensorRef
from fuselens.core.graph.editor import GraphEditor
from fuselens.core.graph.fused import (
    FUSED_NODES_ATTR,
    FUSED_OP_TYPE_ATTR,
    FUSION_PASS_ATTR,
    XLA_MUST_COMPILE_ATTR,
    FusedInfo,
)
from fuselens.core.graph.order import kahn
from fuselens.core.graph.shapes import Carried, Derived, infer_static_shapes, tensorflow_adds_nothing
from fuselens.core.graph.tables import NodeTable, Positions
from fuselens.core.graph.wire import SerializedGraphDef, node_records, record_head
from fuselens.core.wording import shown

if TYPE_CHECKING:
    import networkx as nx

# Ops that only forward their input unchanged: a constant behind them is still a constant.
FORWARDING_OPS = frozenset({"Identity", "Snapshot", "StopGradient"})
# Ops whose back edges legitimately close a cycle (TF1 while loops).
LOOP_BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})
# Constants up to this size are decoded once per graph (Graph.const_value).
CACHED_CONST_BYTES = 16 << 10
_FUSION_PASS_KEY = FUSION_PASS_ATTR.encode()
# Nodes that are never a model output even when nothing consumes them.
NON_OUTPUT_OPS = frozenset({"NoOp", "Const", "Assert", "VarHandleOp", "SaveV2", "RestoreV2"})


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
        self._index(NodeTable(ids, [graph_def.node], where), graph_def.library, graph_def.versions, source,
                    validate, duplicates)

    @classmethod
    def _assembled(cls, nodes: NodeTable, library: proto.FunctionDefLibrary, versions: Any, source: str,
                   validate: bool, origin: tuple[Graph, array] | None = None) -> Graph:
        """A graph of these nodes (an editor's), with no GraphDef until one is asked for; `origin`: the graph
        the edit started from and, per node, its id there when the edit left it unchanged (else -1)."""
        graph = cls.__new__(cls)
        graph._graph_def = None
        graph._index(nodes, library, versions, source, validate, origin=origin)
        return graph

    def _index(self, nodes: NodeTable, library: proto.FunctionDefLibrary, versions: Any, source: str,
               validate: bool, duplicates: Iterable[str] = (), origin: tuple[Graph, array] | None = None) -> None:
        """The edge indexes as int32 arrays over node ids (a node's position in GraphDef order), not as
        Python objects per edge: a 20k-node graph's tuples of TensorRef and Consumer took ~5 MB, its
        arrays take ~0.3. The small objects (`TensorRef`, `Consumer`) are made when asked for.

        A node an edit left unchanged (`origin`) has its op and inputs read from the source graph's arrays,
        not decoded and parsed again (most of a pass's build on a big graph)."""
        self.library, self.versions, self.source = library, versions, source
        self.nodes: NodeTable = nodes
        # Node ids: positions in GraphDef order; names an input reads that are no node (a graph read
        # without validation) get the ids after them, so their readers are indexed too.
        self._names: list[str] = list(nodes)
        self._ids: dict[str, int] = nodes.ids
        self._missing: dict[str, int] = {}
        # Inputs in CSR form: node i's inputs are edges _in_start[i] .. _in_start[i + 1] - 1, each a
        # producer id and a port (-1: a control input).
        ids, missing, names = self._ids, self._missing, self._names

        def producer_id(name: str) -> int:
            producer = ids.get(name)
            if producer is None:
                producer = missing.get(name)
                if producer is None:
                    producer = missing[name] = len(names)
                    names.append(name)
            return producer

        # Each node's op as a code into the graph's list of op names: the passes ask for ops most (a third
        # of their node reads), and a node read from bytes is decoded at each read; 4 B a node. An edit's
        # graph keeps its source's codes (and perhaps an op name no node has any more).
        source_graph, source_ids = origin if origin is not None else (None, None)
        op_codes: dict[str, int] = {} if source_graph is None else {
            op: code for code, op in enumerate(source_graph._op_names)}
        source = (np.frombuffer(source_ids, dtype=np.int32) if source_ids is not None
                  else np.full(len(nodes), -1, dtype=np.int32))
        kept, edited = source >= 0, np.flatnonzero(source < 0)
        # The nodes an edit changed or added (every node of a graph just read) are decoded, their inputs parsed.
        edited_ops, edited_counts, edited_producers, edited_ports = array("i"), array("i"), array("i"), array("i")
        edited_record_shapes = True  # whether every node decoded here records its shapes (see records_shapes)
        for i in edited.tolist():
            node = nodes[names[i]]
            edited_record_shapes = edited_record_shapes and ("_output_shapes" in node.attr or node.op == "NoOp")
            code = op_codes.get(node.op)
            if code is None:
                code = op_codes[node.op] = len(op_codes)
            edited_ops.append(code)
            edited_counts.append(len(node.input))
            for text in node.input:
                producer = ids.get(text) if ":" not in text and text[:1] != "^" else None
                if producer is None:
                    ref = TensorRef.parse(text)
                    producer = producer_id(ref.node)
                    edited_ports.append(-1 if ref.control else ref.port)
                else:
                    edited_ports.append(0)
                edited_producers.append(producer)
        # A node the edit left unchanged has its op and inputs read from the source graph's arrays, as arrays.
        ops, counts = np.empty(len(nodes), dtype=np.int32), np.zeros(len(nodes), dtype=np.int32)
        ops[edited] = np.frombuffer(edited_ops, dtype=np.int32)
        counts[edited] = np.frombuffer(edited_counts, dtype=np.int32)
        kept_ids = np.flatnonzero(kept)
        if source_graph is not None:
            source_starts = np.frombuffer(source_graph._in_start, dtype=np.int32)
            ops[kept_ids] = np.frombuffer(source_graph._ops, dtype=np.int32)[source[kept_ids]]
            counts[kept_ids] = source_starts[source[kept_ids] + 1] - source_starts[source[kept_ids]]
        starts = np.zeros(len(nodes) + 1, dtype=np.int32)
        np.cumsum(counts, out=starts[1:])
        producers, ports = np.empty(starts[-1], dtype=np.int32), np.empty(starts[-1], dtype=np.int32)
        kept_edge = np.repeat(kept, counts)
        edited_edges = np.flatnonzero(~kept_edge)
        producers[edited_edges] = np.frombuffer(edited_producers, dtype=np.int32)
        ports[edited_edges] = np.frombuffer(edited_ports, dtype=np.int32)
        if source_graph is not None and kept_ids.size:
            edges = np.flatnonzero(kept_edge)  # each one's edge in the source: its node's start there, same offset
            source_edges = edges + np.repeat(np.where(kept, source_starts[np.maximum(source, 0)] - starts[:-1], 0),
                                             counts)[edges]
            source_producers = np.frombuffer(source_graph._in_node, dtype=np.int32)[source_edges]
            new_id = np.full(len(source_graph._names), -1, dtype=np.int32)  # source id -> id here
            new_id[source[kept_ids]] = kept_ids
            for s in np.unique(source_producers[new_id[source_producers] < 0]).tolist():  # changed, gone, missing
                new_id[s] = producer_id(source_graph._names[s])
            producers[edges] = new_id[source_producers]
            ports[edges] = np.frombuffer(source_graph._in_port, dtype=np.int32)[source_edges]
        if missing:  # numbered in the order of their first reading edge, as when the graph is indexed afresh
            count = len(nodes)
            reading = np.flatnonzero(producers >= count)
            read, first = np.unique(producers[reading], return_index=True)
            in_order = read[np.argsort(first)]
            renumbered = np.arange(len(names), dtype=np.int32)
            renumbered[in_order] = np.arange(count, len(names), dtype=np.int32)
            producers[reading] = renumbered[producers[reading]]
            names[count:] = [names[i] for i in in_order.tolist()]
            missing.clear()
            missing.update((name, count + k) for k, name in enumerate(names[count:]))
        self._ops = array("i", ops.tobytes())
        self._in_start, self._in_node, self._in_port = (array("i", a.tobytes()) for a in (starts, producers, ports))
        if source_graph is not None and source_graph.__dict__.get("records_shapes"):
            # Every node the edit left unchanged records its shapes: no node decoded again to ask.
            self.records_shapes = edited_record_shapes
        self._op_names = list(op_codes)
        # Readers in CSR form: producer p's reading edges are _out_edge[_out_start[p] .. _out_start[p + 1] - 1],
        # its data edges first, each kind in reader order then slot order (the order the inputs are listed).
        control = ports < 0
        order = np.argsort(producers.astype(np.int64) * 2 + control, kind="stable").astype(np.int32)
        self._out_edge = array("i", order.tobytes())
        self._out_start = array("i", [0])
        self._out_start.frombytes(np.cumsum(np.bincount(producers, minlength=len(names)), dtype=np.int32).tobytes())
        self._in_reader = array("i", np.repeat(np.arange(len(self.nodes), dtype=np.int32), counts).tobytes())
        self._shapes: dict[tuple[str, int], tuple[int | None, ...] | None] | None = None
        self._shapes_carried = None if source_graph is None else source_graph._carried_to(source)
        # The source graph's decoded constants whose Const the edit left unchanged: each pass's graph would
        # otherwise decode again the BatchNorm statistics the previous pass read.
        self._const_values: dict[str, np.ndarray] = {} if source_graph is None else {
            name: value for name, value in source_graph._const_values.items()
            if (i := ids.get(name)) is not None and source[i] >= 0}
        self._const_chains: dict[frozenset[str], dict[str, tuple[str, ...] | None]] = {}
        self._fused_infos: dict[str, FusedInfo | None] = {}
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
        yield from node_records(node.SerializeToString(deterministic=True) for node in self.nodes.values())
        # Then library (field 2) and versions (field 4), each set (so written even when empty) as
        # `graph_def` sets them. The library goes a record at a time too (its functions, gradients and
        # registered gradients, fields 1-3, in that order): serialized whole, a big graph's AutoFuse
        # functions were two more copies of it in memory at once (the encoder's buffer and the bytes).
        records = [(field, item) for field, items in ((1, self.library.function), (2, self.library.gradient),
                                                      (3, self.library.registered_gradients)) for item in items]
        yield record_head(2, sum(len(record_head(field, item.ByteSize())) + item.ByteSize()
                                  for field, item in records))
        for field, item in records:
            payload = item.SerializeToString(deterministic=True)
            yield record_head(field, len(payload))
            yield payload
        payload = self.versions.SerializeToString(deterministic=True)
        yield record_head(4, len(payload))
        yield payload

    def adopt_shapes(self, shapes: dict[tuple[str, int], tuple[int | None, ...] | None]) -> None:
        """Take output shapes computed elsewhere (TensorFlow's, core.formats.tfshapes.ensure_shapes)."""
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

    def with_op(self, ops: Collection[str]) -> list[str]:
        """The nodes whose op is one of `ops`, in GraphDef order, read from the op codes: a pass looking for
        its anchors decoded every node of a graph read from bytes to read its op."""
        return self.node_names(np.flatnonzero(self._op_mask(ops)).tolist())

    def _op_mask(self, ops: Collection[str]) -> np.ndarray:
        """Per node id, whether its op is one of `ops`, from the op codes."""
        return np.isin(np.frombuffer(self._ops, dtype=np.int32),
                       [code for code, op in enumerate(self._op_names) if op in ops])

    def node_id(self, name: str) -> int | None:
        """A node's position in GraphDef order (its index in the graph's arrays); None for no node."""
        return self._ids.get(name)

    def node_names(self, ids: Iterable[int]) -> list[str]:
        """The names of these node ids."""
        names = self._names
        return [names[i] for i in ids]

    def data_read_counts(self, skipped_readers: Iterable[str] = ()) -> np.ndarray:
        """Per node id (and each missing input's id after them), how many data inputs read it, of the nodes
        not in `skipped_readers`; from the edge arrays, no node decoded."""
        producers = np.frombuffer(self._in_node, dtype=np.int32)
        data = np.frombuffer(self._in_port, dtype=np.int32) >= 0
        skipped = [i for i in map(self._ids.get, skipped_readers) if i is not None]
        if skipped:
            kept = np.ones(len(self.nodes), dtype=bool)
            kept[skipped] = False
            data &= kept[np.frombuffer(self._in_reader, dtype=np.int32)]
        return np.bincount(producers[data], minlength=len(self._names))

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

    @cached_property
    def _maybe_fused(self) -> frozenset[str]:
        """Every fused call node, and perhaps a few others: found without decoding a node kept as its bytes."""
        return self.nodes.holding(_FUSION_PASS_KEY)

    def fused_info(self, name: str) -> FusedInfo | None:
        """The fusion record of a fused call node (None for any other node); read once per node and kept: the
        layout asks it 3-4 times of each drawn node (72,736 asks of the fused 100k graph's 18k), each decoding
        a fused one."""
        if name not in self._maybe_fused:  # the layout asks of every node, and most are not fused
            return None
        try:
            return self._fused_infos[name]
        except KeyError:
            info = self._fused_infos[name] = self._read_fused_info(name)
            return info

    def _read_fused_info(self, name: str) -> FusedInfo | None:
        attrs = self.node(name).attr
        if FUSION_PASS_ATTR not in attrs:
            return None
        return FusedInfo(pass_id=attrs[FUSION_PASS_ATTR].s.decode(),
                         op_type=attrs[FUSED_OP_TYPE_ATTR].s.decode() if FUSED_OP_TYPE_ATTR in attrs else "",
                         nodes=tuple(s.decode() for s in attrs[FUSED_NODES_ATTR].list.s)
                         if FUSED_NODES_ATTR in attrs else (),
                         function=self.node(name).op,
                         xla=XLA_MUST_COMPILE_ATTR in attrs and attrs[XLA_MUST_COMPILE_ATTR].b)

    def _input_ports(self, name: str) -> zip:
        """Every input of `name` as (producer id, port; negative for a control input), in slot order, from the
        edge arrays (a zip, not a generator: these are asked for every node, several times a pass)."""
        i = self._ids[name]
        start, end = self._in_start[i], self._in_start[i + 1]
        return zip(self._in_node[start:end], self._in_port[start:end])

    def inputs(self, name: str) -> list[TensorRef]:
        """Data inputs only, in slot order."""
        names = self._names
        return [TensorRef(names[producer], port) for producer, port in self._input_ports(name) if port >= 0]

    def input_edges(self, name: str) -> list[tuple[str, bool]]:
        """Every input as (producer, whether a control input), in slot order, from the edge arrays."""
        names = self._names
        return [(names[producer], port < 0) for producer, port in self._input_ports(name)]

    def control_inputs(self, name: str) -> list[str]:
        names = self._names
        return [names[producer] for producer, port in self._input_ports(name) if port < 0]

    def input_keys(self, name: str) -> list[tuple[str, int]]:
        """The data inputs as (producer, port), in slot order: the keys of a table of output shapes, with no
        TensorRef made (shape derivation asks it of every node; the TensorRefs were a fifth of its time)."""
        names = self._names
        return [(names[producer], port) for producer, port in self._input_ports(name) if port >= 0]

    def input_nodes(self, name: str) -> list[str]:
        """The nodes read by the data inputs, in slot order: pattern matching and the BatchNorm checks ask for
        names only, and a TensorRef made per input was most of `inputs`' cost."""
        names = self._names
        return [names[producer] for producer, port in self._input_ports(name) if port >= 0]

    def input_node(self, name: str, index: int) -> str:
        return self.input_nodes(name)[index]

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
        # Read from the edge arrays, no TensorRef made, and kept per graph (for a frozenset `through`, as the
        # passes give): they ask this half a million times on 100k nodes, most for the same few nodes.
        # One dict per `through`, keyed by name: no key object per node, and a tuple of names is no object the
        # collector keeps tracking.
        kept = self._const_chains.setdefault(through, {}) if isinstance(through, frozenset) else None
        if kept is not None and name in kept:
            known = kept[name]
            return None if known is None else list(known)
        chain = self._chain_to_const(name, through)
        if kept is not None:
            kept[name] = None if chain is None else tuple(chain)
        return chain

    def _chain_to_const(self, name: str, through: Collection[str]) -> list[str] | None:
        """const_chain, computed."""
        chain: list[str] = []
        ids, names, ports, producers, starts = self._ids, self._names, self._in_port, self._in_node, self._in_start
        while (i := ids.get(name)) is not None and name not in chain:
            chain.append(name)
            op = self._op_names[self._ops[i]]
            if op == "Const":
                return chain
            if op not in through:
                return None
            data = [producers[edge] for edge in range(starts[i], starts[i + 1]) if ports[edge] >= 0]
            if not data or not all(self.is_const(names[producer]) for producer in data[1:]):
                return None
            name = names[data[0]]
        return None

    @cached_property
    def const_mask(self) -> np.ndarray:
        """Per node id, whether the node carries a Const's value (is_const with the default forwarding ops),
        read from the edge arrays for every node at once (do not modify): the drawing folds every constant of
        the graph, and asking is_const node by node took 0.7 s on a 100k-node graph."""
        count = len(self.nodes)
        const = np.zeros(len(self._names), dtype=bool)  # a missing input's id carries nothing
        const[:count] = self._op_mask({"Const"})
        readers, producers = self.data_edges()
        forwarding = self._op_mask(FORWARDING_OPS) & (np.bincount(readers, minlength=count) > 0)
        while True:  # one round per link of the longest forwarding chain
            reads_other = np.bincount(readers[~const[producers]], minlength=count) > 0
            new = forwarding & ~reads_other & ~const[:count]
            if not new.any():
                return const[:count]
            const[:count] |= new

    def data_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(reader id, producer id) of every data edge, by reader then slot, from the edge arrays (do not
        modify); a producer id past the nodes is a missing input's (`node_names` names it)."""
        data = np.frombuffer(self._in_port, dtype=np.int32) >= 0
        return np.frombuffer(self._in_reader, dtype=np.int32)[data], np.frombuffer(self._in_node, dtype=np.int32)[data]

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
        graph and shared, also with the graphs later passes build where the Const is unchanged; larger ones
        (weights) are decoded per call and not kept.
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
        return self.with_op(("Placeholder",))

    def outputs(self) -> list[str]:
        """Nodes whose data nothing reads: what a user of the frozen graph fetches (an op with no data
        output, such as `Abort` or a `PrintV2`, is not fetched: it runs when a fetched node waits on it)."""
        return [
            n.name
            for n in self
            if n.op not in NON_OUTPUT_OPS and n.op != "Placeholder" and not self.consumers(n.name)
            and not self._has_no_output_arg(n.op)
        ]

    def _has_no_output_arg(self, op: str) -> bool:
        return op not in self.functions and opdefs.in_table(op) and not opdefs.op_info(op, self.functions).outputs

    def placeholder_spec(self, name: str) -> tuple[str, tuple[int | None, ...] | None]:
        """(dtype name, shape) of a Placeholder; shape None when the rank is unknown."""
        node = self.node(name)
        shape = proto.shape_tuple(node.attr["shape"].shape) if "shape" in node.attr else None
        return proto.dtype_name(node.attr["dtype"].type), shape

    # ---- shapes and dtypes ------------------------------------------------------------
    def output_shape(self, name: str, port: int = 0) -> tuple[int | None, ...] | None:
        """Static shape of an output: as `_output_shapes` records it, as the TensorFlow helper inferred it
        (adopt_shapes), else as core.graph.shapes derives it from Placeholder shapes and Const values; None
        where none of them knows it. Never imports TensorFlow.

        Samples carry `_output_shapes`, and then one node's are read from its attribute (no table of every
        shape of every graph a pass built); a bare .pb's are derived once per graph, when first asked, and a
        graph a pass built keeps those of the graph it came from where nothing changed (infer_static_shapes).
        """
        if self._shapes is None and self.records_shapes:
            shapes = self.recorded_shapes(name) or []
            return shapes[port] if port < len(shapes) else None
        return (self._shapes if self._shapes is not None else self._derived.shapes).get((name, port))

    def known_shapes(self) -> dict[tuple[str, int], tuple[int | None, ...] | None] | None:
        """Every output's shape when known without further work (recorded or adopted), else None (see
        core.formats.tfshapes.ensure_shapes, which asks TensorFlow)."""
        if self._shapes is None:
            self._shapes = self._shapes_from_attrs()
        return self._shapes

    @cached_property
    def _derived(self) -> Derived:
        derived = infer_static_shapes(self, self._shapes_carried)
        self._shapes_carried = None  # what the graph it came from derived is let go
        return derived

    def _carried_to(self, source: np.ndarray) -> Carried | None:
        """What a graph an edit of this one built may keep of the shapes derived here (or for the graph this
        one came from, when none were asked of it); `source[i]`: the id here of its node i when the edit left
        that node unchanged, else -1."""
        derived = self.__dict__.get("_derived")
        if derived is not None:
            return Carried(derived, source >= 0)
        carried = self._shapes_carried
        if carried is None:
            return None
        return Carried(carried.derived, (source >= 0) & carried.same[np.maximum(source, 0)])

    def adopt_static_shapes(self) -> bool:
        """Whether every output shape is known without TensorFlow (shapes_ready): a bare .pb's, derived here,
        become its shapes when TensorFlow's inference could add nothing to them, so its edge labels need no
        TensorFlow helper (one import and two graphs pickled across, then both panes laid out again)."""
        if not self.shapes_ready and tensorflow_adds_nothing(self, self._derived.shapes):
            self._shapes = {key: shape for key, shape in self._derived.shapes.items() if shape is not None}
        return self.shapes_ready

    def recorded_shapes(self, name: str) -> list[tuple[int | None, ...] | None] | None:
        """A node's output shapes as its `_output_shapes` records them; None when it records none
        (never asks TensorFlow, so a pass can carry shapes over to the nodes it creates for free)."""
        node = self.node(name)
        if "_output_shapes" not in node.attr:
            return None
        return [proto.shape_tuple(shape) for shape in node.attr["_output_shapes"].list.shape]

    @property
    def shapes_ready(self) -> bool:
        """True once every output shape is known without further work (see known_shapes)."""
        return self._shapes is not None or self.records_shapes

    @cached_property
    def records_shapes(self) -> bool:
        """True when every node carries `_output_shapes` (samples, frozen Keras and SavedModels do)."""
        return all("_output_shapes" in node.attr or node.op == "NoOp" for node in self)

    def output_dtype(self, name: str, port: int = 0) -> int:
        """DataType enum of an output, from the op's definition (no TensorFlow: core/graph/opdefs.py)."""
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

    def wiring(self) -> bytes:
        """Every node's name and op and every edge (producer, port, in input order), as bytes read from the
        graph's arrays without decoding a node: what a drawing of the graph depends on besides its attributes
        (core.layout.cache.structure_key; decoding every node to hash it took 0.33 s on a 100k-node graph)."""
        ops = self._op_names
        return b"\n".join(["\0".join(self._names).encode(), "\0".join([ops[code] for code in self._ops]).encode(),
                           bytes(self._in_start), bytes(self._in_node), bytes(self._in_port)])

    def op_types(self) -> set[str]:
        """The ops the graph's nodes have, from the op codes: no node decoded (the window asks before each
        fusion; reading every node's op took 80 ms on a 100k-node graph)."""
        ops = self._op_names
        return {ops[code] for code in np.unique(np.frombuffer(self._ops, dtype=np.int32)).tolist()}

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

    def topological_ids(self) -> array:
        """The node ids of topological_order(), in its order."""
        return self._topological[0]

    def topological_index(self) -> Mapping[str, int]:
        """Each node's position in topological_order() (nodes on or after a cycle have none)."""
        return Positions(self._ids, self._topological[1])

    @cached_property
    def _topological(self) -> tuple[array, array]:
        """(node ids in topological_order(), each node's position in it or -1): topological_sort()'s
        Kahn order, on the arrays (the same order: among ready nodes the first in GraphDef order)."""
        count = len(self.nodes)
        loop = [self._op_names[code] in LOOP_BACK_EDGE_OPS for code in self._ops]
        # The counts, each producer's readers (one list, sliced per node) and the positions come from the edge
        # arrays: Python loops over every edge, and a generator over each node's edges, were most of the time.
        producers = np.frombuffer(self._in_node, dtype=np.int32)
        readers = np.frombuffer(self._in_reader, dtype=np.int32)
        counted = producers < count
        counted[counted] = ~np.array(loop, dtype=bool)[producers[counted]]
        waiting = np.bincount(readers[counted], minlength=count).tolist()
        successors = readers[np.frombuffer(self._out_edge, dtype=np.int32)].tolist()
        out_start = self._out_start
        order = array("i")
        kahn(waiting, lambda i: () if loop[i] else successors[out_start[i]:out_start[i + 1]], order)
        positions = np.full(count, -1, dtype=np.int32)
        positions[np.frombuffer(order, dtype=np.int32)] = np.arange(len(order), dtype=np.int32)
        return order, array("i", positions.tobytes())

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
        if not problems and len(self.topological_ids()) != len(self.nodes):
            problems.append("the graph has a cycle outside a TensorFlow while loop")
        if problems:
            raise FuseLensError(f"{self.source}: " + "; ".join(problems))


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
