"""Open a profile: a FuseLens run file, any profile file msprof or torch_npu writes, or a folder of them.

The window (its dialogs and drag-and-drop) and `fuselens import-profile` all call `import_run_file`,
so a profile lands on the same graph whichever opens it; what a file is comes from its content
(core/ascend/sniff.py), whatever its name.

A single NPU run is usually of the fused model (its kernels are named `autofuse_pointwise_0_Abs_Relu_Exp`,
not `abs_0`), but nothing in the file says which graph it ran; so it is mapped to the graph
(original or fused) whose node names match more of its kernel names, and shown on that side.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from fuselens.core.ascend.sniff import profile_or_run
from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.msprof import import_profile
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
    if path.is_file() and profile_or_run(path) == "run_file":
        return RunResult.load(path)
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
