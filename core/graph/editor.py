"""Copy-on-write edits of a Graph (`Graph.editor()`): a pass changes an editor and `build()`s a new graph
that shares every node it did not change with its source."""

from __future__ import annotations

import sys
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from fuselens.core.graph import proto
from fuselens.core.graph.edges import TensorRef, input_edge
from fuselens.core.graph.tables import NodeTable
from fuselens.core.graph.wire import WRITTEN_NODE_BYTES, NodeRecords

if TYPE_CHECKING:
    from fuselens.core.graph.queries import Graph


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

    def edited(self) -> list[str]:
        """The nodes this edit copied (to change them) or added, still in it."""
        return list(self._changed)

    def removed(self) -> set[str]:
        """The source graph's nodes this edit removed (a name added again is in `edited` too)."""
        return set(self._gone)

    def in_edit_order(self, names: Iterable[str]) -> list[str]:
        """Those of `names` in this edit, in the order of `names()`, in time linear in len(names)."""
        wanted = {name for name in names if name in self}
        appended = [name for name in self._appended if name in wanted] if not wanted.isdisjoint(self._appended) else []
        return self.source.in_graph_order(wanted.difference(appended)) + appended

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
                self._new_readers[input_edge(text)[0]][name] = None
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
        assert isinstance(table, NodeTable)
        arena = len(table.containers) << 32
        ids: dict[str, int] = {}  # the new graph's, filled in its order (no second name-keyed dict)
        where = array("q")  # see NodeTable
        unchanged = array("i")  # per node, its id in the source graph when this edit left it as it was, else -1
        visited: set[str] = set()  # a node added after a node added after it (a model output's Identity that
        # took the name of the node its new producer was placed after) must not send this round in a circle

        def emit(first: str) -> None:
            """`first`, then what was added after it, depth first (a stack, not a recursion: a function that
            calls itself is a reference cycle, which kept the whole edit alive until a full collection)."""
            stack = [first]
            while stack:
                name = stack.pop()
                if name in visited:
                    continue
                visited.add(name)
                if name in self:
                    position = self._changed.get(name)
                    ids[name] = len(where)
                    where.append(table.where[table.ids[name]] if position is None else arena | position)
                    unchanged.append(table.ids[name] if position is None else -1)
                stack.extend(reversed(self._added_after.get(name, ())))

        # A source node the edit neither changed nor removed, and after which nothing was added, keeps its place
        # without a call of emit (most nodes of a big graph): its id in the source is its position in the table.
        changed, gone, added_after, source_where = self._changed, self._gone, self._added_after, table.where
        for i, name in enumerate(table):
            if name in changed or name in gone or name in added_after or name in visited:
                emit(name)
            else:
                ids[name] = len(where)
                where.append(source_where[i])
                unchanged.append(i)
        for name in self._added_after.get("", ()):
            emit(name)
        for name in self._appended:  # added after a node that was later removed
            emit(name)
        # The arena's nodes the new graph keeps are written out as NodeDef records (~1/7 of their parsed
        # size), the ones copied and then removed in this edit left out. A node over WRITTEN_NODE_BYTES (a
        # weight) stays in the arena: parsed, it costs about its bytes, and written out it would be held
        # twice while the graph is built (ResNet50's folded weights: +145 MB at fuse's peak). Only the
        # containers some node is in are kept: an arena or records none of whose nodes is left are freed.
        # The codes are rewritten as an array: a loop over every node's code took as long as the emitting.
        stored = self._arena.node
        codes = np.frombuffer(where, dtype=np.int64).copy()
        in_arena = np.flatnonzero(codes >> 32 == len(table.containers))
        kept = np.sort(codes[in_arena] & 0xFFFFFFFF).tolist()
        written = {position: i for i, position in enumerate(p for p in kept
                                                            if stored[p].ByteSize() <= WRITTEN_NODE_BYTES)}
        containers = [*table.containers, NodeRecords.written(stored[p] for p in written), stored]
        for i in in_arena.tolist():
            position = written.get(int(codes[i]) & 0xFFFFFFFF)
            codes[i] = codes[i] + (1 << 32) if position is None else arena | position
        used, container = np.unique(codes >> 32, return_inverse=True)
        codes = (container.astype(np.int64).reshape(-1) << 32) | (codes & 0xFFFFFFFF)
        nodes = NodeTable(ids, [containers[i] for i in used.tolist()], array("q", codes.tobytes()))
        return type(self.source)._assembled(nodes, library, self.source.versions, self.source.source, validate,
                                            origin=(self.source, unchanged))
