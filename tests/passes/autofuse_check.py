"""Shared by the AutoFuse tests: build toy graphs with TensorFlow, and prove a fusion by numbers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.graph import Graph, proto
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass
from fuselens.passes.base import PassResult


def tf_graph(build: Callable[..., None]) -> Graph:
    """A Graph from a TF1-style builder `build(tf)` (placeholders via tf.compat.v1)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    return Graph(proto.GraphDef.FromString(graph.as_graph_def().SerializeToString()), source="toy")


def fused_tensor_names(result: PassResult) -> dict[str, str]:
    """Original output tensor -> the fused call node's output that replaced it."""
    created = {r.match_index: r.created[0] for r in result.rewrites if r.match_index >= 0}
    return {out: f"{created[m.index]}:{k}" for m in result.matches for k, out in enumerate(m.details["outputs"])}


def assert_same_outputs(original: Graph, fused: Graph, results: list[PassResult], seed: int = 0) -> None:
    """Original and fused graphs on the same seeded inputs: same dtypes, allclose (fp16 tolerance for fp16).

    Outputs that an AutoFuse kernel absorbed are fetched from its call node; other passes keep names.
    """
    renamed: dict[str, str] = {}
    for result in results:
        if result.pass_id == AutoFusePass.id:
            renamed.update(fused_tensor_names(result))
    fetches = original.outputs()
    feeds = random_feeds(original, seed)
    want = run_graph(original, feeds, fetches)
    got = run_graph(fused, feeds, [renamed.get(f, f) for f in fetches])
    assert len(fetches) == len(got)
    for name, value in zip(fetches, got.values()):
        assert value.dtype == want[name].dtype, name
        tolerance = 1e-2 if value.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(value, want[name], rtol=tolerance, atol=tolerance, err_msg=name)
