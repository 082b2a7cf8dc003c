"""How each fused node executes on a backend, and the graph the child actually runs.

On CPU, oneDNN fuses a convolution or matmul with the bias add and activation right after it
(Grappler's remapper makes `_FusedConv2D` / `_MklNativeFusedConv2D`), and a LayerNorm's moments and
tail into one `_MklLayerNorm`. An AutoFuse kernel that is such an epilogue (`BiasAdd + Relu6` after
a Conv2D) or such a LayerNorm tail (`Add_Rsqrt_Mul_Mul_Mul_Sub_Add` after the moments) would,
compiled by XLA, take those ops away from the host's fusion and add launches, so the fused graph
runs slower than the original (a tf-keras BERT: 0.59x). Such a kernel is therefore executed as its
original ops: the call node is replaced by its library function's body (the original nodes, under
their own names) and an `IdentityN` named after the call node, so readers, fetches and control
edges of the call node are untouched, and kernels named after inner nodes map back to the fused
node through `_fused_nodes`.

The LayerNorms themselves (in the original graph and in the lowered fused one) are built as
`_MklLayerNorm` with the graph's epsilon before TensorFlow sees them: the remapper would build them
with epsilon 0.001 (see core.runtime.layer_norm), which made a BERT's original outputs wrong.

An AutoFuse kernel of bias adds, additions and multiplications on a contraction's output (a BERT's
`Add_Mul` after the query Einsum, `BiasAdd_Mul_Neg_Mul` of its GELU and `BiasAdd_Add` of a residual
after a Tensordot's MatMul) runs as its original ops on CPU too, whoever else reads the contraction
(oneDNN need not fuse them): such kernels compiled by XLA were measured slower on CPU than
TensorFlow's own kernels for the same ops, on the same inputs (the tf-keras BERT, quiet 2-core
machine: 264 us against 168 us for the GELU part, 125 us against 44 us for bias plus residual), and
the fused BERT ran at 0.89x the original's speed with them. The rule is by kind, not by a
measurement in each run: a kernel that reads anything else, or computes anything else (an `exp`, a
`tanh`, where XLA's single pass wins, benchmarks/bench_autofuse.py), stays an XLA kernel.

Only the executed copy changes: the fused graph (its names, provenance, reports, the NPU bundle)
stays as the toolchain would have it. `execution_plan` needs only protobuf; `lower` imports
TensorFlow (the child has it) to turn the FunctionDef back into nodes.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping

import numpy as np

from fuselens.core.graph import FORWARDING_OPS, Graph, TensorRef, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.runtime import layer_norm

# "off": every XLA fused node stays an XLA kernel on CPU too (benchmarks/bench_runtime.py measures both).
LOWERING_ENV = "FUSELENS_CPU_LOWERING"
XLA_KERNEL = "XLA kernel"
FUNCTION_CALL = "TensorFlow function call"
ON_NPU = "by the Ascend toolchain"
ORIGINAL_OPS = "as its original ops: "
EPILOGUE = ORIGINAL_OPS + "{} epilogue on CPU"
LAYER_NORM = ORIGINAL_OPS + "a LayerNorm, as TensorFlow runs one on CPU"
CONTRACTION_TAIL = ORIGINAL_OPS + "adds and multiplies after {}, which XLA's CPU code runs slower"
# Producers oneDNN fuses with an epilogue on CPU, and the op that must start the epilogue.
HOST_FUSED_PRODUCERS = {"Conv2D": "conv", "DepthwiseConv2dNative": "conv", "MatMul": "matmul"}
EPILOGUE_HEADS = frozenset({"BiasAdd", "BiasAddV1", "Add", "AddV2"})
# Contractions whose output a CONTRACTION_TAIL kernel reads (directly or through a Reshape: Tensordot).
CONTRACTIONS = {"MatMul": "a matmul", "BatchMatMul": "a batch matmul", "BatchMatMulV2": "a batch matmul",
                "BatchMatMulV3": "a batch matmul", "Einsum": "an einsum"}
# What such a kernel may compute (and its scalar constants).
TAIL_OPS = EPILOGUE_HEADS | {"Const", "Sub", "Mul", "Neg"}


def execution_plan(graph: Graph, backend: str) -> dict[str, str]:
    """Fused node -> how it executes on `backend` (XLA_KERNEL, FUNCTION_CALL, ON_NPU or an EPILOGUE)."""
    functions = graph.functions
    plan: dict[str, str] = {}
    for node in graph:
        info = graph.fused_info(node.name)
        if info is None:
            continue
        if backend == "npu":
            plan[node.name] = ON_NPU
        else:
            plan[node.name] = XLA_KERNEL if info.xla else FUNCTION_CALL
            function = functions.get(node.op)
            if backend != "cpu" or os.environ.get(LOWERING_ENV, "on") == "off" or function is None:
                continue
            producer = _host_fused_producer(graph, node.name, function) if info.xla else None
            contraction = _contraction_tail(graph, node.name, function) if info.xla else None
            if producer:
                plan[node.name] = EPILOGUE.format(producer)
            elif _holds_layer_norm(graph, node.name, function):
                plan[node.name] = LAYER_NORM
            elif contraction:
                plan[node.name] = CONTRACTION_TAIL.format(contraction)
    return plan


def _host_fused_producer(graph: Graph, name: str, function: proto.FunctionDef) -> str | None:
    """'conv' / 'matmul' when the kernel's body starts with a bias add or add on the only reader of a
    convolution or matmul output, which oneDNN would fuse with it; else None."""
    args = function.signature.input_arg
    for i, ref in enumerate(graph.inputs(name)):
        kind = HOST_FUSED_PRODUCERS.get(graph.op(ref.node))
        if kind is None or i >= len(args) or graph.consumer_nodes(ref.node) != [name]:
            continue
        if _read_only_by_epilogue_heads(function, args[i].name):
            return kind
    return None


def _read_only_by_epilogue_heads(function: proto.FunctionDef, arg: str) -> bool:
    """Whether the body's ops that read its argument `arg` are all bias adds or adds (and there is one)."""
    heads = [n for n in function.node_def if any(TensorRef.parse(text).node == arg for text in n.input)]
    return bool(heads) and all(n.op in EPILOGUE_HEADS for n in heads)


