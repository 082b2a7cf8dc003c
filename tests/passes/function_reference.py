"""The fused node's FunctionDef as TensorFlow writes it: the subgraph imported into a tf.Graph and
converted by `graph_to_function_def` (what passes/fused.py did before it built the function with
protobuf alone). Tests hold the two equal; this module imports TensorFlow."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from fuselens.core.formats.tfshapes import TensorInfo, infer_tensors
from fuselens.core.graph import Graph, TensorRef, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.tfimport import import_tensorflow

_inferred: weakref.WeakKeyDictionary[Graph, dict[tuple[str, int], TensorInfo]] = weakref.WeakKeyDictionary()


def tensorflow_dtype(graph: Graph, ref: TensorRef) -> int:
    """The dtype TensorFlow's own inference gives a tensor (the whole graph imported once per graph)."""
    if graph not in _inferred:
        _inferred[graph] = infer_tensors(graph)
    return _inferred[graph][(ref.node, ref.port)][0]


def tensorflow_function(graph: Graph, nodes: Sequence[str], inputs: Sequence[TensorRef],
                        outputs: Sequence[TensorRef], name: str) -> proto.FunctionDef:
    """passes.fused.build_function's contract, by TensorFlow's importer and graph_to_function_def."""
    tf = import_tensorflow()
    from tensorflow.python.framework import graph_to_function_def

    body = proto.GraphDef()
    placeholder_of = {}
    for i, ref in enumerate(inputs):
        arg = f"input_{i}"
        placeholder_of[str(ref)] = arg
        node = make_node("Placeholder", arg, attrs={"dtype": proto.AttrValue(type=tensorflow_dtype(graph, ref))})
        node.attr["shape"].shape.CopyFrom(proto.shape_proto(graph.output_shape(ref.node, ref.port)))
        body.node.append(node)
    inside = set(nodes)
    for name_ in nodes:
        copy = proto.NodeDef()
        copy.CopyFrom(graph.node(name_))
        del copy.input[:]
        for text in graph.node(name_).input:
            ref = TensorRef.parse(text)
            if ref.control:
                if ref.node in inside:
                    copy.input.append(text)
                continue
            copy.input.append(str(ref) if ref.node in inside else placeholder_of[str(ref)])
        copy.ClearField("device")
        body.node.append(copy)
    body.versions.CopyFrom(graph.graph_def.versions)
    body.library.CopyFrom(graph.graph_def.library)

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(body), name="")
    fdef = graph_to_function_def.graph_to_function_def(
        tf_graph, [tf_graph.get_operation_by_name(n) for n in nodes],
        [tf_graph.get_tensor_by_name(f"input_{i}:0") for i in range(len(inputs))],
        [tf_graph.get_tensor_by_name(f"{o.node}:{o.port}") for o in outputs],
        out_names=[f"output_{k}" for k in range(len(outputs))],
    )
    fdef.signature.name = name
    return proto.FunctionDef.FromString(fdef.SerializeToString())
