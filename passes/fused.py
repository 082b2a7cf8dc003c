"""The fused node of docs/architecture.md: one node whose op is a library function holding the original subgraph.

Scope fusion and AutoFuse have no native TF op for their result, so the fused node calls a
FunctionDef whose body is exactly the nodes it replaced: TensorFlow can still run the fused
graph, and with `_XlaMustCompile=true` on the call node XLA compiles the body into one kernel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fuselens.core.graph import Graph, GraphEditor, TensorRef, opdefs, proto
from fuselens.core.graph.fused import FUSED_NODES_ATTR, FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR, XLA_MUST_COMPILE_ATTR
from fuselens.core.graph.nodes import make_node


def function_name(node_name: str) -> str:
    """A FunctionDef name from a node name (function names allow [A-Za-z0-9_.-] only)."""
    return "fused_" + re.sub(r"[^A-Za-z0-9_.-]", "_", node_name)


def build_function(graph: Graph, nodes: Sequence[str], inputs: Sequence[TensorRef],
                   outputs: Sequence[TensorRef], name: str) -> proto.FunctionDef:
    """A FunctionDef whose body is `nodes`; argument i is `inputs[i]`, result k is `outputs[k]`.

    Built with protobuf alone, as TensorFlow's `graph_to_function_def` writes it after importing the
    subgraph (tests/passes/test_fused_function.py holds the two equal): arguments `input_i` and results
    `output_k` typed from the op definitions, body inputs as `node:output_arg:index`, control inputs
    from inside kept, devices cleared, default attributes filled in, stateful if any body op is.
    """
    function = proto.FunctionDef()
    signature = function.signature
    signature.name = name
    tensor_name: dict[str, str] = {}  # input text inside the subgraph -> its name in the function
    for i, ref in enumerate(inputs):
        signature.input_arg.add(name=f"input_{i}", type=graph.output_dtype(ref.node, ref.port))
        tensor_name[str(ref)] = f"input_{i}"
    inside = set(nodes)
    infos = {node_name: opdefs.op_info(graph.op(node_name), graph.functions) for node_name in nodes}
    decoded = {node_name: graph.node(node_name) for node_name in nodes}  # each body node decoded once, not twice
    for node_name, info in infos.items():
        for port, out in enumerate(info.node_outputs(decoded[node_name])):
            tensor_name[str(TensorRef(node_name, port))] = f"{node_name}:{out.arg}:{out.index}"
        signature.is_stateful |= info.stateful
    for node_name, info in infos.items():
        node = decoded[node_name]
        body = function.node_def.add()
        body.CopyFrom(node)
        body.ClearField("device")
        if "_output_shapes" in body.attr:  # TensorFlow's importer drops it too
            del body.attr["_output_shapes"]
        del body.input[:]
        for text in node.input:
            ref = TensorRef.parse(text)
            if ref.control:
                if ref.node in inside:
                    body.input.append(str(ref))
                continue
            if str(ref) not in tensor_name:
                raise ValueError(f"{node_name} reads {ref}, which is neither a function input nor in the body")
            body.input.append(tensor_name[str(ref)])
        for key, value in (info.defaults or {}).items():
            if key not in body.attr:
                body.attr[key].CopyFrom(value)
    for k, ref in enumerate(outputs):
        signature.output_arg.add(name=f"output_{k}", type=graph.output_dtype(ref.node, ref.port))
        function.ret[f"output_{k}"] = tensor_name[str(ref)]
    return function


def fuse_subgraph(
    graph: Graph,
    editor: GraphEditor,
    *,
    name: str,
    nodes: Sequence[str],
    inputs: Sequence[TensorRef],
    outputs: Sequence[TensorRef],
    pass_id: str,
    op_type: str,
    xla: bool = False,
    attrs: Mapping[str, Any] | None = None,
) -> str:
    """Replace `nodes` by one call node; consumers of `outputs[k]` read the call node's output k.

    Returns the call node's name (`name`, made unique). Control inputs that reach the subgraph
    from outside move to the call node.
    """
    ordered = graph.in_graph_order(nodes)
    call_name = editor.unique_name(name)
    fn_name = function_name(call_name)
    suffix = 1
    while editor.has_function(fn_name):
        fn_name = f"{function_name(call_name)}_{suffix}"
        suffix += 1
    editor.add_function(build_function(graph, ordered, inputs, outputs, fn_name))

    inside = set(ordered)
    controls = sorted({c for n in ordered for c in graph.control_inputs(n) if c not in inside})
    call = make_node(fn_name, call_name, [str(r) for r in inputs] + [f"^{c}" for c in controls], attrs)
    call.attr[FUSION_PASS_ATTR].s = pass_id.encode()
    call.attr[FUSED_OP_TYPE_ATTR].s = op_type.encode()
    call.attr[FUSED_NODES_ATTR].list.s.extend(n.encode() for n in ordered)
    if xla:
        call.attr[XLA_MUST_COMPILE_ATTR].b = True
    shapes = [graph.output_shape(o.node, o.port) for o in outputs]
    call.attr["_output_shapes"].list.shape.extend(proto.shape_proto(s) for s in shapes)

    editor.remove(*ordered)
    editor.add(call, after=ordered[-1])
    for k, out in enumerate(outputs):
        editor.redirect(out, TensorRef(call_name, k), exclude=[call_name])
    for node in ordered:  # control edges on any fused node now wait for the call
        editor.redirect_control(node, call_name)
    return call_name
