"""Did this fusion pay? Each fused kernel's time against the kernels its original nodes ran as.

msprof-analyze's AutoFuse comparison asks it of an unfused and a fused run of one model; FuseLens asks
it of any two runs of the original and the fused graph: a CPU run here, an NPU bundle's two sides, two
imported profiles. Which original nodes a fused node replaced comes from the pipeline's provenance
(FuseLens's fusions) or from the toolchain's own records (fusion_op_*.csv, a dump's
`_datadump_original_op_names`: the fusions GE and AutoFuse made on the NPU).

A node does not always run as a kernel of its own:
- Grappler folds nodes whose inputs are all constants (a BatchNorm's `gamma * rsqrt(var)`): they are
  listed as *constant*, no kernel expected, and cost nothing on either side;
- Grappler's remapper and oneDNN run a chain as one kernel, named after its last node
  (`Conv2D + BiasAdd + Relu6` as `_MklNativeFusedConv2D` `.../Relu6`, `Abs + Relu` as
  `relu/unary_ops_composition`) or, for `FusedBatchNorm + Relu`, after its first: a node without a
  kernel whose output feeds, through sole consumers that have none either, a node whose kernel is such
  a composed one ran *inside* it; failing that, a node whose one non-constant input is read by it
  alone and comes from a node with a composed kernel ran inside that one. A kernel is composed when
  its op type is one of COMPOSED_KERNELS or is not its node's own op (Grappler runs `Conv2D + Mul` as a
  `_MklNativeConv2D` named after the Mul, an Add tree as one `AddN`); forwarding ops (Identity,
  StopGradient) never run inside another kernel: Grappler prunes them;
- anything else is *missing* and said so ("2 of 14 original nodes have no kernel in the baseline:
  StopGradient, Identity"), never guessed.
Fusions that share an original node or a kernel (AMCT folds a BatchNorm into its conv, then AutoFuse
takes the bias and the Relu6; oneDNN runs all of it as one kernel on both sides) are compared once,
as one group, so no kernel is counted twice; a kernel that also runs nodes outside the group is named.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import FORWARDING_OPS, Graph
from fuselens.core.measure.profile import BOOKKEEPING_OPS
from fuselens.core.measure.result import GraphRun, KernelStat, RunResult
from fuselens.core.runtime.run_view import ONEDNN_PREFIXES, per_step_us

if TYPE_CHECKING:
    from fuselens.core.measure.msprof import FusionOpRecord
    from fuselens.passes.pipeline import PipelineResult

# Kernel op types that run several graph nodes: Grappler's remapper, oneDNN's fused kernels, the
# unary-op composition and the LayerNorm the runner builds (core/runtime/layer_norm.py).
COMPOSED_KERNELS = ("_Fused", "_MklFused", "_MklNativeFused", "_MklLayerNorm", "_UnaryOpsComposition")
PROVENANCE = "provenance"  # the rows' sources: FuseLens's own fusions, the toolchain's records
TOOLCHAIN = "toolchain"


def is_composed(kernel_op: str, node_op: str) -> bool:
    """Whether a kernel of `kernel_op` run for a node of `node_op` runs more than that node."""
    if kernel_op.startswith(COMPOSED_KERNELS):
        return True
    own = next((kernel_op[len(p):] for p in ONEDNN_PREFIXES if kernel_op.startswith(p)), kernel_op)
    return own != node_op


@dataclass
class FusionGain:
    """One fusion (or a group of fusions sharing kernels): its kernels' time per step on both sides."""

    label: str  # the match id, or the toolchain's fused op; a group names its first and counts the rest
    source: str  # PROVENANCE (FuseLens's own) or TOOLCHAIN (fusion_op, a dump)
    matches: tuple[str, ...]  # FuseLens match ids (PassId:anchor), in pipeline order; clicking selects the first
    fused_nodes: tuple[str, ...]  # fused-graph nodes (or the toolchain's fused op names)
    fused_kernels: tuple[str, ...]
    fused_us: float
    originals: tuple[str, ...]  # the original nodes the fusion replaced
    baseline_kernels: tuple[str, ...]
    baseline_us: float
    inside: dict[str, str] = field(default_factory=dict)  # original -> the composed kernel it ran inside
    constant: tuple[str, ...] = ()  # originals Grappler folds into constants: no kernel expected
    missing: dict[str, str] = field(default_factory=dict)  # original -> its op type ('' unknown): no baseline kernel
    notes: list[str] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        """Both sides ran kernels for it (else there is no gain to tell)."""
        return bool(self.fused_kernels) and bool(self.baseline_kernels)

    @property
    def gain_us(self) -> float | None:
        """Time saved per step (baseline - fused): negative when the fusion lost."""
        return round(self.baseline_us - self.fused_us, 3) if self.measured else None

    @property
    def ratio(self) -> float | None:
        """Baseline over fused time (>1: the fused kernels are faster)."""
        return round(self.baseline_us / self.fused_us, 3) if self.measured and self.fused_us > 0 else None

    def missing_text(self) -> str:
        """`3 of 5 original nodes have no kernel in the baseline: Identity ×2, Const` ('' when none)."""
        if not self.missing:
            return ""
        counts = Counter(op for op in self.missing.values() if op)
        types = ", ".join([op if n == 1 else f"{op} ×{n}" for op, n in counts.most_common()]
                          + [name for name, op in self.missing.items() if not op])  # no graph: their names
        expected = len(self.originals) - len(self.constant)
        verb = "has" if len(self.missing) == 1 else "have"
        return f"{len(self.missing)} of {expected} original nodes {verb} no kernel in the baseline: {types}"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "source": self.source, "matches": list(self.matches),
                "fused_nodes": list(self.fused_nodes), "fused_kernels": list(self.fused_kernels),
                "fused_us": self.fused_us, "originals": list(self.originals),
                "baseline_kernels": list(self.baseline_kernels), "baseline_us": self.baseline_us,
                "gain_us": self.gain_us, "ratio": self.ratio, "inside": self.inside, "constant": list(self.constant),
                "missing": self.missing, "missing_text": self.missing_text(), "notes": self.notes}


