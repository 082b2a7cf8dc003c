"""Layerwise compare: every fused node's outputs against the original tensors they replace.

A fused node's output tensor replaces the tensor its readers read before: a reader kept as it was
reads the original tensor at the same input slot, a fused call node's reader is found inside the
call's library function (its body keeps the original names), and a model output is paired by
`pair_outputs`. A tensor nothing original stands for (a folded convolution's pre-bias output)
has no counterpart and is listed as such; weights (created constants) are not compared.

Each match is judged in the graph right after its own pass (the same configuration with the later
passes switched off), so a match's error figure has only the passes before it applied, and the
first divergent match is the fault itself rather than a later kernel that absorbed its output
(an AMCT fold whose BiasAdd AutoFuse then takes into a kernel). Every stage runs in the same child
process on the same inputs (`core.runtime.LayerProbe`); the fused graph's own probes colour the
panes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Provenance
from fuselens.core.measure.compare import pair_outputs
from fuselens.core.measure.result import OutputComparison
from fuselens.core.runtime.runner import LayerProbe
from fuselens.passes.base import Match
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult

FINAL = "fused"  # the LayerProbe label of the fused graph itself

Fuse = Callable[[Graph, PassConfig], PipelineResult]  # run_pipeline, or the window's TensorFlow helper


@dataclass(frozen=True)
class TensorPair:
    """A fused node's output and the original tensor it replaces (None: it has no counterpart)."""

    node: str
    tensor: str
    original: str | None
    match: str | None  # the id of the match that made the node, at this stage


@dataclass
class LayerStage:
    """The graph right after one pass (or the fused graph: `FINAL`), with the pairs to compare in it."""

    label: str
    pass_id: str
    graph: Graph | None  # None: the fused graph, probed in the run itself
    pairs: list[TensorPair]

    def probe(self) -> LayerProbe:
        return LayerProbe(self.label, [(p.original, p.tensor) for p in self.pairs if p.original],
                          self.graph)


@dataclass
class LayerPlan:
    """What a layerwise run fetches: one stage per pass that rewrote something (the last is the fused graph)."""

    original: Graph
    stages: list[LayerStage]
    matches: dict[str, Match]  # every applied match by id, in pipeline order

    def probes(self) -> list[LayerProbe]:
        return [stage.probe() for stage in self.stages]


def fused_nodes(graph: Graph, provenance: Provenance, among: Sequence[str] | None = None) -> list[str]:
    """Nodes a rewrite made or changed (created constants, i.e. weights, left out), in topological order."""
    wanted = set(among) if among is not None else None
    return [name for name in graph.topological_order()
            if (wanted is None or name in wanted) and provenance.status(name) != "unchanged"
            and not graph.is_const(name)]


def compared_ports(graph: Graph, node: str) -> list[int]:
    """The outputs of `node` something reads, or port 0 of a model output."""
    ports = sorted({c.port for c in graph.consumers(node)})
    return ports or [0]


def counterparts(original: Graph, fused: Graph, provenance: Provenance,
                 nodes: Sequence[str]) -> dict[str, str | None]:
    """`node:port` of each fused node's compared outputs -> the original tensor it replaces, or None."""
    outputs = {}
    with contextlib.suppress(FuseLensError):  # an output that cannot be paired has no counterpart here
        outputs = {f: o for o, f in pair_outputs(original, fused, provenance.original_to_final())}
    found: dict[str, str | None] = {}
    for node in nodes:
        for port in compared_ports(fused, node):
            tensor = f"{node}:{port}"
            found[tensor] = outputs.get(tensor) or next(
                (t for c in fused.consumers(node, port) if (t := _read_before(original, fused, provenance, c))),
                None)
    return found


def _read_before(original: Graph, fused: Graph, provenance: Provenance, consumer: Any) -> str | None:
    """What the reader at this input slot read in the original graph, when that can be told."""
    reader, slot = consumer.node, consumer.index
    info = fused.fused_info(reader)
    if info is not None:
        function = fused.functions.get(info.function)
        if function is None or slot >= len(function.signature.input_arg):
            return None
        arg = function.signature.input_arg[slot].name
        for inner in function.node_def:
            for index, text in enumerate(inner.input):
                if text == arg and inner.name in original:
                    return _original_input(original, inner.name, index)
        return None
    if reader not in original:
        return None
    found = _original_input(original, reader, slot)
    if provenance.status(reader) == "unchanged":
        return found
    # a reader a rewrite changed keeps its data inputs (a folded conv: its filter slot is a weight)
    return found if found and not original.is_const(found.rsplit(":", 1)[0]) else None


def _original_input(original: Graph, node: str, slot: int) -> str | None:
    inputs = original.inputs(node)
    return f"{inputs[slot].node}:{inputs[slot].port}" if slot < len(inputs) else None


def match_nodes(pipeline: PipelineResult, pass_id: str) -> dict[str, str]:
    """Fused node -> id of the `pass_id` match whose rewrite made or changed it (in that pass's output)."""
    result = pipeline.result(pass_id)
    if result is None or pipeline.provenance is None:
        return {}
    by_index = {m.index: m for m in result.matches}
    made: dict[str, str] = {}
    for rewrite in pipeline.provenance.rewrites:
        if rewrite.pass_id == pass_id and rewrite.match_index in by_index:
            made.update(dict.fromkeys(rewrite.after, by_index[rewrite.match_index].id))
    return made