def _contraction_tail(graph: Graph, name: str, function: proto.FunctionDef) -> str | None:
    """What contraction the kernel's body starts on, when that body is only TAIL_OPS and its ops that
    read the contraction's output (directly or through a Reshape) are all bias adds or adds; else None."""
    if any(n.op not in TAIL_OPS for n in function.node_def):
        return None
    args = function.signature.input_arg
    for i, ref in enumerate(graph.inputs(name)):
        producer = ref.node
        if graph.op(producer) == "Reshape":
            producer = graph.inputs(producer)[0].node
        kind = CONTRACTIONS.get(graph.op(producer))
        if kind is None or i >= len(args):
            continue
        if _read_only_by_epilogue_heads(function, args[i].name):
            return kind
    return None


def _holds_layer_norm(graph: Graph, name: str, function: proto.FunctionDef) -> bool:
    """Whether the fused node's body ends a LayerNorm that oneDNN computes as one kernel: an AutoFuse
    LayerNorm tail (the moments outside), or a scope-fused LayerNorm whole (on CPU its function call
    would run the same ops, one by one)."""
    view = _KernelView(graph, name, function)
    return any(n.op in layer_norm.ADD_OPS and layer_norm.find(view, n.name) for n in function.node_def)


class _KernelView:
    """A fused node's function body seen in place: its arguments are the call node's inputs, so a
    pattern can start inside the body and continue into the outer graph (layer_norm.NodeView)."""

    def __init__(self, graph: Graph, call: str, function: proto.FunctionDef):
        self.outer = layer_norm.GraphView(graph)
        self.body = {n.name: n for n in function.node_def}
        self.args = {arg.name: str(self.outer.forwarded(ref))
                     for arg, ref in zip(function.signature.input_arg, graph.inputs(call))}

    def _ref(self, text: str) -> str:
        """A body input (`arg`, `node:out:0`) as a tensor of this view."""
        if text in self.args:
            return self.args[text]
        node, _, rest = text.partition(":")
        index = rest.rpartition(":")[2]
        return node if index in ("", "0") else f"{node}:{index}"

    def op(self, tensor: str) -> str | None:
        node = self.body.get(tensor)
        return node.op if node is not None else self.outer.op(tensor)

    def data_inputs(self, name: str) -> list[str]:
        node = self.body.get(name)
        if node is None:
            return self.outer.data_inputs(name)
        return [self._forwarded(self._ref(text)) for text in node.input if not text.startswith("^")]

    def _forwarded(self, tensor: str) -> str:
        """Through the body's forwarding ops (a weight's Identity, the moments' StopGradient)."""
        while (node := self.body.get(tensor)) is not None and node.op in FORWARDING_OPS and node.input:
            tensor = self._ref(node.input[0])
        return tensor

    def const(self, tensor: str) -> np.ndarray | None:
        node = self.body.get(tensor)
        if node is None:
            return self.outer.const(tensor)
        return proto.tensor_to_ndarray(node.attr["value"].tensor) if node.op == "Const" else None

    def attr(self, name: str, key: str) -> proto.AttrValue | None:
        node = self.body.get(name)
        if node is None:
            return self.outer.attr(name, key)
        return node.attr.get(key)


