"""Predicted vs actual: does FuseLens tell the truth about the toolchain?

FuseLens predicts, per match, that some original TF nodes will run as one kernel (a scope or
AutoFuse node) or that some will vanish into another (a BatchNorm folded into its conv). An NPU
run brings back three kinds of evidence, any of which may be missing:

* the profile (op_summary & co): a kernel named like the predicted node says "found"; kernels
  still named like the nodes the fusion should have removed say "not found";
* fusion_op_*.csv and the last dump stage: the toolchain's own fused op -> original ops map
  (`_datadump_original_op_names` in the dump); a fused op holding all the predicted originals is
  "found", the originals still standing as separate nodes is "not found";
* fusion_result.json: per-pass counts, compared where the toolchain records the pass.

The report lists every prediction with its verdict and NPU time, every toolchain fusion FuseLens
did not predict, and the per-pass ledger rows. It is plain JSON, for the CLI and the window alike; its
table rows and its text are session.npu_report's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.errors import FuseLensError
from core.ge.fusion_result import FusionResult, LedgerRow, read_fusion_result
from core.ge.provenance import ToolchainProvenance, provenance_table
from core.ge.stages import DumpFolder, Stage, scan_dump_folder
from core.graph import Graph
from core.provenance import Provenance
from core.runtime.msprof import FusionOpRecord, find_profile_files, read_fusion_op
from core.runtime.profile import NodeMapper
from core.runtime.result import GraphRun, KernelStat, RunResult
from passes.ledger import compare_with_toolchain
from passes.registry import PipelineResult, run_pipeline
from session.npu_report import FOUND, NOT_FOUND, UNKNOWN

REPORT_FORMAT = "fuselens-npu-check"
REPORT_VERSION = 1
AUTOFUSE_TYPES = frozenset({"AscBackend", "FusedAscBackend"})
AMCT_BEFORE_GE = "done by AMCT before GE"


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


@dataclass
class Prediction:
    """One FuseLens match, as the toolchain should show it."""

    pass_id: str
    family: str
    anchor: str
    node: str  # the node the rewrite made or kept (the fused call, the conv that absorbed a BN)
    op_type: str
    originals: tuple[str, ...]  # original compute nodes it stands for (weights left out)
    kernels: tuple[str, ...]  # nodes of the final graph expected to run as kernels for it
    removed: tuple[str, ...]  # nodes (as the toolchain names them) that should no longer run on their own
    toolchain_names: tuple[str, ...] = ()  # the nodes it stands for as the toolchain's records name them
    before_ge: bool = False  # an AMCT fold already done in the graph GE was handed

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.pass_id, "family": self.family, "anchor": self.anchor, "node": self.node,
                "op_type": self.op_type, "original_nodes": list(self.originals),
                "toolchain_nodes": list(self.toolchain_names), "kernels": list(self.kernels)}


def predictions(pipeline: PipelineResult, *, amct_before_ge: bool = False) -> list[Prediction]:
    """Every match of the pipeline with the original nodes it stands for.

    A pass sees the graph the passes before it made, so its match names intermediate nodes;
    replaying the rewrites on a fresh provenance gives each match's origins at the time it ran.
    With `amct_before_ge` (an NPU bundle's fused side) the toolchain was handed the graph AMCT had
    already folded, so its records name that graph's nodes (a fold's new BiasAdd, not the BatchNorm):
    a second replay, without AMCT's rewrites, gives each match's nodes in that graph.
    """
    original, final = pipeline.original, pipeline.fused
    families = {r.pass_id: pipeline.config.get_pass(r.pass_id).family for r in pipeline.results}
    handed = original
    if amct_before_ge:
        handed = run_pipeline(original, pipeline.config, families=("amct",), explain=False).fused
    replay, seen = Provenance(tuple(original.nodes)), Provenance(tuple(handed.nodes))
    order, handed_order = original.topological_index(), handed.topological_index()
    found = []
    final_origins = {n: pipeline.provenance.origins(n) for n in final.nodes} if pipeline.provenance else {}

    def names(provenance: Provenance, graph: Graph, before: tuple[str, ...], rank: dict[str, int]) -> tuple[str, ...]:
        origins = set().union(*(provenance.origins(n) or {n} for n in before))
        return tuple(sorted((o for o in origins if o in graph and not graph.is_const(o)), key=rank.__getitem__))

    for result in pipeline.results:
        by_index = {r.match_index: r for r in result.rewrites}
        amct = families[result.pass_id] == "amct"
        pending = []
        for match in result.matches:
            rewrite = by_index.get(match.index)
            if rewrite is None:
                continue
            originals = names(replay, original, rewrite.before, order)
            toolchain = names(seen, handed, rewrite.before, handed_order) if amct_before_ge else originals
            made = [n for n in rewrite.after if not _is_weight(n, final)]  # the kept node first, then new ones
            node = made[0] if made else match.anchor
            kernels = (node,) if node in final else tuple(
                n for n, o in final_origins.items() if o & set(originals) and not final.is_const(n))
            pending.append(Prediction(result.pass_id, families[result.pass_id], match.anchor, node,
                                      final.op_type(node) if node in final else "", originals, kernels,
                                      tuple(o for o in toolchain if o not in final and o != node), toolchain,
                                      amct_before_ge and amct))
        for rewrite in result.rewrites:
            replay.record(rewrite)
            if not (amct_before_ge and families[result.pass_id] == "amct"):
                seen.record(rewrite)  # AMCT's rewrites are in `handed` already
        found += pending
    return found


def _is_weight(name: str, final: Graph) -> bool:
    """New constants (folded filters and biases) are not where a kernel runs."""
    return (name in final and final.is_const(name)) or name.endswith(("/folded_filter", "/folded_bias"))


# ---- evidence per source -------------------------------------------------------------------
@dataclass
class Verdict:
    source: str
    verdict: str
    detail: str
    time_us: float | None = None
    node: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "verdict": self.verdict, "detail": self.detail,
                "npu_time_us": self.time_us, "toolchain_node": self.node}


def _per_step(kernel: KernelStat, run: GraphRun) -> float:
    return round(kernel.total_us / run.steps, 3) if run.steps else kernel.mean_us


def _profile_verdict(p: Prediction, run: GraphRun, mapper: NodeMapper) -> Verdict:
    by_name = {k.kernel: k for k in run.kernels}
    leftovers = [n for n in p.removed if n in by_name]
    present = [k for k in run.kernels if k.kernel not in leftovers and (k.kernel in p.kernels or (
        k.kernel not in p.toolchain_names and mapper.node(k.kernel) in p.kernels))]
    time = round(sum(_per_step(k, run) for k in present), 3) if present else None
    if leftovers:
        return Verdict("profile", NOT_FOUND, f"{', '.join(leftovers)} ran as kernels of their own", time)
    if present:
        return Verdict("profile", FOUND, "kernel " + ", ".join(k.kernel for k in present), time, present[0].kernel)
    return Verdict("profile", UNKNOWN, "no kernel named like the prediction or its original nodes")


def _fusion_op_verdict(p: Prediction, rows: list[FusionOpRecord], run: GraphRun | None) -> Verdict | None:
    wanted = set(p.toolchain_names)
    for row in rows:
        if len(wanted) > 1 and wanted <= set(row.original_ops):
            kernel = next((k for k in run.kernels if k.kernel == row.fusion_op), None) if run else None
            return Verdict("fusion_op", FOUND, f"fused op {row.fusion_op} holds {', '.join(row.original_ops)}",
                           _per_step(kernel, run) if kernel and run else None, row.fusion_op)
    partial = [row for row in rows if wanted & set(row.original_ops)]
    if partial and len(wanted) > 1:
        row = partial[0]
        return Verdict("fusion_op", NOT_FOUND, f"fused op {row.fusion_op} holds only "
                       f"{', '.join(sorted(wanted & set(row.original_ops)))} of them", None, row.fusion_op)
    return None


def _dump_verdict(p: Prediction, graph: Graph, table: dict[str, ToolchainProvenance], stage: str) -> Verdict:
    wanted = set(p.toolchain_names)
    for name, record in table.items():
        if wanted and wanted <= set(record.original_names):
            by = f" by {', '.join(record.passes)}" if record.passes else ""
            return Verdict("dump", FOUND, f"{stage}: node {name} ({graph.op_type(name)}) stands for them{by}",
                           None, name)
    standing = [n for n in p.toolchain_names if n in graph and n not in table]
    holders = {name: sorted(wanted & set(r.original_names)) for name, r in table.items()
               if wanted & set(r.original_names)}
    if len(wanted) > 1 and (len(standing) == len(wanted) or holders):
        split = [f"{', '.join(names)} in {name}" for name, names in holders.items()] + \
            ([f"{', '.join(standing)} separate"] if standing else [])
        return Verdict("dump", NOT_FOUND, f"{stage}: " + "; ".join(split))
    return Verdict("dump", UNKNOWN, f"{stage}: no node records these original nodes")


def _combine(verdicts: list[Verdict]) -> str:
    kinds = {v.verdict for v in verdicts}
    return FOUND if FOUND in kinds else NOT_FOUND if NOT_FOUND in kinds else UNKNOWN


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


# ---- the report ------------------------------------------------------------------------------
def check_prediction(pipeline: PipelineResult, evidence: NpuEvidence, *, model: str = "",
                     ledger_graph: str | None = None, stage: str | None = None) -> dict[str, Any]:
    """The predicted-vs-actual report (JSON-able) of a pipeline against whatever evidence there is."""
    notes = list(evidence.notes)
    sources = dict(evidence.sources)
    run = evidence.run
    mapper = NodeMapper(pipeline.fused)
    dump_graph, dump_table, stage_label = None, {}, ""
    if evidence.dumps is not None:
        picked = pick_stage(evidence.dumps, pipeline.original, stage, notes)
        if picked is not None:
            chosen, dump_graph = picked
            stage_label = chosen.label
            dump_table = {n: r for n, r in provenance_table(dump_graph).items() if r.fused}
            sources["dump_stage"] = f"{chosen.label} ({chosen.file.path.name})"
    rows = []
    all_predictions = predictions(pipeline, amct_before_ge=evidence.amct_before_ge)
    for p in all_predictions:
        verdicts = []
        if run is not None and run.kernels:
            verdicts.append(_profile_verdict(p, run, mapper))
        if p.before_ge:  # nothing of it is left for the toolchain to fuse: its records cannot show it
            verdicts.append(Verdict("amct", FOUND, f"{AMCT_BEFORE_GE}: folded in the graph GE was handed"))
        elif evidence.fusion_ops:
            found = _fusion_op_verdict(p, evidence.fusion_ops, run)
            if found:
                verdicts.append(found)
        if dump_graph is not None and not p.before_ge:
            verdicts.append(_dump_verdict(p, dump_graph, dump_table, stage_label))
        time = next((v.time_us for v in verdicts if v.time_us is not None), None)
        rows.append({**p.to_json(), "verdict": _combine(verdicts), "npu_time_us": time,
                     "evidence": [v.to_json() for v in verdicts]})
    unpredicted = _unpredicted(all_predictions, run, evidence.fusion_ops, dump_graph, dump_table, stage_label)
    ledger_rows: list[dict[str, Any]] = []
    if evidence.fusion_result is not None and evidence.fusion_result.graphs:
        graph = evidence.fusion_result.graph(ledger_graph) if ledger_graph else evidence.fusion_result.busiest()
        sources["fusion_result_graph"] = graph.key
        rows_of_graph = compare_with_toolchain(pipeline, graph)
        if evidence.amct_before_ge:
            rows_of_graph = [_done_by_amct(row, pipeline) for row in rows_of_graph]
        for row in rows_of_graph:
            ledger_rows.append(row.to_json())
            if row.status == "not_modelled" and row.actual and row.actual.effect_times:
                unpredicted.append({"kind": "pass", "name": row.name, "op_type": "", "original_nodes": [],
                                    "passes": [row.name], "sources": ["fusion_result"], "npu_time_us": None,
                                    "detail": f"{row.actual.effect_times} rewrites in {graph.key}"})
    counts = {v: sum(r["verdict"] == v for r in rows) for v in (FOUND, NOT_FOUND, UNKNOWN)}
    return {
        "format": REPORT_FORMAT, "version": REPORT_VERSION, "model": model or pipeline.original.source,
        "config": pipeline.config.to_json(), "sources": sources,
        "summary": {"predicted": len(rows), **counts, "unpredicted": len(unpredicted),
                    "ledger_disagreements": sum(r["status"] == "disagree" for r in ledger_rows),
                    "evidence": sorted(k for k in ("profile", "fusion_op", "dumps", "fusion_result")
                                       if (k == "profile" and run is not None) or k in sources)},
        "predicted": rows, "unpredicted": unpredicted, "ledger": ledger_rows, "notes": notes,
    }


def _done_by_amct(row: LedgerRow, pipeline: PipelineResult) -> LedgerRow:
    """An AMCT fold under an FE pass name, on a bundle's fused side: AMCT folded it offline, so GE received the
    folded graph and FE had nothing left to fold. FE counting no rewrite there is agreement, not a miss."""
    if row.status != "disagree" or row.predicted is None or pipeline.config.get_pass(row.name).family != "amct":
        return row  # (a row with FuseLens's counts is one of the pipeline's own passes)
    folds = row.predicted.effect_times
    if row.actual is None or row.actual.effect_times == 0:
        return replace(row, status="agree", note=f"{AMCT_BEFORE_GE}: its {folds} fold(s) were in the graph GE "
                                                 "received, so FE had nothing left to fold")
    return replace(row, note=f"AMCT folded {folds} before GE, yet FE folded {row.actual.effect_times} more on the "
                             "device")


def _unpredicted(preds: list[Prediction], run: GraphRun | None, fusion_ops: list[FusionOpRecord],
                 dump_graph: Graph | None, dump_table: dict[str, ToolchainProvenance],
                 stage: str) -> list[dict[str, Any]]:
    """Toolchain fusions no prediction matches exactly, merged by name across the sources."""
    exact = [set(p.toolchain_names) for p in preds]
    kernels = {k for p in preds for k in p.kernels}
    found: dict[str, dict[str, Any]] = {}

    def add(name: str, op_type: str, originals: tuple[str, ...], passes: tuple[str, ...], source: str) -> None:
        if set(originals) in exact or (not originals and name in kernels):
            return
        entry = found.setdefault(name, {"kind": "fusion", "name": name, "op_type": op_type,
                                        "original_nodes": list(originals), "passes": list(passes), "sources": [],
                                        "npu_time_us": None, "detail": ""})
        entry["sources"].append(source)
        entry["original_nodes"] = entry["original_nodes"] or list(originals)
        entry["passes"] = entry["passes"] or list(passes)
        overlapping = [p.node for p in preds if set(p.toolchain_names) & set(originals)]
        if overlapping and not entry["detail"]:
            entry["detail"] = "overlaps FuseLens's " + ", ".join(overlapping) + " (fused differently)"

    for name, record in dump_table.items():
        add(name, dump_graph.op_type(name) if dump_graph is not None else "", record.original_names, record.passes,
            f"dump {stage}")
    for row in fusion_ops:
        add(row.fusion_op, "", row.original_ops, (), "fusion_op")
    for kernel in run.kernels if run else []:
        if kernel.kernel.startswith("autofuse_") or kernel.op_type in AUTOFUSE_TYPES:
            add(kernel.kernel, kernel.op_type, (), (), "profile")
    for entry in found.values():
        kernel = next((k for k in run.kernels if k.kernel == entry["name"]), None) if run else None
        entry["npu_time_us"] = _per_step(kernel, run) if kernel and run else None
    return list(found.values())


def check_imported(pipeline: PipelineResult, path: str | os.PathLike[str], result: RunResult, *, model: str = "",
                   fusion_result: str | os.PathLike[str] | None = None, dumps: str | os.PathLike[str] | None = None,
                   ledger_graph: str | None = None, stage: str | None = None) -> dict[str, Any]:
    """The report of a run imported from `path` (a profile file, or a folder brought back from the NPU, whose
    other records are read too), against the run with fusion on when both sides are there."""
    run = result.graphs.get("fused") or next(iter(result.graphs.values()), None)
    folder = path if Path(path).is_dir() else None
    evidence = gather_evidence(folder, run=run, fusion_result=fusion_result, dumps=dumps)
    evidence.sources.setdefault("profile", str(path))
    return check_prediction(pipeline, evidence, model=model, ledger_graph=ledger_graph, stage=stage)


def check_npu_result(pipeline: PipelineResult | None, path: str | os.PathLike[str], result: RunResult, *,
                     model: str = "") -> dict[str, Any] | None:
    """The report of a run imported into the window, or None when there is no prediction to check or the run
    did not come from an NPU (a FuseLens CPU run file)."""
    if pipeline is None or not result.backend.startswith("npu"):
        return None
    return check_imported(pipeline, path, result, model=model)
