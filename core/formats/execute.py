"""Placeholder feeds for a graph (the runner, the run view, NPU bundles), and a TF1 session run of it
in this process (the numeric checks of the tests; the runner's child process runs graphs itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, proto
from fuselens.core.tfimport import import_tensorflow


def resolve_input_shape(graph: Graph, name: str,
                        override: Mapping[str, Sequence[int]] | None = None) -> tuple[int, ...]:
    """A concrete shape for a placeholder: the override, else its static shape with batch 1."""
    if override and name in override:
        return tuple(int(d) for d in override[name])
    _, shape = graph.placeholder_spec(name)
    if shape is None:
        raise FuseLensError(f"input {name} has unknown rank; give its shape with --input-shape {name}=D1,D2,...")
    dims = [1 if d is None and i == 0 else d for i, d in enumerate(shape)]
    if any(d is None for d in dims):
        shown = ",".join("?" if d is None else str(d) for d in shape)
        raise FuseLensError(f"input {name} has unknown dimensions [{shown}]; "
                            f"give its shape with --input-shape {name}=D1,D2,...")
    return tuple(int(d) for d in dims)


def random_feeds(graph: Graph, seed: int = 0,
                 shapes: Mapping[str, Sequence[int]] | None = None) -> dict[str, np.ndarray]:
    """Seeded random data for every placeholder (normal for floats, small ints otherwise)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name in graph.placeholders():
        dtype = proto.np_dtype(graph.node(name).attr["dtype"].type)
        shape = resolve_input_shape(graph, name, shapes)
        if np.issubdtype(dtype, np.floating):
            feeds[name] = rng.normal(0.0, 1.0, shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[name] = rng.random(shape) > 0.5
        else:
            feeds[name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def run_graph(graph: Graph, feeds: Mapping[str, np.ndarray],
              fetches: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Outputs (default: graph.outputs(), port 0) for the feeds, in a fresh TF1-style session that
    computes the graph as written: Grappler's remapper is off, since on a oneDNN CPU it rebuilds a
    LayerNorm with epsilon 0.001 whatever the graph holds (core.runtime.layer_norm), and a numeric
    check needs the graph's own math on both sides."""
    tf = import_tensorflow()

    fetches = list(fetches or graph.outputs())
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
    tensor_names = [f if ":" in f else f"{f}:0" for f in fetches]
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    with tf.compat.v1.Session(graph=tf_graph, config=config) as session:
        values = session.run(tensor_names, {f"{k}:0": v for k, v in feeds.items()})
    return dict(zip(fetches, values))
