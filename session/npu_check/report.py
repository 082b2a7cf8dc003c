"""The predicted-vs-actual report: every prediction with its verdict and NPU time, every toolchain fusion
FuseLens did not predict, and the per-pass rows of the ledger (fusion_result.json) and of the logs. Typed for
the window and the CLI; `to_json` is the `--check` file's format."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fuselens.core.ascend.ge.fusion_result import LedgerRow
from fuselens.core.ascend.ge.provenance import ToolchainProvenance, provenance_table
from fuselens.core.measure.msprof import FusionOpRecord
from fuselens.core.measure.profile import NodeMapper
from fuselens.core.measure.result import GraphRun, RunResult
from fuselens.passes.ledger import compare_with_toolchain
from fuselens.passes.pipeline import PipelineResult
from fuselens.session.npu_check.evidence import NpuEvidence, gather_evidence, pick_stage, records_evidence
from fuselens.session.npu_check.log_check import AGREE, LogRow, log_rows
from fuselens.session.npu_check.predictions import Prediction, predictions
from fuselens.session.npu_check.verdicts import (
    FOUND,
    NOT_FOUND,
    UNKNOWN,
    Finding,
    Verdict,
    combine,
    fusion_op_verdict,
    log_verdict,
    per_step,
    profile_verdict,
    provenance_verdict,
)

REPORT_FORMAT = "fuselens-npu-check"
REPORT_VERSION = 1
AUTOFUSE_TYPES = frozenset({"AscBackend", "FusedAscBackend"})
AMCT_BEFORE_GE = "done by AMCT before GE"
EVIDENCE_KINDS = ("profile", "fusion_op", "dumps", "fusion_result", "om_json", "log")


@dataclass(frozen=True)
class PredictedRow:
    """One prediction with every source's verdict, the combined verdict and its NPU time per step."""

    prediction: Prediction
    verdict: Finding
    time_us: float | None
    evidence: tuple[Verdict, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.prediction.to_json(), "verdict": self.verdict.value, "npu_time_us": self.time_us,
                "evidence": [v.to_json() for v in self.evidence]}


@dataclass
class Unpredicted:
    """A toolchain fusion (`kind` "fusion") or pass with rewrites (`kind` "pass") FuseLens did not predict."""

    kind: str
    name: str
    op_type: str
    original_nodes: tuple[str, ...]
    passes: tuple[str, ...]
    sources: list[str] = field(default_factory=list)
    time_us: float | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "op_type": self.op_type,
                "original_nodes": list(self.original_nodes), "passes": list(self.passes), "sources": self.sources,
                "npu_time_us": self.time_us, "detail": self.detail}


@dataclass(frozen=True)
class Summary:
    predicted: int
    found: int
    not_found: int
    unknown: int
    unpredicted: int
    ledger_disagreements: int
    log_disagreements: int
    evidence: list[str]  # the kinds of evidence that came back (EVIDENCE_KINDS)

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class CheckReport:
    """A pipeline set against whatever evidence came back from the NPU."""

    model: str
    config: dict[str, Any]  # the pass configuration, as PassConfig.to_json writes it
    sources: dict[str, str]  # evidence kind -> where it was read
    predicted: list[PredictedRow]
    unpredicted: list[Unpredicted]
    ledger: list[LedgerRow]
    notes: list[str]
    evidence: list[str]
    log: list[LogRow] = field(default_factory=list)  # the logs' word on each pass they name

    @property
    def summary(self) -> Summary:
        counts = [sum(r.verdict is finding for r in self.predicted) for finding in (FOUND, NOT_FOUND, UNKNOWN)]
        return Summary(len(self.predicted), *counts, len(self.unpredicted),
                       sum(r.status == "disagree" for r in self.ledger),
                       sum(r.status not in (AGREE, "unverifiable") for r in self.log), self.evidence)

    def to_json(self) -> dict[str, Any]:
        return {"format": REPORT_FORMAT, "version": REPORT_VERSION, "model": self.model, "config": self.config,
                "sources": self.sources, "summary": self.summary.to_json(),
                "predicted": [r.to_json() for r in self.predicted],
                "unpredicted": [u.to_json() for u in self.unpredicted],
                "ledger": [r.to_json() for r in self.ledger], "log": [r.to_json() for r in self.log],
                "notes": self.notes}