def plan_layers(pipeline: PipelineResult, fuse: Fuse, *, cancelled: Callable[[], bool] = lambda: False
                ) -> LayerPlan:
    """The stages of a layerwise compare: the graph after each pass that rewrote something, re-fused
    with the later passes switched off (cheap: AMCT folds take milliseconds; the last stage is the
    fused graph itself)."""
    config, original = pipeline.config, pipeline.original
    ids = [r.pass_id for r in pipeline.results]
    rewriting = [r.pass_id for r in pipeline.results if r.matches]
    matches = {m.id: m for r in pipeline.results for m in r.matches}
    stages = []
    for pass_id in rewriting:
        last = pass_id == rewriting[-1]
        stage = pipeline if last else _prefix(original, config, ids, pass_id, fuse)
        if stage is None or cancelled():
            continue
        made = match_nodes(stage, pass_id)
        among = None if last else list(made)
        nodes = fused_nodes(stage.fused, stage.provenance, among)
        pairs = [TensorPair(tensor.rsplit(":", 1)[0], tensor, source, made.get(tensor.rsplit(":", 1)[0]))
                 for tensor, source in counterparts(original, stage.fused, stage.provenance, nodes).items()]
        stages.append(LayerStage(FINAL if last else f"after {pass_id}", pass_id, None if last else stage.fused,
                                 pairs))
    return LayerPlan(original, stages, matches)


def _prefix(graph: Graph, config: PassConfig, ids: Sequence[str], pass_id: str, fuse: Fuse
            ) -> PipelineResult | None:
    """The pipeline up to and including `pass_id`; None when a later pass cannot be switched off."""
    later = ids[ids.index(pass_id) + 1:]
    if any(config.get_pass(p).general for p in later):
        return None
    return fuse(graph, config.with_passes(later, on=False))


# ---- the report ---------------------------------------------------------------------------------------
@dataclass
class MatchError:
    """A match's own figure: its nodes' outputs in the graph right after its pass."""

    id: str
    pass_id: str
    max_abs: float | None
    max_rel: float | None
    allclose: bool
    compared: int  # tensors compared
    unpaired: list[str]  # its outputs with no original counterpart
    position: int  # topological index in the original graph of the first tensor it replaces

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class LayerwiseReport:
    """Per match and per fused node of the fused graph: max abs / max rel error and the verdict."""

    matches: dict[str, MatchError] = field(default_factory=dict)  # pipeline order
    nodes: dict[str, list[OutputComparison]] = field(default_factory=dict)  # fused graph: node -> its outputs
    unpaired: list[str] = field(default_factory=list)  # fused graph tensors with no original counterpart
    first_divergent: str | None = None

    def node_error(self, node: str) -> float | None:
        """The largest max abs error among a fused node's compared outputs (None: nothing compared)."""
        values = [c.max_abs for c in self.nodes.get(node, ()) if c.max_abs is not None]
        return max(values) if values else None

    def divergent(self) -> list[str]:
        return [m.id for m in self.matches.values() if not m.allclose]

    def to_json(self) -> dict[str, Any]:
        return {"first_divergent": self.first_divergent, "matches": [m.to_json() for m in self.matches.values()],
                "nodes": {node: [c.__dict__ for c in found] for node, found in self.nodes.items()},
                "unpaired": self.unpaired}


def build_report(plan: LayerPlan, layers: Mapping[str, Sequence[OutputComparison | None]]) -> LayerwiseReport:
    """Put a run's probe comparisons (RunHandle.layers) back on the plan's matches and nodes."""
    report = LayerwiseReport()
    order = plan.original.topological_index()
    found: dict[str, list[tuple[TensorPair, OutputComparison | None]]] = {}
    for stage in plan.stages:
        compared = iter(layers.get(stage.label, ()))
        for pair in stage.pairs:
            comparison = next(compared, None) if pair.original else None
            if pair.match is not None:
                found.setdefault(pair.match, []).append((pair, comparison))
            if stage.label == FINAL:
                if comparison is not None:
                    report.nodes.setdefault(pair.node, []).append(comparison)
                elif pair.original is None:
                    report.unpaired.append(pair.tensor)
    for match_id, match in plan.matches.items():
        rows = found.get(match_id, [])
        compared = [c for _, c in rows if c is not None]
        if not rows:
            continue
        report.matches[match_id] = MatchError(
            match_id, match.pass_id, _largest(c.max_abs for c in compared), _largest(c.max_rel for c in compared),
            all(c.allclose for c in compared), len(compared), [p.tensor for p, c in rows if p.original is None],
            min((order.get(p.original.rsplit(":", 1)[0], len(order)) for p, _ in rows if p.original),
                default=len(order)))
    diverging = [m for m in report.matches.values() if not m.allclose]
    if diverging:
        ids = list(report.matches)
        report.first_divergent = min(diverging, key=lambda m: (m.position, ids.index(m.id))).id
    return report


def _largest(values: Any) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def format_report(report: LayerwiseReport, limit: int = 12) -> str:
    """The text the CLI prints after a run: the first divergent match, then the worst matches."""
    lines = [f"layerwise: {len(report.matches)} matches compared, {len(report.divergent())} over the tolerance, "
             f"{len(report.unpaired)} fused outputs with no original counterpart"]
    if report.first_divergent:
        lines.append(f"  first divergent match (topological order): {report.first_divergent}")
    else:
        lines.append("  every match agrees with the original tensors it replaces")
    worst = sorted(report.matches.values(), key=lambda m: -(m.max_abs or 0))[:limit]
    for m in worst:
        error = f"max abs {m.max_abs:.3g}, max rel {m.max_rel:.3g}" if m.max_abs is not None else "nothing compared"
        lines.append(f"  {'ok  ' if m.allclose else 'OVER'} {m.id}: {error} ({m.compared} tensors)")
    if report.unpaired:
        shown = ", ".join(report.unpaired[:4]) + (f" (+{len(report.unpaired) - 4} more)" if len(report.unpaired) > 4
                                                 else "")
        lines.append(f"  no original counterpart: {shown}")
    return "\n".join(lines)