@dataclass
class GainReport:
    """Every fusion's gain, winners first; unmeasured ones last."""

    rows: list[FusionGain] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def total_gain_us(self) -> float:
        return round(sum(r.gain_us for r in self.rows if r.gain_us is not None), 3)

    def to_json(self) -> dict[str, Any]:
        return {"total_gain_us": self.total_gain_us(), "rows": [r.to_json() for r in self.rows], "notes": self.notes}


# ---- which nodes each kernel ran ---------------------------------------------------------------
@dataclass
class Coverage:
    """One run on one graph: each kernel's time per step and the graph nodes it ran."""

    kernel_us: dict[str, float]
    nodes_of: dict[str, set[str]]  # kernel -> nodes it ran (its own node and those inside it)
    kernels_of: dict[str, list[str]]  # node -> kernels that ran it
    inside: dict[str, str]  # node -> the composed kernel it ran inside
    constant: set[str]


def _kernel_key(kernel: KernelStat) -> str:
    return kernel.kernel if kernel.device in ("", None) else f"{kernel.kernel}@{kernel.device}"


def constant_nodes(graph: Graph) -> set[str]:
    """Nodes whose every data input is a constant, transitively (Grappler folds them): Consts too."""
    found: set[str] = set()
    for name in graph.topological_order():
        op = graph.op(name)
        inputs = graph.inputs(name)
        if op == "Const" or (inputs and op not in ("Placeholder", "PlaceholderWithDefault")
                             and all(ref.node in found for ref in inputs)):
            found.add(name)
    return found


