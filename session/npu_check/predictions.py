"""What FuseLens predicts the toolchain will show: per match, the original nodes that run as one kernel
(a scope or AutoFuse node) or vanish into another (a BatchNorm folded into its conv)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Provenance
from fuselens.passes.pipeline import PipelineResult, run_pipeline


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


