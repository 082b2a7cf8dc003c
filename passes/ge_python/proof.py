"""The numeric proof of a GE Python pass's rewrites: the graph before and after, run by TensorFlow on the
same random inputs, output by output.

It runs when every replacement op has a TensorFlow equivalent (optable: an op TensorFlow has, or an
expansion such as GEMM = alpha * MatMul(a, b) + beta * c, which the fused call node computes); a
replacement with a GE-only op that has none is "structure only: <op> has no TensorFlow equivalent
here". The graph's outputs are fetched under the names the rewrites gave them (an Add(x, 0) that was
an output is x now).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuselens.passes.ge_python.engine import GePassResult
from fuselens.passes.ge_python.optable import is_ge_graph
from fuselens.passes.pipeline import PipelineResult


@dataclass(frozen=True)
class Proof:
    """`status`: "equal", "differs", "structure_only" or "nothing_rewritten"; `text` says it in one line."""

    status: str
    text: str
    max_abs_diff: float | None = None
    fetched: dict[str, str] = field(default_factory=dict)  # original output -> the fused graph's tensor

    @property
    def ok(self) -> bool:
        return self.status in ("equal", "nothing_rewritten")

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "text": self.text, "max_abs_diff": self.max_abs_diff, "fetched": self.fetched}


def renamed_outputs(pipeline: PipelineResult) -> dict[str, str]:
    """Each output of the original graph -> the tensor of the fused graph that holds its value now."""
    moved: dict[str, str] = {}
    for result in pipeline.results:
        if isinstance(result, GePassResult):
            moved.update(result.output_map)
    fetched = {}
    for name in pipeline.original.outputs():
        tensor, seen = name, set()
        while tensor in moved and tensor not in seen and moved[tensor] != tensor:
            seen.add(tensor)
            tensor = moved[tensor]
        fetched[name] = tensor
    return fetched


def prove(pipeline: PipelineResult, *, seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None,
          rtol: float = 1e-4, atol: float = 1e-5) -> Proof:
    """Run the original and the fused graph on seeded random inputs and compare every output."""
    results = [r for r in pipeline.results if isinstance(r, GePassResult)]
    structure_only = list(dict.fromkeys(t for r in results for t in r.structure_only))
    if structure_only:
        return Proof("structure_only", f"structure only: {', '.join(structure_only)} has no TensorFlow "
                                       f"equivalent here")
    if is_ge_graph(pipeline.original):
        return Proof("structure_only", "structure only: a GE graph dump runs on the host, not in TensorFlow")
    if not any(r.match_count for r in results):
        return Proof("nothing_rewritten", "no GE Python pass rewrote anything: nothing to prove")
    from fuselens.core.formats.execute import random_feeds, run_graph

    fetched = renamed_outputs(pipeline)
    feeds = random_feeds(pipeline.original, seed, shapes)
    before = run_graph(pipeline.original, feeds, list(fetched))
    after = run_graph(pipeline.fused, feeds, list(fetched.values()))
    worst = 0.0
    for name, tensor in fetched.items():
        expected, got = np.asarray(before[name]), np.asarray(after[tensor])
        if expected.shape != got.shape:
            return Proof("differs", f"output {name}: shape {list(expected.shape)} before, {list(got.shape)} after",
                         None, fetched)
        worst = max(worst, float(np.max(np.abs(expected.astype(np.float64) - got))) if expected.size else 0.0)
        if not np.allclose(got, expected, rtol=rtol, atol=atol):
            return Proof("differs", f"output {name} differs after the rewrite: max |diff| {worst:.3g}", worst, fetched)
    return Proof("equal", f"numerically equal on random inputs (seed {seed}): {len(fetched)} output(s), max |diff| "
                          f"{worst:.3g}", worst, fetched)