def coverage(run: GraphRun, graph: Graph | None) -> Coverage:
    """Which nodes each kernel of `run` ran on `graph` (without a graph: only each kernel's own node)."""
    kernel_us: dict[str, float] = defaultdict(float)
    nodes_of: dict[str, set[str]] = defaultdict(set)
    kernels_of: dict[str, list[str]] = defaultdict(list)
    ops: dict[str, str] = {}
    for kernel in run.kernels:
        key = _kernel_key(kernel)
        kernel_us[key] += per_step_us(kernel, run)
        ops[key] = kernel.op_type
        node = kernel.node if kernel.node is not None else (kernel.kernel if graph is None else None)
        if node is not None:
            nodes_of[key].add(node)
            if key not in kernels_of[node]:
                kernels_of[node].append(key)
    inside: dict[str, str] = {}
    constant = constant_nodes(graph) if graph is not None else set()
    fed = set(graph.placeholders()) if graph is not None else set()
    for name in (graph.topological_order() if graph is not None else ()):
        if (name in kernels_of or name in constant or name in fed or graph.op(name) in BOOKKEEPING_OPS
                or graph.op(name) in FORWARDING_OPS):
            continue
        composed = []
        for host in (_consumer_host(graph, name, kernels_of), _producer_host(graph, name, kernels_of, constant)):
            composed = [k for k in kernels_of.get(host, ()) if is_composed(ops[k], graph.op(host))] if host else []
            if composed:
                break
        if composed:
            inside[name] = composed[0]
            for key in composed:
                nodes_of[key].add(name)
            kernels_of[name] = composed
    return Coverage(dict(kernel_us), dict(nodes_of), dict(kernels_of), inside, constant)


def _consumer_host(graph: Graph, name: str, kernels_of: Mapping[str, list[str]]) -> str | None:
    """The node whose kernel `name` could have run inside: down sole consumers that ran no kernel."""
    seen = {name}
    while True:
        readers = {c.node for c in graph.consumers(name)}
        if len(readers) != 1:
            return None
        (name,) = readers
        if name in kernels_of:
            return name
        if name in seen:
            return None
        seen.add(name)


def _producer_host(graph: Graph, name: str, kernels_of: Mapping[str, list[str]], constant: set[str]) -> str | None:
    """The producer of `name`'s one non-constant input, when `name` alone reads it and it ran a kernel."""
    producers = {ref.node for ref in graph.inputs(name) if ref.node not in constant}
    if len(producers) != 1:
        return None
    (producer,) = producers
    readers = {c.node for c in graph.consumers(producer)}
    return producer if readers == {name} and producer in kernels_of else None


# ---- the fusions ---------------------------------------------------------------------------------
@dataclass
class _Unit:
    """What one fusion (or a toolchain fused op) stands for, before kernels are counted."""

    label: str
    source: str
    matches: list[str]
    fused_nodes: list[str]
    originals: list[str]
    notes: list[str] = field(default_factory=list)


def provenance_units(pipeline: PipelineResult) -> list[_Unit]:
    """A unit per fused-graph node a match made or changed (constants and bookkeeping left out)."""
    provenance, fused, original = pipeline.provenance, pipeline.fused, pipeline.original
    if provenance is None:
        return []
    match_ids = {(r.pass_id, m.index): m.id for r in pipeline.results for m in r.matches}
    folded = constant_nodes(fused)
    units: dict[str, _Unit] = {}
    for name in fused.topological_order():
        rewrite = provenance.rewrite_of(name)
        if (rewrite is None or rewrite.match_index < 0 or name in folded
                or fused.op(name) in BOOKKEEPING_OPS or provenance.status(name) == "unchanged"):
            continue
        match = match_ids.get((rewrite.pass_id, rewrite.match_index), f"{rewrite.pass_id}#{rewrite.match_index}")
        unit = units.setdefault(match, _Unit(match, PROVENANCE, [match], [], []))
        unit.fused_nodes.append(name)
        unit.originals = [n for n in original.in_graph_order({*unit.originals, *provenance.origins(name)})
                          if n in original]
    return list(units.values())


def toolchain_units(records: Mapping[str, Sequence[str]]) -> list[_Unit]:
    """A unit per fused op the toolchain names with its original ops (fusion_op rows, a dump's records)."""
    return [_Unit(fused, TOOLCHAIN, [], [fused], list(dict.fromkeys(originals)))
            for fused, originals in records.items() if originals]


def fusion_op_map(rows: Iterable[FusionOpRecord]) -> dict[str, tuple[str, ...]]:
    """fusion_op rows as fused op -> original ops (a fused op listed twice keeps every original)."""
    found: dict[str, tuple[str, ...]] = {}
    for row in rows:
        found[row.fusion_op] = tuple(dict.fromkeys(found.get(row.fusion_op, ()) + row.original_ops))
    return found


