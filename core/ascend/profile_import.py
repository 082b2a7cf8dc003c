"""Open a profile: a FuseLens run file, an msprof op_summary / op_statistic CSV or a PROF_* folder.

The window and `fuselens import-profile` both call `import_run_file`, so a profile lands on the
same graph whichever opens it.

A single NPU run is usually of the fused model (its kernels are named `autofuse_pointwise_0_Abs_Relu_Exp`,
not `abs_0`), but nothing in the file says which graph it ran; so it is mapped to the graph
(original or fused) whose node names match more of its kernel names, and shown on that side.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.msprof import PROFILE_FILES, import_profile
from fuselens.core.measure.profile import NodeMapper
from fuselens.core.measure.result import GraphRun, RunResult


def mapped_to(run: GraphRun, graph: Graph) -> GraphRun:
    """The run with every kernel and timeline event mapped to `graph`'s nodes by kernel name."""
    mapper = NodeMapper(graph)

    def remap(row):  # KernelStat or TimelineEvent: both carry kernel, node, pass_id
        node = mapper.node(row.kernel)
        return replace(row, node=node, pass_id=mapper.pass_id(node))

    return replace(run, kernels=[remap(k) for k in run.kernels], timeline=[remap(e) for e in run.timeline])


def import_run_file(path: str | os.PathLike[str], original: Graph | None = None,
                    fused: Graph | None = None) -> RunResult:
    """A RunResult with graphs labelled `original` and/or `fused`, kernels mapped to those graphs' nodes."""
    path = Path(path)
    if not path.exists():
        raise FuseLensError(f"{path}: no such file or directory")
    if path.is_file() and path.suffix.lower() == ".json" and not path.match(PROFILE_FILES["msprof_json"]):
        return RunResult.load(path)  # a FuseLens run file (an msprof_*.json timeline is a profile)
    graphs = {name: g for name, g in (("original", original), ("fused", fused)) if g is not None}
    result = import_profile(path, graphs)
    if "imported" not in result.graphs:
        return result  # a folder with original/ and fused/ runs: already mapped per graph
    imported = result.graphs["imported"]
    candidates = {label: mapped_to(imported, graph) for label, graph in graphs.items()}
    if candidates:
        def fit(label: str) -> tuple[int, int, bool]:
            """Kernels named exactly like a node, then kernels mapped at all (the fused graph maps the
            original's `abs_0` to the fused node holding it); a tie goes to the fused graph, as an
            NPU profile is normally of the fused model."""
            kernels = candidates[label].kernels
            return (sum(k.kernel in graphs[label] for k in kernels), sum(k.node is not None for k in kernels),
                    label == "fused")

        label = max(candidates, key=fit)
        result.graphs = {label: candidates[label]}
    else:
        result.graphs = {"fused": imported}
    return result
