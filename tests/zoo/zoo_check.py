"""Numeric agreement for whole models: errors relative to the output's scale.

Logits of a random network have no natural per-element tolerance (a logit near zero has no
meaningful relative error), so a fused model agrees when max |fused - original| / max |original|
is small. Shared by the zoo tests and the Keras 3 LayerNorm rule test on ConvNeXtTiny.
"""

from __future__ import annotations

import numpy as np

from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.graph import Graph
from fuselens.core.measure.compare import pair_outputs
from fuselens.passes.pipeline import PipelineResult

# max |fused - original| / max |original| for float32 (measured: at most ~1e-6 on every zoo model)
SCALE_TOLERANCE = 1e-4


def relative_error(original: np.ndarray, other: np.ndarray) -> float:
    scale = float(np.abs(original).max())
    assert np.isfinite(original).all() and scale > 0, "the original output is not finite, or all zeros"
    return float(np.abs(other.astype(np.float64) - original).max()) / scale


def assert_agrees(pipeline: PipelineResult, feeds: dict[str, np.ndarray] | None = None,
                  want: dict[str, np.ndarray] | None = None, what: str = "") -> None:
    """The fused graph's outputs against the original's (`want`, else run here) on the same seeded feeds."""
    original: Graph = pipeline.original
    feeds = feeds if feeds is not None else random_feeds(original, seed=0)
    pairs = pair_outputs(original, pipeline.fused, pipeline.provenance.original_to_final())
    want = want if want is not None else run_graph(original, feeds)
    got = run_graph(pipeline.fused, feeds, [f for _, f in pairs])
    for name, tensor in pairs:
        expected = want[name.split(":")[0]]
        assert got[tensor].dtype == expected.dtype and got[tensor].shape == expected.shape, (name, tensor)
        error = relative_error(expected, got[tensor])
        assert error <= SCALE_TOLERANCE, f"{what}: {tensor} differs from {name} by {error:.2e} of the output's scale"
