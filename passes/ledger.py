"""FuseLens's own fusion ledger: a pipeline's passes counted the way fusion_result.json counts them.

A pass's `match_times` is every structure it matched, near misses included (matched, then
refused: that is what the toolchain counts as matched but not effected); `effect_times` is the
matches it rewrote. Written as a fusion_result.json (`fuse --ledger F.json`), it diffs against
the toolchain's own file, and `compare_with_toolchain` sets the two side by side.

Only some FuseLens passes can appear in the toolchain's file: FE records its own graph and UB
fusion passes, and GE records a user's Python pass (ge.passes) under its registered name in the same
recorder, counted as GE counts it (`GePassResult.match_times` / `effect_times`: a match refused by
meet_requirements or the cycle check is matched, a partial match is not); so a FuseLens pass with a
GE name and a user's Python pass are checked count for count, while scope fusion
(the TF parser), AMCT (offline, before the toolchain) and AutoFuse (after FE) leave no trace
there and are checked against the dumps and the profile instead.
"""

from __future__ import annotations

from dataclasses import replace

from fuselens.core.ascend.ge.fusion_result import GRAPH_FUSION, GraphLedger, LedgerRow, PassCount, compare_ledgers
from fuselens.passes.base import PassResult
from fuselens.passes.ge_python.engine import FAMILY as GE_PYTHON
from fuselens.passes.ge_python.engine import GePassResult
from fuselens.passes.pipeline import PipelineResult

DEFAULT_GRAPH = "0_0"
# FuseLens passes that GE's FE runs under the same name (FE's fusion_pass_name.h), so fusion_result.json
# records them; one of these missing from the toolchain's file never matched there (or was switched off).
FE_PASS_NAMES = frozenset({"ConvBatchnormFusionPass"})
WHY_UNRECORDED = {
    "scope": "scope fusion runs in the TF parser, which writes no fusion_result.json; the PreRunBegin dump "
             "shows its result",
    "amct": "AMCT fuses offline, before the toolchain, and GE's FE has no pass of this name",
    "autofuse": "AutoFuse runs after FE's graph fusion and writes no fusion_result.json; the AutoFuse dumps "
                "and the profile show its kernels",
}


def pipeline_ledger(pipeline: PipelineResult, graph: str = DEFAULT_GRAPH) -> GraphLedger:
    """Every pass that ran, under graph_fusion, with its matches (near misses included) and rewrites."""
    ledger = GraphLedger(graph)
    for result in pipeline.results:
        ledger.add(PassCount(result.pass_id, GRAPH_FUSION, *toolchain_counts(result)))
    return ledger


def toolchain_counts(result: PassResult) -> tuple[int, int]:
    """(match_times, effect_times) as the toolchain would record them for this pass's run."""
    if isinstance(result, GePassResult):
        return result.match_times, result.effect_times
    return result.match_count + result.near_miss_count, result.match_count


def compare_with_toolchain(pipeline: PipelineResult, toolchain: GraphLedger) -> list[LedgerRow]:
    """FuseLens's ledger for this pipeline against one graph of the toolchain's fusion_result.json."""
    predicted = pipeline_ledger(pipeline, toolchain.graph)
    config = pipeline.config
    notes = {r.pass_id: WHY_UNRECORDED.get(config.get_pass(r.pass_id).family, "") for r in pipeline.results}
    recorded = FE_PASS_NAMES | {r.pass_id for r in pipeline.results if config.get_pass(r.pass_id).family == GE_PYTHON}
    rows = compare_ledgers(predicted, toolchain, recorded=recorded, unrecorded_notes=notes)
    known = {c.id for c in config.catalog()}
    return [replace(row, status="disagree", note="the toolchain ran this pass; it is switched off in this FuseLens "
                    "configuration") if row.status == "not_modelled" and row.name in known else row for row in rows]
