"""How each fused node executes on a backend, and the graph the child actually runs.

On CPU, oneDNN fuses a convolution or matmul with the bias add and activation right after it
(Grappler's remapper makes `_FusedConv2D` / `_MklNativeFusedConv2D`). An AutoFuse kernel that is
such an epilogue (`BiasAdd + Relu6` after a Conv2D) would, compiled by XLA, take those ops away
from the host's fusion and add a launch per block, so the fused graph runs slower than the
original. Such a kernel is therefore executed as its original ops: the call node is replaced by
its library function's body (the original nodes, under their own names) and an `IdentityN` named
after the call node, so readers, fetches and control edges of the call node are untouched, and
kernels named after inner nodes map back to the fused node through `_fused_nodes`.

Only the executed copy changes: the fused graph (its names, provenance, reports, the NPU bundle)
stays as the toolchain would have it. `execution_plan` needs only protobuf; `lower` imports
TensorFlow (the child has it) to turn the FunctionDef back into nodes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.graph import Graph, TensorRef, proto
from core.graph.nodes import make_node

# "off": every XLA fused node stays an XLA kernel on CPU too (benchmarks/bench_runtime.py measures both).
LOWERING_ENV = "FUSELENS_CPU_LOWERING"
XLA_KERNEL = "XLA kernel"
FUNCTION_CALL = "TensorFlow function call"
ON_NPU = "by the Ascend toolchain"
EPILOGUE = "as its original ops: {} epilogue on CPU"
# Producers oneDNN fuses with an epilogue on CPU, and the op that must start the epilogue.
HOST_FUSED_PRODUCERS = {"Conv2D": "conv", "DepthwiseConv2dNative": "conv", "MatMul": "matmul"}
EPILOGUE_HEADS = frozenset({"BiasAdd", "BiasAddV1", "Add", "AddV2"})


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
        elif not info.xla:
            plan[node.name] = FUNCTION_CALL
        else:
            lowering = backend == "cpu" and os.environ.get(LOWERING_ENV, "on") != "off"
            producer = _host_fused_producer(graph, node.name, functions.get(node.op)) if lowering else None
            plan[node.name] = EPILOGUE.format(producer) if producer else XLA_KERNEL
    return plan


def _host_fused_producer(graph: Graph, name: str, function: proto.FunctionDef | None) -> str | None:
    """'conv' / 'matmul' when the kernel's body starts with a bias add or add on the only reader of a
    convolution or matmul output, which oneDNN would fuse with it; else None."""
    if function is None:
        return None
    args = function.signature.input_arg
    for i, ref in enumerate(graph.inputs(name)):
        kind = HOST_FUSED_PRODUCERS.get(graph.op(ref.node))
        if kind is None or i >= len(args) or graph.consumer_nodes(ref.node) != [name]:
            continue
        heads = [n for n in function.node_def
                 if any(TensorRef.parse(text).node == args[i].name for text in n.input)]
        if heads and all(n.op in EPILOGUE_HEADS for n in heads):
            return kind
    return None


def lower(graph: Graph, plan: Mapping[str, str]) -> Graph:
    """The graph to execute: fused nodes planned as an EPILOGUE replaced by their original ops."""
    lowered = [name for name, how in plan.items() if how.startswith(EPILOGUE.split("{")[0]) and name in graph]
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
        results = [flat.get(function.ret[arg.name], function.ret[arg.name]) for arg in function.signature.output_arg]
        types = [arg.type or call.attr[arg.type_attr].type for arg in function.signature.output_arg]
        identity = make_node("IdentityN", name, results)
        identity.attr["T"].list.type.extend(types)
        identity.device = call.device
        editor.add(identity)
    return editor.build(validate=False)


def _outer(text: str, args: Mapping[str, str]) -> str:
    """A body input with the function's arguments replaced by the call node's inputs."""
    ref = TensorRef.parse(text)
    return args[ref.node] if ref.node in args and not ref.control else text
