"""What came back from the NPU (the evidence a prediction is checked against), and the dump stage to read.

Three kinds, any of which may be missing: the profile (op_summary & co), fusion_op_*.csv with the
last dump stage (the toolchain's own fused op -> original ops map), and fusion_result.json.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from fuselens.core.ascend.ge.fusion_result import FusionResult, read_fusion_result
from fuselens.core.ascend.ge.stages import DumpFolder, Stage, scan_dump_folder
from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.msprof import find_profile_files
from fuselens.core.measure.msprof.fusion_op import FusionOpRecord, read_fusion_op
from fuselens.core.measure.result import GraphRun


@dataclass
class NpuEvidence:
    """What came back from the NPU; every part is optional."""

    run: GraphRun | None = None  # the profile of the run with fusion on
    fusion_ops: list[FusionOpRecord] = field(default_factory=list)
    fusion_result: FusionResult | None = None
    dumps: DumpFolder | None = None
    sources: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    amct_before_ge: bool = False  # an NPU bundle's fused side: GE was handed the graph AMCT had folded already


def gather_evidence(folder: str | os.PathLike[str] | None = None, *, run: GraphRun | None = None,
                    fusion_result: str | os.PathLike[str] | None = None,
                    dumps: str | os.PathLike[str] | None = None) -> NpuEvidence:
    """The evidence under a folder brought back from the NPU (fusion_op files, a fusion_result.json and
    GE dumps found anywhere below it), plus files named explicitly (their errors are the user's to see)."""
    evidence = NpuEvidence(run=run)
    root = Path(folder) if folder is not None else None
    if root is not None and (root / "original").is_dir() and (root / "fused").is_dir():
        root = root / "fused"  # an NPU bundle's results: the evidence is the fused side's (the baseline's is unfused)
        evidence.amct_before_ge = True
    if root is not None and root.is_dir():
        files = find_profile_files(root)["fusion_op"]
        evidence.fusion_ops = [r for f in files for r in read_fusion_op(f)]
        if files:
            evidence.sources["fusion_op"] = ", ".join(str(f) for f in files)
    if fusion_result is None and root is not None and root.is_dir():
        found = sorted(root.rglob("fusion_result.json"))
        if len(found) > 1:
            evidence.notes.append(f"{len(found)} fusion_result.json files under {root}; read {found[0]} "
                                  "(name one with --fusion-result)")
        fusion_result = found[0] if found else None
    if fusion_result is not None:
        evidence.fusion_result = read_fusion_result(fusion_result)
        evidence.sources["fusion_result"] = str(fusion_result)
    if dumps is not None:
        evidence.dumps = scan_dump_folder(dumps)
    elif root is not None and root.is_dir():
        try:
            evidence.dumps = scan_dump_folder(root)
        except FuseLensError:
            evidence.dumps = None  # no dumps brought back: fine, they are optional
    if evidence.dumps is not None:
        evidence.sources["dumps"] = str(evidence.dumps.path)
    return evidence



# ---- dumps: which graph, which stage -------------------------------------------------------
def pick_stage(folder: DumpFolder, model: Graph, stage: str | None, notes: list[str]) -> tuple[Stage, Graph] | None:
    """The stage to check (given, else the last of the timeline whose first stage shares most node names
    with the model), loaded; stages that fail to load are noted and skipped."""
    if stage is not None:
        chosen = folder.find(stage)
        return chosen, chosen.load().graph
    best, best_overlap = None, -1
    for timeline in folder.timelines:
        try:
            first = timeline.stages[0].load().graph
        except FuseLensError as e:
            notes.append(str(e))
            continue
        overlap = len(set(first.nodes) & set(model.nodes))
        if overlap > best_overlap:
            best, best_overlap = timeline, overlap
    for candidate in reversed(best.stages if best else []):
        try:
            return candidate, candidate.load().graph
        except FuseLensError as e:
            notes.append(str(e))
    return None


