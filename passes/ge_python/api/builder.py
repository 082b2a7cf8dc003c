"""Pattern and replacement graphs as a pass builds them: `GraphBuilder`, `TensorHolder`, the op functions,
`Pattern` (a built graph with its captured tensors) and the lazy `inputs` of expression-style hooks.

A built graph here is data, not a GE graph: nodes with their op type, their input tensors, the attributes
the pass set and, for constants, the value. The matcher (passes/ge_python/matcher.py) walks it against a
FuseLens graph; the splice (passes/ge_python/splice.py) writes a replacement into one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuselens.passes.ge_python.api.missing import missing_attribute, unsupported
from fuselens.passes.ge_python.optable import OPS, OpSpec


@dataclass(eq=False)
class PatternNode:
    """A node of a built graph: a graph input (`Data`, with its index), a constant or an op."""

    op_type: str
    label: str  # unique in its graph: the op type and a count (MatMulV2_0)
    inputs: list[TensorHolder] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)  # the ones the pass set
    value: np.ndarray | None = None  # a constant's value
    index: int = -1  # a graph input's index
    spec: OpSpec | None = None

    @property
    def is_data(self) -> bool:
        return self.op_type == "Data"

    @property
    def is_const(self) -> bool:
        return self.op_type == "Const"

    # what ge.graph.Node offers, for a pass that reads its own pattern's nodes
    @property
    def name(self) -> str:
        return self.label

    @property
    def type(self) -> str:
        return self.op_type

    def ir_attrs(self) -> dict[str, Any]:
        """Every IR attribute: the ones set, the others at their defaults (GE recovers them so before
        comparing attributes)."""
        defaults = dict(self.spec.attrs) if self.spec else {}
        return {**defaults, **self.attrs}

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


class TensorHolder:
    """One output of a node of a graph being built; `+ - * /` make Add, Sub, Mul and Div nodes."""

    def __init__(self, builder: GraphBuilder, node: PatternNode, index: int = 0):
        self._builder, self.node, self.index = builder, node, index

    @property
    def name(self) -> str:
        return self.node.label

    def get_owner_builder(self) -> GraphBuilder:
        return self._builder

    def set_data_type(self, data_type: Any) -> TensorHolder:
        self.node.attrs.setdefault("_data_type", data_type)
        return self

    def set_format(self, data_format: Any) -> TensorHolder:
        self.node.attrs.setdefault("_format", data_format)
        return self

    def set_shape(self, shape: Sequence[int]) -> TensorHolder:
        self.node.attrs.setdefault("_shape", list(shape))
        return self

    def _binary(self, op_type: str, other: Any, *, reverse: bool = False) -> TensorHolder:
        other_tensor = self._builder.tensor_like(other)
        left, right = (other_tensor, self) if reverse else (self, other_tensor)
        return self._builder.add_op(OPS[op_type], [left, right], {})

    def add(self, other: Any) -> TensorHolder:
        return self._binary("Add", other)

    def sub(self, other: Any) -> TensorHolder:
        return self._binary("Sub", other)

    def mul(self, other: Any) -> TensorHolder:
        return self._binary("Mul", other)

    def div(self, other: Any) -> TensorHolder:
        return self._binary("Div", other)

    __add__, __sub__, __mul__, __truediv__ = add, sub, mul, div
    __radd__, __rmul__ = add, mul  # as GE's: `0 + x` is Add(x, 0)

    def __rsub__(self, other: Any) -> TensorHolder:
        return self._binary("Sub", other, reverse=True)

    def __rtruediv__(self, other: Any) -> TensorHolder:
        return self._binary("Div", other, reverse=True)

    def __repr__(self) -> str:
        return f"<TensorHolder {self.node.label}:{self.index}>"

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


class BuiltGraph:
    """`ge.graph.Graph` as a pass builds it: its nodes and its outputs, in order."""

    def __init__(self, name: str, nodes: list[PatternNode], outputs: list[TensorHolder]):
        self._name, self.nodes, self.outputs = name, nodes, outputs

    @property
    def name(self) -> str:
        return self._name

    def get_all_nodes(self) -> list[PatternNode]:
        return list(self.nodes)

    get_direct_nodes = get_all_nodes

    def inputs(self) -> dict[int, PatternNode]:
        return {node.index: node for node in self.nodes if node.is_data}

    def __repr__(self) -> str:
        return f"<Graph {self._name}: {', '.join(n.label for n in self.nodes)}>"

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


class GraphBuilder:
    """Builds a pattern or a replacement graph; `build_and_reset(outputs)` hands it over."""

    def __init__(self, name: str | None = None):
        self._name = name or "graph"
        self._reset()

    def _reset(self) -> None:
        self._nodes: list[PatternNode] = []
        self._counts: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self._name

    def _node(self, op_type: str, **fields: Any) -> PatternNode:
        count = self._counts.get(op_type, 0)
        self._counts[op_type] = count + 1
        node = PatternNode(op_type, f"{op_type}_{count}", **fields)
        self._nodes.append(node)
        return node

    def create_input(self, index: int, name: str | None = None, *args: Any, **kwargs: Any) -> TensorHolder:
        if not isinstance(index, int) or index < 0:
            raise ValueError("create_input needs a non-negative integer index")
        for node in self._nodes:
            if node.is_data and node.index == index:
                raise ValueError(f"graph input {index} already exists")
        node = self._node("Data", index=index)
        if name:
            node.label = name
        return TensorHolder(self, node)

    def create_inputs(self, num: int, start_index: int = 0) -> list[TensorHolder]:
        return [self.create_input(start_index + i) for i in range(num)]

    def _const(self, value: Any, dtype: Any, shape: Sequence[int] | None = None) -> TensorHolder:
        array = np.asarray(value, dtype=dtype)
        if shape is not None:
            array = array.reshape(shape)
        return TensorHolder(self, self._node("Const", value=array))

    def create_const_float(self, value: Any, shape: Sequence[int] | None = None) -> TensorHolder:
        return self._const(value, np.float32, shape)

    def create_const_int64(self, value: Any, shape: Sequence[int] | None = None) -> TensorHolder:
        return self._const(value, np.int64, shape)

    def create_const_int32(self, value: Any, shape: Sequence[int] | None = None) -> TensorHolder:
        return self._const(value, np.int32, shape)

    def create_const_uint64(self, value: Any, shape: Sequence[int] | None = None) -> TensorHolder:
        return self._const(value, np.uint64, shape)

    def create_const_uint32(self, value: Any, shape: Sequence[int] | None = None) -> TensorHolder:
        return self._const(value, np.uint32, shape)

    def create_scalar_float(self, value: float) -> TensorHolder:
        return self._const(value, np.float32)

    def create_scalar_int64(self, value: int) -> TensorHolder:
        return self._const(value, np.int64)

    def create_scalar_int32(self, value: int) -> TensorHolder:
        return self._const(value, np.int32)

    def create_scalar_uint64(self, value: int) -> TensorHolder:
        return self._const(value, np.uint64)

    def create_scalar_uint32(self, value: int) -> TensorHolder:
        return self._const(value, np.uint32)

    def create_vector_int64(self, value: Sequence[int]) -> TensorHolder:
        return self._const(list(value), np.int64)

    def tensor_like(self, value: Any) -> TensorHolder:
        """A TensorHolder, or a number or nested list as a constant of this graph (int -> int64, float ->
        float32, a list with a float in it -> float32), as GE converts them."""
        if isinstance(value, TensorHolder):
            if value._builder is not self:
                raise ValueError(f"{value.name} belongs to graph {value._builder.name}, not {self.name}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple)):
            raise TypeError(f"expected a TensorHolder, a number or a nested list, not {type(value).__name__}")
        flat = np.asarray(value).ravel().tolist()
        is_float = isinstance(value, float) or any(isinstance(v, float) for v in flat)
        return self._const(value, np.float32 if is_float else np.int64)

    def add_op(self, spec: OpSpec, inputs: Sequence[TensorHolder | None], attrs: dict[str, Any]) -> TensorHolder:
        present = [tensor for tensor in inputs if tensor is not None]
        node = self._node(spec.ge_type, inputs=present, attrs=dict(attrs), spec=spec)
        if spec.outputs > 1:
            unsupported(f"ge.es op {spec.ge_type} with {spec.outputs} outputs")
        return TensorHolder(self, node)

    def build_and_reset(self, outputs: Sequence[TensorHolder] | None = None) -> BuiltGraph:
        outputs = list(outputs or [])
        for tensor in outputs:
            if not isinstance(tensor, TensorHolder):
                raise TypeError(f"build_and_reset takes TensorHolders, not {type(tensor).__name__}")
        if not outputs:
            read = {id(t.node) for node in self._nodes for t in node.inputs}
            outputs = [TensorHolder(self, n) for n in self._nodes if id(n) not in read and not n.is_data]
        graph = BuiltGraph(self._name, self._nodes, outputs)
        self._reset()
        return graph

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


def op_function(spec: OpSpec) -> Any:
    """The `ge.es` function that adds one `spec` node: positional arguments are the IR inputs in order
    (None leaves an optional one out; a number or a nested list becomes a constant), keywords set
    attributes or name inputs."""

    def build(*args: Any, **kwargs: Any) -> TensorHolder:
        if len(args) > len(spec.inputs):
            raise TypeError(f"{spec.ge_type} takes {len(spec.inputs)} inputs ({', '.join(spec.inputs)}), "
                            f"got {len(args)}")
        given = dict(zip(spec.inputs, args))
        attrs: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key in spec.inputs:
                given[key] = value
            elif key in spec.attrs:
                attrs[key] = value
            else:
                raise TypeError(f"{spec.ge_type} has no input or attribute {key!r} (inputs: "
                                f"{', '.join(spec.inputs)}; attributes: {', '.join(spec.attrs) or 'none'})")
        holders = [v for v in given.values() if isinstance(v, TensorHolder)]
        if not holders:
            raise TypeError(f"{spec.ge_type} needs at least one TensorHolder input")
        builder = holders[0].get_owner_builder()
        inputs: list[TensorHolder | None] = []
        for name in spec.inputs:
            value = given.get(name)
            if value is None:
                if name not in spec.optional:
                    raise TypeError(f"{spec.ge_type} needs its input {name!r}")
                inputs.append(None)
            else:
                inputs.append(builder.tensor_like(value))
        return builder.add_op(spec, inputs, attrs)

    build.__name__ = build.__qualname__ = spec.ge_type
    build.__doc__ = f"{spec.ge_type}({', '.join(spec.inputs)}); attributes: {', '.join(spec.attrs) or 'none'}"
    return build


@dataclass(frozen=True)
class NodeIo:
    """One node output: the node and the output index (a captured tensor of a match)."""

    node: Any
    index: int = 0


class Pattern:
    """A pattern graph and the tensors captured for the hooks, in `capture_tensor` order."""

    def __init__(self, graph: BuiltGraph):
        if not isinstance(graph, BuiltGraph):
            raise TypeError("create_pattern takes the Graph of GraphBuilder.build_and_reset")
        self.graph = graph
        self.captured: list[tuple[PatternNode, int]] = []

    def capture_tensor(self, source: Any, index: int | None = None) -> Pattern:
        if isinstance(source, TensorHolder):
            node, port = source.node, source.index if index is None else index
        elif isinstance(source, NodeIo):
            node, port = source.node, source.index
        elif isinstance(source, PatternNode):
            node, port = source, index or 0
        else:
            raise TypeError(f"capture_tensor takes a TensorHolder, a Node or a NodeIo, not {type(source).__name__}")
        if node not in self.graph.nodes:
            raise ValueError(f"{node.label} is not a node of pattern {self.graph.name}")
        self.captured.append((node, port))
        return self

    def get_captured_tensors(self) -> list[NodeIo]:
        return [NodeIo(node, port) for node, port in self.captured]

    def is_valid(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


def create_pattern(graph: BuiltGraph) -> Pattern:
    return Pattern(graph)


def create_replacement(graph: BuiltGraph) -> BuiltGraph:
    if not isinstance(graph, BuiltGraph):
        raise TypeError("a replacement must be the Graph of GraphBuilder.build_and_reset")
    return graph


class PatternInputs:
    """The `inputs` of a `@pattern` method or an expression-style replacement: `inputs[i]` makes graph
    input i (and the ones before it) on first use, `inputs[:N]` the first N; iteration is refused, since
    the count is not known."""

    def __init__(self, builder: GraphBuilder):
        self._builder = builder
        self._made: dict[int, TensorHolder] = {}

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            if index.step not in (None, 1):
                raise ValueError("inputs[...] takes a slice with step 1")
            if index.stop is None:
                raise ValueError("inputs[...] needs a stop index, e.g. inputs[:3]")
            start = index.start or 0
            if start < 0 or index.stop < start:
                raise ValueError("inputs[a:b] needs 0 <= a <= b")
            return [self[i] for i in range(start, index.stop)]
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError("inputs[...] takes an integer or a slice")
        if index < 0:
            raise ValueError("inputs[...] takes a non-negative index")
        for i in range(len(self._made), index + 1):
            self._made[i] = self._builder.create_input(i)
        return self._made[index]

    def __iter__(self) -> Any:
        raise TypeError("inputs cannot be iterated (the count is not known); use inputs[:N]")

    def made(self) -> list[TensorHolder]:
        return [self._made[i] for i in sorted(self._made)]


def op_functions(module: str) -> Any:
    """The `__getattr__` of ge.es.math / nn / all: an op of FuseLens's table as its op function, any other
    name reported as not provided."""
    made: dict[str, Any] = {}

    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if name not in OPS:
            unsupported(f"{module}.{name}", f"FuseLens's op table has {', '.join(sorted(OPS))}")
        return made.setdefault(name, op_function(OPS[name]))

    return __getattr__
