"""What came back from the NPU (the evidence a prediction is checked against), and the dump stage to read.

Any of these may be missing: the profile (op_summary & co), fusion_op_*.csv and the last dump stage (the
toolchain's own fused op -> original ops map), fusion_result.json, the OM model as JSON (the same map, from
`atc --mode=1`) and the TF adapter's / GE's logs (which passes ran and matched). Logs and OM JSON are found
in a folder by their content, whatever their names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fuselens.core.ascend import om_json, toolchain_log
from fuselens.core.ascend.ge.fusion_result import FusionResult, read_fusion_result
from fuselens.core.ascend.ge.stages import DumpFolder, Stage, scan_dump_folder
from fuselens.core.ascend.om_json import OmModel, read_om_json
from fuselens.core.ascend.toolchain_log import ToolchainLog, read_toolchain_logs
from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.msprof import FusionOpRecord, find_profile_files, read_fusion_op
from fuselens.core.measure.result import GraphRun


@dataclass
class NpuEvidence:
    """What came back from the NPU; every part is optional."""

    run: GraphRun | None = None  # the profile of the run with fusion on
    fusion_ops: list[FusionOpRecord] = field(default_factory=list)
    fusion_result: FusionResult | None = None
    dumps: DumpFolder | None = None
    log: ToolchainLog | None = None  # the fusion records of the TF adapter's / GE's logs
    om_model: OmModel | None = None  # the OM model as JSON
    sources: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    amct_before_ge: bool = False  # an NPU bundle's fused side: GE was handed the graph AMCT had folded already


def gather_evidence(folder: str | os.PathLike[str] | None = None, *, run: GraphRun | None = None,
                    fusion_result: str | os.PathLike[str] | None = None,
                    dumps: str | os.PathLike[str] | None = None,
                    logs: Sequence[str | os.PathLike[str]] = (),
                    om_model: str | os.PathLike[str] | None = None) -> NpuEvidence:
    """The evidence under a folder brought back from the NPU (fusion_op files, a fusion_result.json, GE dumps,
    toolchain logs and an OM model as JSON found anywhere below it), plus files named explicitly (their errors
    are the user's to see)."""
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
    found_logs, found_models = _records_by_content(root) if root is not None and root.is_dir() else ([], [])
    if om_model is not None:
        evidence.om_model = read_om_json(om_model)
        evidence.sources["om_json"] = str(om_model)
    elif found_models:
        _add_model(evidence, found_models, f"under {root}", strict=False)
    add_logs(evidence, list(logs) or found_logs)
    return evidence


def _add_model(evidence: NpuEvidence, models: Sequence[Path], where: str, *, strict: bool) -> None:
    """The first of the OM models as JSON; not `strict` (found in a folder brought back for other records), one
    that does not read is a note, not a failure."""
    if len(models) > 1:
        evidence.notes.append(f"{len(models)} OM models as JSON {where}; read {models[0]}")
    try:
        evidence.om_model = read_om_json(models[0])
    except FuseLensError as e:
        if strict:
            raise
        evidence.notes.append(str(e))
        return
    evidence.sources["om_json"] = str(models[0])


def add_logs(evidence: NpuEvidence, paths: Sequence[str | os.PathLike[str]]) -> None:
    """Toolchain logs (files or folders of them) as one more kind of evidence; logs without a fusion record
    are noted, not kept."""
    if not paths:
        return
    log = read_toolchain_logs(paths)
    if log.empty:
        evidence.notes.append(f"{len(log.sources)} toolchain log(s) read; none holds a fusion record (scope pass "
                              "registrations and runs, FE graph fusion times, AutoFuse refusals are INFO lines)")
        return
    if evidence.log is not None:
        evidence.log.extend(log)
    else:
        evidence.log = log
    shown = evidence.log.sources
    evidence.sources["log"] = ", ".join(shown) if len(shown) <= 3 else f"{shown[0]} and {len(shown) - 1} more logs"


def records_evidence(paths: Sequence[str | os.PathLike[str]]) -> NpuEvidence:
    """Toolchain logs and OM models as JSON as the only evidence: each file told by its content (a file that is
    neither goes to the log reader, which refuses it in one line), each folder searched for both."""
    logs: list[Path] = []
    models: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found_logs, found_models = _records_by_content(path)
            if not found_logs and not found_models:
                raise FuseLensError(f"{path}: holds no toolchain log and no OM model as JSON")
            logs += found_logs
            models += found_models
        elif om_json.recognises(_head(path)):
            models.append(path)
        else:
            logs.append(path)
    evidence = NpuEvidence()
    if models:
        _add_model(evidence, models, "given", strict=True)  # named or found, the user asked for these records
    add_logs(evidence, logs)
    return evidence


def _head(path: Path) -> bytes:
    """The first bytes the readers decide by ("" for a file that cannot be read: its reader says why)."""
    try:
        with path.open("rb") as f:
            return f.read(toolchain_log.HEAD_BYTES)
    except OSError:
        return b""


def _records_by_content(root: Path) -> tuple[list[Path], list[Path]]:
    """The toolchain logs and the OM models as JSON under a folder, told apart by their first bytes."""
    logs, models = [], []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        head = _head(path)
        if om_json.recognises(head):
            models.append(path)
        elif toolchain_log.recognises(head):
            logs.append(path)
    return logs, models



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