def check_prediction(pipeline: PipelineResult, evidence: NpuEvidence, *, model: str = "",
                     ledger_graph: str | None = None, stage: str | None = None) -> CheckReport:
    """The predicted-vs-actual report of a pipeline against whatever evidence there is."""
    notes = list(evidence.notes)
    sources = dict(evidence.sources)
    run = evidence.run
    mapper = NodeMapper(pipeline.fused)
    records: list[tuple[str, str, dict[str, ToolchainProvenance], dict[str, str]]] = []  # graphs of the toolchain's
    if evidence.dumps is not None:
        picked = pick_stage(evidence.dumps, pipeline.original, stage, notes)
        if picked is not None:
            chosen, dump_graph = picked
            table = {n: r for n, r in provenance_table(dump_graph).items() if r.fused}
            records.append(("dump", chosen.label, table, {n: dump_graph.op_type(n) for n in dump_graph.nodes}))
            sources["dump_stage"] = f"{chosen.label} ({chosen.file.path.name})"
    if evidence.om_model is not None:
        records.append(("om_json", Path(evidence.om_model.source).name, evidence.om_model.table(),
                        evidence.om_model.op_types()))
    rows = []
    all_predictions = predictions(pipeline, amct_before_ge=evidence.amct_before_ge)
    for p in all_predictions:
        verdicts = []
        if run is not None and run.kernels:
            verdicts.append(profile_verdict(p, run, mapper))
        if p.before_ge:  # nothing of it is left for the toolchain to fuse: its records cannot show it
            verdicts.append(Verdict("amct", FOUND, f"{AMCT_BEFORE_GE}: folded in the graph GE was handed"))
        elif evidence.fusion_ops:
            found = fusion_op_verdict(p, evidence.fusion_ops, run)
            if found:
                verdicts.append(found)
        if not p.before_ge:
            verdicts += [provenance_verdict(p, source, label, table, types) for source, label, table, types in records]
            said = log_verdict(p, pipeline.config.get_pass(p.pass_id).switch, evidence.log) if evidence.log else None
            if said is not None:
                verdicts.append(said)
        time = next((v.time_us for v in verdicts if v.time_us is not None), None)
        rows.append(PredictedRow(p, combine(verdicts), time, tuple(verdicts)))
    unpredicted = _unpredicted(all_predictions, run, evidence.fusion_ops, records)
    ledger_rows: list[LedgerRow] = []
    if evidence.fusion_result is not None and evidence.fusion_result.graphs:
        graph = evidence.fusion_result.graph(ledger_graph) if ledger_graph else evidence.fusion_result.busiest()
        sources["fusion_result_graph"] = graph.key
        ledger_rows = compare_with_toolchain(pipeline, graph)
        if evidence.amct_before_ge:
            ledger_rows = [_done_by_amct(row, pipeline) for row in ledger_rows]
        unpredicted += [Unpredicted("pass", row.name, "", (), (row.name,), ["fusion_result"], None,
                                    f"{row.actual.effect_times} rewrites in {graph.key}")
                        for row in ledger_rows if row.status == "not_modelled" and row.actual
                        and row.actual.effect_times]
    kinds = sorted(k for k in EVIDENCE_KINDS if (k == "profile" and run is not None) or k in sources)
    return CheckReport(model or pipeline.original.source, pipeline.config.to_json(), sources, rows, unpredicted,
                       ledger_rows, notes, kinds, log_rows(pipeline, evidence.log) if evidence.log else [])


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
                 records: list[tuple[str, str, dict[str, ToolchainProvenance], dict[str, str]]]) -> list[Unpredicted]:
    """Toolchain fusions no prediction matches exactly, merged by name across the sources (`records`: the
    fused nodes of the dump stage and of the OM model, with every node's type)."""
    exact = [set(p.toolchain_names) for p in preds]
    kernels = {k for p in preds for k in p.kernels}
    found: dict[str, Unpredicted] = {}

    def add(name: str, op_type: str, originals: tuple[str, ...], passes: tuple[str, ...], source: str) -> None:
        if set(originals) in exact or (not originals and name in kernels):
            return
        entry = found.setdefault(name, Unpredicted("fusion", name, op_type, tuple(originals), tuple(passes)))
        entry.sources.append(source)
        entry.op_type = entry.op_type or op_type
        entry.original_nodes = entry.original_nodes or tuple(originals)
        entry.passes = entry.passes or tuple(passes)
        overlapping = [p.node for p in preds if set(p.toolchain_names) & set(originals)]
        if overlapping and not entry.detail:
            entry.detail = "overlaps FuseLens's " + ", ".join(overlapping) + " (fused differently)"

    for source, label, table, types in records:
        for name, record in table.items():
            add(name, types.get(name, ""), record.original_names, record.passes,
                f"dump {label}" if source == "dump" else source)
    for row in fusion_ops:
        add(row.fusion_op, "", row.original_ops, (), "fusion_op")
    for kernel in run.kernels if run else []:
        if kernel.kernel.startswith("autofuse_") or kernel.op_type in AUTOFUSE_TYPES:
            add(kernel.kernel, kernel.op_type, (), (), "profile")
    for entry in found.values():
        kernel = next((k for k in run.kernels if k.kernel == entry.name), None) if run else None
        entry.time_us = per_step(kernel, run) if kernel and run else None
    return list(found.values())


def check_imported(pipeline: PipelineResult, path: str | os.PathLike[str], result: RunResult, *, model: str = "",
                   fusion_result: str | os.PathLike[str] | None = None, dumps: str | os.PathLike[str] | None = None,
                   logs: Sequence[str | os.PathLike[str]] = (), om_model: str | os.PathLike[str] | None = None,
                   ledger_graph: str | None = None, stage: str | None = None) -> CheckReport:
    """The report of a run imported from `path` (a profile file, or a folder brought back from the NPU, whose
    other records are read too), against the run with fusion on when both sides are there."""
    run = result.graphs.get("fused") or next(iter(result.graphs.values()), None)
    folder = path if Path(path).is_dir() else None
    evidence = gather_evidence(folder, run=run, fusion_result=fusion_result, dumps=dumps, logs=logs,
                               om_model=om_model)
    evidence.sources.setdefault("profile", str(path))
    return check_prediction(pipeline, evidence, model=model, ledger_graph=ledger_graph, stage=stage)


def check_toolchain_records(pipeline: PipelineResult, paths: Sequence[str | os.PathLike[str]], *, model: str = "",
                            stage: str | None = None) -> CheckReport:
    """The report against toolchain logs and OM models as JSON alone (no profile): files, or folders searched
    for them by content."""
    return check_prediction(pipeline, records_evidence(paths), model=model, stage=stage)


def check_npu_result(pipeline: PipelineResult | None, path: str | os.PathLike[str], result: RunResult, *,
                     model: str = "") -> CheckReport | None:
    """The report of a run imported into the window, or None when there is no prediction to check or the run
    did not come from an NPU (a FuseLens CPU run file)."""
    if pipeline is None or not result.backend.startswith("npu"):
        return None
    return check_imported(pipeline, path, result, model=model)
