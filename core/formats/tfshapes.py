"""Static dtypes and shapes by TensorFlow's own inference (imports TensorFlow): the window's TensorFlow
helper asks it for the edge labels of a graph that records no shapes; the passes never do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import proto
from fuselens.core.tfimport import import_tensorflow

if TYPE_CHECKING:
    from fuselens.core.graph import Graph

TensorInfo = tuple[int, "tuple[int | None, ...] | None"]  # (DataType enum, shape)


def infer_tensors(graph: Graph) -> dict[tuple[str, int], TensorInfo]:
    """(node, port) -> (dtype, shape) for every output; unknown dims are None."""
    tf = import_tensorflow()

    info: dict[tuple[str, int], TensorInfo] = {}
    with tf.Graph().as_default() as tf_graph:
        try:
            tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
        except (ValueError, TypeError, tf.errors.OpError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise FuseLensError(f"{graph.source}: TensorFlow cannot import the graph ({first[:300]})") from None
        for op in tf_graph.get_operations():
            for port, tensor in enumerate(op.outputs):
                shape = tensor.shape
                info[(op.name, port)] = (
                    tensor.dtype.base_dtype.as_datatype_enum,
                    None if shape.rank is None else tuple(shape.as_list()),
                )
    return info


def ensure_shapes(graph: Graph) -> dict[tuple[str, int], tuple[int | None, ...] | None]:
    """Every output's shape: as the graph records them, else TensorFlow's inference, kept on the graph."""
    shapes = graph.known_shapes()
    if shapes is None:
        shapes = {key: shape for key, (_, shape) in infer_tensors(graph).items()}
        graph.adopt_shapes(shapes)
    return shapes
