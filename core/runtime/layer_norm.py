"""The LayerNorm that oneDNN computes as one kernel on CPU, found and built with the graph's own epsilon.

TensorFlow's Grappler remapper (with oneDNN, the default on x86 CPUs) turns the "common norm" structure
that `tf.nn.moments` + `tf.nn.batch_normalization` write (Keras 2 / tf-keras LayerNormalization, BERT)

    mean1 = Mean(x, axis=-1, keep_dims)          mean0 = Mean(SquaredDifference(x, mean1))
    mul1 = Mul(Rsqrt(Add(mean0, eps)), gamma)    out = Add(Mul(x, mul1), Sub(beta, Mul(mul1, mean1)))

into one `_MklLayerNorm` node, but sets only its `T` attribute: the kernel then runs with the op's
default epsilon, 0.001, whatever the graph says (measured with TF 2.21: the partition graph's
`_MklLayerNorm` carries epsilon 0.001 for graph epsilons from 1e-12 to 1e-2; a BERT-style LayerNorm
with epsilon 1e-12 over values of standard deviation 0.01 is then off by 3.3). Running the original
graph as TensorFlow optimizes it would make the original wrong and any fused graph that keeps the
unfused ops "disagree" with it. So the executed copy of every graph gets these LayerNorms as
`_MklLayerNorm` nodes built here with the epsilon the graph holds; the remapper finds nothing left
to fuse. The matcher mirrors the remapper's pattern and checks (float32, the reduction over the last
axis of a rank-2 or rank-3 input, keep_dims, constant gamma, beta and epsilon, intermediates read
only inside the pattern; the last axis written as -1 does not count, as there), so the executed
graph has exactly the oneDNN kernels TensorFlow would have made, each with the right epsilon.

`find` works on any `NodeView`, so the same pattern tells whether an AutoFuse kernel's body is such
a LayerNorm's tail (the lowering then runs it as its original ops, which this module fuses).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fuselens.core.graph import FORWARDING_OPS, Graph, TensorRef, proto
from fuselens.core.graph.nodes import make_node

ONEDNN_OP = "_MklLayerNorm"
ADD_OPS = frozenset({"Add", "AddV2"})


class NodeView(Protocol):
    """What the matcher reads of a graph. Tensors are input strings (`node` or `node:port`); the
    nodes the pattern names have one output each, so a node's name is its tensor's."""

    def op(self, tensor: str) -> str | None: ...
    def data_inputs(self, name: str) -> list[str]: ...
    def const(self, tensor: str) -> np.ndarray | None: ...
    def attr(self, name: str, key: str) -> proto.AttrValue | None: ...


@dataclass(frozen=True)
class LayerNorm:
    """One matched LayerNorm: its output node, the tensors it reads and the nodes it replaces."""

    output: str
    x: str
    gamma: str
    beta: str
    epsilon: float
    axis_node: str  # the reduction indices of the mean of x (the last axis is checked against x's rank)
    inner: tuple[str, ...]  # replaced by the one node (the output keeps its name)


def find(view: NodeView, output: str) -> LayerNorm | None:
    """The LayerNorm whose last Add is `output`, or None when the structure differs anywhere."""
    if view.op(output) not in ADD_OPS:
        return None
    for mul0, sub0 in _operand_orders(view, output, "Mul", "Sub"):
        sub_in = view.data_inputs(sub0)
        if len(sub_in) != 2 or view.op(sub_in[1]) != "Mul":
            continue
        beta, mul2 = sub_in
        for x, mul1 in _operand_orders(view, mul0, None, "Mul"):
            for rsqrt, gamma in _operand_orders(view, mul1, "Rsqrt", None):
                found = _tail(view, x, mul1, rsqrt, mul2)
                if found is None or view.const(gamma) is None or view.const(beta) is None:
                    continue
                add, mean0, squared, mean1, epsilon, axis_node = found
                return LayerNorm(output, x, gamma, beta, epsilon, axis_node,
                                 (mul0, sub0, mul2, mul1, rsqrt, add, mean0, squared, mean1))
    return None


def _tail(view: NodeView, x: str, mul1: str, rsqrt: str, mul2: str
          ) -> tuple[str, str, str, str, float, str] | None:
    """Rsqrt(Add(Mean(SquaredDifference(x, mean1)), eps)) with mul2 = mul1 * mean1 and mean1 = Mean(x)."""
    add = _one_input(view, rsqrt)
    if add is None or view.op(add) not in ADD_OPS:
        return None
    for mean0, eps in _operand_orders(view, add, "Mean", None):
        epsilon = view.const(eps)
        squared = _first_input(view, mean0)
        if epsilon is None or epsilon.size != 1 or squared is None or view.op(squared) != "SquaredDifference":
            continue
        sq_in = view.data_inputs(squared)
        if len(sq_in) != 2 or sq_in[0] != x or view.op(sq_in[1]) != "Mean":
            continue
        mean1 = sq_in[1]
        mean1_in = view.data_inputs(mean1)
        keep = view.attr(mean1, "keep_dims")
        if len(mean1_in) != 2 or mean1_in[0] != x or keep is None or not keep.b:
            continue
        if sorted(view.data_inputs(mul2)) != sorted([mul1, mean1]):
            continue
        return add, mean0, squared, mean1, float(epsilon.reshape(-1)[0]), mean1_in[1]
    return None


def _operand_orders(view: NodeView, name: str, first: str | None, second: str | None
                    ) -> Iterable[tuple[str, str]]:
    """The two inputs of a commutative op, in each order whose op types fit (None: any op)."""
    inputs = view.data_inputs(name)
    if len(inputs) != 2:
        return
    for a, b in (inputs, inputs[::-1]):
        if (first is None or view.op(a) == first) and (second is None or view.op(b) == second):
            yield a, b


def _one_input(view: NodeView, name: str) -> str | None:
    inputs = view.data_inputs(name)
    return inputs[0] if len(inputs) == 1 else None


def _first_input(view: NodeView, name: str) -> str | None:
    inputs = view.data_inputs(name)
    return inputs[0] if inputs else None


class GraphView:
    """A Graph as the matcher reads it: forwarding ops (StopGradient, an Identity) skipped, as Grappler
    removes them before the remapper runs; a frozen weight's Identity(Const) stays the weight."""

    def __init__(self, graph: Graph):
        self.graph = graph

    def op(self, tensor: str) -> str | None:
        name = TensorRef.parse(tensor).node
        return self.graph.op(name) if name in self.graph.nodes else None

    def data_inputs(self, name: str) -> list[str]:
        return [str(self.forwarded(ref)) for ref in self.graph.inputs(name)]

    def forwarded(self, ref: TensorRef) -> TensorRef:
        """The tensor a chain of forwarding ops passes on to `ref`."""
        while ref.node in self.graph.nodes and self.graph.op(ref.node) in FORWARDING_OPS and \
                self.graph.const_chain(ref.node) is None and self.graph.inputs(ref.node):
            ref = self.graph.inputs(ref.node)[0]
        return ref

    def const(self, tensor: str) -> np.ndarray | None:
        name = TensorRef.parse(tensor).node
        return self.graph.const_value(name) if name in self.graph.nodes else None

    def attr(self, name: str, key: str) -> proto.AttrValue | None:
        node = self.graph.node(name)
        return node.attr.get(key)