def _groups(units: list[_Unit], fused: Coverage, baseline: Coverage) -> list[list[_Unit]]:
    """Units joined when they share an original node or a kernel on either side (union-find)."""
    parent = list(range(len(units)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[str, str], int] = {}
    for i, unit in enumerate(units):
        keys = [("original", n) for n in unit.originals]
        keys += [("fused", k) for n in unit.fused_nodes for k in fused.kernels_of.get(n, ())]
        keys += [("baseline", k) for n in unit.originals for k in baseline.kernels_of.get(n, ())]
        for key in keys:
            if key in owner:
                parent[root(i)] = root(owner[key])
            else:
                owner[key] = i
    grouped: dict[int, list[_Unit]] = defaultdict(list)
    for i, unit in enumerate(units):
        grouped[root(i)].append(unit)
    return list(grouped.values())


def _gain(group: list[_Unit], fused: Coverage, baseline: Coverage, original: Graph | None) -> FusionGain:
    matches = list(dict.fromkeys(m for u in group for m in u.matches))
    fused_nodes = list(dict.fromkeys(n for u in group for n in u.fused_nodes))
    originals = list(dict.fromkeys(n for u in group for n in u.originals))
    fused_kernels = list(dict.fromkeys(k for n in fused_nodes for k in fused.kernels_of.get(n, ())))
    baseline_kernels = list(dict.fromkeys(k for n in originals for k in baseline.kernels_of.get(n, ())))
    constant = [n for n in originals if n in baseline.constant]
    missing = {n: (original.op(n) if original is not None and n in original else "") for n in originals
               if n not in baseline.kernels_of and n not in constant
               and not (original is not None and n in original and original.op(n) in BOOKKEEPING_OPS)}
    constant += [n for n in originals if original is not None and n in original and n not in constant
                 and original.op(n) in BOOKKEEPING_OPS]
    label = group[0].label + (f" (+{len(group) - 1} more)" if len(group) > 1 else "")
    notes = [note for u in group for note in u.notes]
    inside = {n: k for n in originals if (k := baseline.inside.get(n))}
    already = [k for n in fused_nodes for k in baseline.kernels_of.get(n, ())] if not baseline_kernels else []
    if already:  # the baseline ran it fused too (a general scope pass the baseline cannot switch off)
        baseline_kernels = list(dict.fromkeys(already))
        inside.update(dict.fromkeys(missing, baseline_kernels[0]))
        missing = {}
        notes.append(f"the baseline ran it as one kernel too ({_names(baseline_kernels)}, named like the fused "
                     "node): its originals ran inside that")
    if len(group) > 1:
        notes.append("compared as one group: " + ", ".join(u.label for u in group[1:])
                     + f" share{'s' if len(group) == 2 else ''} its original nodes or kernels")
    outside_before = sorted({n for k in baseline_kernels for n in baseline.nodes_of.get(k, ())}
                            - set(originals) - set(fused_nodes))
    outside_after = sorted({n for k in fused_kernels for n in fused.nodes_of.get(k, ())} - set(fused_nodes))
    if outside_before and outside_before == outside_after:
        notes.append(f"includes {_names(outside_before)}: run in the same kernel on both sides")
    else:
        if outside_before:
            notes.append(f"the baseline's kernels also run {_names(outside_before)}, outside this fusion")
        if outside_after:
            notes.append(f"the fused kernels also run {_names(outside_after)}, outside this fusion")
    if not fused_kernels:
        notes.append(f"no kernel of the fused run is mapped to {_names(fused_nodes)}")
    return FusionGain(
        label=label, source=group[0].source, matches=tuple(matches), fused_nodes=tuple(fused_nodes),
        fused_kernels=tuple(fused_kernels), fused_us=round(sum(fused.kernel_us[k] for k in fused_kernels), 3),
        originals=tuple(originals), baseline_kernels=tuple(baseline_kernels),
        baseline_us=round(sum(baseline.kernel_us[k] for k in baseline_kernels), 3),
        inside=inside, constant=tuple(constant),
        missing=missing, notes=notes)


def _names(names: Sequence[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _sort_key(row: FusionGain) -> tuple[bool, float, str]:
    return (row.gain_us is None, -(row.gain_us or 0.0), row.label)


def fusion_gains(baseline: GraphRun, fused: GraphRun, pipeline: PipelineResult | None = None, *,
                 toolchain: Mapping[str, Sequence[str]] | None = None) -> GainReport:
    """Each fusion's gain from a baseline run (of the original graph) and a fused run.

    The fusions are the pipeline's (its provenance) and the toolchain's (`toolchain`: fused op ->
    original ops, e.g. `fusion_op_map`); a FuseLens fused node the toolchain also names is counted
    once, as the toolchain's. Without the pipeline, nodes are the kernels' own names (no constant or
    composed-kernel detection)."""
    original_graph = pipeline.original if pipeline is not None else None
    fused_graph = pipeline.fused if pipeline is not None else None
    before = _with_kernel_names(coverage(baseline, original_graph), baseline)
    after = _with_kernel_names(coverage(fused, fused_graph), fused)
    units = toolchain_units(toolchain or {})
    own = provenance_units(pipeline) if pipeline is not None else []
    twins = {n: u for u in own for n in u.fused_nodes}
    for unit in units:
        twin = twins.get(unit.fused_nodes[0])
        if twin is not None:
            _join_twin(unit, twin, original_graph)
        elif pipeline is not None:
            unit.matches = _matches_holding(pipeline, unit.originals)
    named = {n for u in units for n in u.fused_nodes}
    units += [u for u in own if not named & set(u.fused_nodes)]
    report = GainReport()
    if not units:
        report.notes.append("no fusion to compare: the fused graph has no fused node"
                            + (" and no toolchain record names one" if toolchain is not None else ""))
    if toolchain is not None and not toolchain:
        report.notes.append("the toolchain's records name no fused op (no fusion_op_*.csv or dump came back)")
    report.rows = sorted((_gain(group, after, before, original_graph) for group in _groups(units, after, before)),
                         key=_sort_key)
    return report


def _join_twin(unit: _Unit, twin: _Unit, original: Graph | None) -> None:
    """A toolchain fused op that is also a FuseLens fused node: its originals are both's, in the original
    graph's names (GE was handed AMCT's folded graph, so fusion_op may name `conv/BiasAdd`, which FuseLens's
    provenance traces back to the conv and its BatchNorm)."""
    foreign = [n for n in unit.originals if original is not None and n not in original]
    unit.originals = list(dict.fromkeys([*twin.originals, *(n for n in unit.originals if n not in foreign)]))
    unit.matches = twin.matches
    if foreign:
        unit.notes.append(f"the toolchain names {_names(foreign)}, not in the original graph: counted through "
                          f"FuseLens's provenance of {unit.fused_nodes[0]}")


def _with_kernel_names(cover: Coverage, run: GraphRun) -> Coverage:
    """Let a kernel be found by its own name too: a toolchain fused op is named by its kernel, and a kernel the
    graph has no node for (`encoder/LayerNorm` of a scope pass the baseline ran) by the fused node's name."""
    for kernel in run.kernels:
        found = cover.kernels_of.setdefault(kernel.kernel, [])
        if _kernel_key(kernel) not in found:
            found.append(_kernel_key(kernel))
    return cover


def _matches_holding(pipeline: PipelineResult, originals: Sequence[str]) -> list[str]:
    """The FuseLens matches whose nodes the toolchain's fused op holds, most shared nodes first."""
    wanted = set(originals)
    shared = [(len(wanted & set(m.nodes)), m.id) for r in pipeline.results for m in r.matches if wanted & set(m.nodes)]
    return [match for _, match in sorted(shared, key=lambda s: -s[0])]


def run_gains(result: RunResult, pipeline: PipelineResult | None = None, *,
              toolchain: Mapping[str, Sequence[str]] | None = None) -> GainReport | None:
    """The gains of a run with both an `original` and a `fused` graph (None when it has one side only)."""
    if "original" not in result.graphs or "fused" not in result.graphs:
        return None
    return fusion_gains(result.graphs["original"], result.graphs["fused"], pipeline, toolchain=toolchain)


def shown_rows(report: GainReport, shown: int) -> list[FusionGain]:
    """Every row when at most `shown`; else the measured ones at both ends: the biggest wins and the worst losses."""
    if len(report.rows) <= shown:
        return list(report.rows)
    measured = [r for r in report.rows if r.gain_us is not None]
    return measured if len(measured) <= shown else measured[:shown - shown // 2] + measured[-(shown // 2):]


def headline(report: GainReport) -> str:
    """`52 of 52 fusions measured: 50 faster, 2 slower; +1.2 ms/step in all`."""
    measured = [r for r in report.rows if r.gain_us is not None]
    return (f"{len(measured)} of {len(report.rows)} fusions measured: {sum(r.gain_us > 0 for r in measured)} faster, "
            f"{sum(r.gain_us < 0 for r in measured)} slower; {report.total_gain_us():+.1f} us/step in all "
            "(baseline - fused kernel time)")


def format_gains(report: GainReport, *, shown: int = 12) -> list[str]:
    """The report as text lines: winners first, losers last, each with what could not be found."""
    lines = [f"  did each fusion pay? {headline(report)}"]
    rows = shown_rows(report, shown)
    for row in rows:
        if row.gain_us is None:
            figure = f"{'not measured':>28s}"
        else:
            ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "—"
            figure = f"{row.gain_us:+10.1f} us {ratio:>7s} {row.baseline_us:8.1f} -> {row.fused_us:.1f}"
        lines.append(f"      {figure}  {row.label}")
        details = [t for t in (row.missing_text(), *row.notes) if t]
        lines += [f"          {text}" for text in details]
    if len(rows) < len(report.rows):
        lines.append(f"      ... {len(report.rows) - len(rows)} more fusions (--json for all)")
    lines += [f"      {note}" for note in report.notes]
    return lines


# ---- profiles: two of them, and the toolchain's records beside them ---------------------------------------
def toolchain_records(path: str | os.PathLike[str], original: Graph | None = None) -> dict[str, tuple[str, ...]] | None:
    """The toolchain's fused op -> original ops map from a results folder (its fused side's when it holds
    original/ and fused/): the fusion_op_*.csv rows, then, with the model, the fused ops of the last GE dump
    stage of its graph that fusion_op does not list (`_datadump_original_op_names`); None when neither is there."""
    from fuselens.core.measure.msprof import find_profile_files, read_fusion_op

    folder = Path(path)
    if (folder / "fused").is_dir() and (folder / "original").is_dir():
        folder = folder / "fused"
    if not folder.is_dir():
        return None
    files = find_profile_files(folder)["fusion_op"]
    found = fusion_op_map(r for f in files for r in read_fusion_op(f))
    dumped = dump_records(folder, original) if original is not None else {}
    found.update({fused: originals for fused, originals in dumped.items() if fused not in found})
    return found if files or dumped else None


def dump_records(folder: Path, original: Graph) -> dict[str, tuple[str, ...]]:
    """Fused op -> original ops of the last dump stage of the graph that is `original` (empty without dumps)."""
    from fuselens.core.ascend.ge.provenance import provenance_table
    from fuselens.core.ascend.ge.stages import scan_dump_folder
    from fuselens.session.npu_check.evidence import pick_stage

    try:
        chosen = pick_stage(scan_dump_folder(folder), original, None, [])
    except FuseLensError:
        return {}  # no dumps came back: they are optional
    if chosen is None:
        return {}
    return {name: record.original_names for name, record in provenance_table(chosen[1]).items() if record.fused}


def paired_profiles(baseline: str | os.PathLike[str], fused: str | os.PathLike[str],
                    original_graph: Graph | None = None, fused_graph: Graph | None = None) -> RunResult:
    """One run of two imported profiles (or run files): `baseline` of the original graph, `fused` of the fused
    one, each mapped to its graph's nodes as the window maps an import."""
    from fuselens.core.ascend.profile_import import import_run_file

    before = _one_side(import_run_file(baseline, original_graph, None), "original", baseline)
    after = _one_side(import_run_file(fused, None, fused_graph), "fused", fused)
    steps = max(before.steps, after.steps)
    return RunResult(model=str(fused), backend=f"two profiles (baseline {baseline})", steps=steps, warmup=0,
                     traced=True, graphs={"original": replace(before, label="original"),
                                          "fused": replace(after, label="fused")})


def _one_side(result: RunResult, side: str, path: str | os.PathLike[str]) -> GraphRun:
    """The run of `side` in an import: that graph when it has it, else its only one."""
    if side in result.graphs:
        return result.graphs[side]
    if len(result.graphs) == 1:
        return next(iter(result.graphs.values()))
    raise FuseLensError(f"{path}: holds runs of {', '.join(result.graphs)}, not one {side} run")
