"""Static shapes by TensorFlow's own shape inference (imports TensorFlow)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import proto

if TYPE_CHECKING:
    from core.graph import Graph


def infer_shapes(graph: Graph) -> dict[tuple[str, int], tuple[int | None, ...] | None]:
    """(node, port) -> shape for every output TensorFlow can type; unknown dims are None."""
    import tensorflow as tf

    shapes: dict[tuple[str, int], tuple[int | None, ...] | None] = {}
    with tf.Graph().as_default() as tf_graph:
        try:
            tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
        except (ValueError, TypeError, tf.errors.OpError):
            return shapes
        for op in tf_graph.get_operations():
            for port, tensor in enumerate(op.outputs):
                shape = tensor.shape
                shapes[(op.name, port)] = None if shape.rank is None else tuple(shape.as_list())
    return shapes