def contraction_tail_note(graph: Graph, plan: Mapping[str, str], executed: Graph) -> str | None:
    """The run's note on the CONTRACTION_TAIL kernels `executed` runs as their original ops (None: none)."""
    functions = graph.functions
    ops = {name: sum(n.op != "Const" for n in functions[graph.op(name)].node_def) for name, how in plan.items()
           if how.startswith(CONTRACTION_TAIL.partition("{")[0]) and executed.op(name) == "IdentityN"}
    if not ops:
        return None
    named = ", ".join(f"{name} ({count} ops)" for name, count in list(ops.items())[:3])
    more = f" and {len(ops) - 3} more" if len(ops) > 3 else ""
    return (f"{len(ops)} AutoFuse kernel{'s' * (len(ops) > 1)} ran as {'their' if len(ops) > 1 else 'its'} "
            f"{sum(ops.values())} original ops on CPU (adds and multiplies after a contraction, which XLA's CPU "
            f"code runs slower): {named}{more}")


def lower(graph: Graph, plan: Mapping[str, str], keep: Collection[str] = ()) -> Graph:
    """The graph to execute: fused nodes planned as their original ops replaced by them (the
    LayerNorms among those ops are then built by layer_norm.replace_with_onednn). The IdentityN
    named after a call node passes on its outputs up to the last one read (all when the node is
    in `keep`, fetched or probed), so outputs nobody reads (a LayerNorm's mean) keep no node alive."""
    lowered = [name for name, how in plan.items() if how.startswith(ORIGINAL_OPS) and name in graph]
    if not lowered:
        return graph
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

    functions = graph.functions
    editor = graph.editor()
    for name in lowered:
        call = graph.node(name)
        function = functions[call.op]
        body, flat = function_def_to_graph_def(proto.to_tf(function))
        args = {arg.name: text for arg, text in zip(function.signature.input_arg, call.input)}
        if any(n.name not in args and n.name in editor for n in body.node):
            continue  # an inner name is taken in the outer graph: keep the XLA kernel
        controls = [text for text in call.input if text.startswith("^")]
        editor.remove(name)
        for inner in body.node:
            if inner.name in args:
                continue
            node = proto.NodeDef.FromString(inner.SerializeToString())
            node.input[:] = [_outer(text, args) for text in inner.input] + controls
            node.device = call.device
            editor.add(node)
        outputs = list(function.signature.output_arg)
        if name not in keep:
            outputs = outputs[:1 + max((p for p in range(len(outputs)) if graph.consumers(name, p)), default=0)]
        results = [flat.get(function.ret[arg.name], function.ret[arg.name]) for arg in outputs]
        types = [arg.type or call.attr[arg.type_attr].type for arg in outputs]
        identity = make_node("IdentityN", name, results)
        identity.attr["T"].list.type.extend(types)
        identity.device = call.device
        editor.add(identity)
    return editor.build(validate=False)


def _outer(text: str, args: Mapping[str, str]) -> str:
    """A body input with the function's arguments replaced by the call node's inputs."""
    ref = TensorRef.parse(text)
    return args[ref.node] if ref.node in args and not ref.control else text