def replace_with_onednn(graph: Graph, keep: Collection[str], rank: Callable[[str], int | None]
                        ) -> tuple[Graph, list[LayerNorm]]:
    """`graph` with each float32 LayerNorm the remapper would fuse built as one `_MklLayerNorm` with its
    own epsilon. `keep`: nodes that must stay (fetched or probed); `rank`: the rank of a tensor (asked
    only of a matched LayerNorm's input)."""
    view = GraphView(graph)
    found: list[tuple[LayerNorm, set[str]]] = []
    taken: set[str] = set()
    for name in graph.nodes:
        norm = find(view, name) if graph.op(name) in ADD_OPS else None
        removed = _removed(graph, norm, keep, rank) if norm is not None else None
        if removed is None or taken & removed:
            continue
        found.append((norm, removed))
        taken |= removed
    if not found:
        return graph, []
    editor = graph.editor()
    for norm, removed in found:
        output = graph.node(norm.output)
        fused = make_node(ONEDNN_OP, norm.output, [norm.x, norm.gamma, norm.beta])
        fused.attr["T"].type = proto.DT_FLOAT
        fused.attr["epsilon"].f = norm.epsilon
        fused.device = output.device
        fused.input.extend(text for text in output.input if text.startswith("^"))
        editor.remove(norm.output, *removed)
        editor.add(fused)
    return editor.build(validate=False), [norm for norm, _ in found]


def _removed(graph: Graph, norm: LayerNorm, keep: Collection[str], rank: Callable[[str], int | None]
             ) -> set[str] | None:
    """The nodes the one node replaces (the pattern's and the forwarding ops between them), or None
    where the remapper's own conditions fail: float32, a last-axis reduction of a rank 2-3 input,
    intermediates read only inside the pattern and neither fetched nor probed."""
    if graph.attr(norm.output, "T") != proto.DT_FLOAT:
        return None
    axis = graph.const_value(norm.axis_node)
    x_rank = rank(norm.x)
    if axis is None or axis.size != 1 or x_rank is None or not 2 <= x_rank <= 3 \
            or int(axis.reshape(-1)[0]) != x_rank - 1:
        return None
    removed = set(norm.inner)
    pending = list(norm.inner)
    while pending:  # a forwarding op the match passed through (the moments' StopGradient) goes with it
        for reader in graph.consumer_nodes(pending.pop()):
            readers = set(graph.consumer_nodes(reader))
            if reader not in removed and graph.op(reader) in FORWARDING_OPS and readers \
                    and readers <= set(norm.inner) | {norm.output}:
                removed.add(reader)
                pending.append(reader)
    inside = removed | {norm.output}
    if any(n in keep or not set(graph.consumer_nodes(n)) <= inside for n in removed):
        return None
    return removed
