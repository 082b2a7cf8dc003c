"""Two pass configurations of one model side by side: matches gained and lost per pass, nodes and
kernels per side, and (after a run of both fused graphs against each other) step times and
per-kernel differences. The CLI's `diff-config` and the window's "Compare with current…" show it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fuselens.core.graph import Graph
from fuselens.core.measure.result import RunResult
from fuselens.core.runtime.runner import RunRequest, run
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult
from fuselens.session.layerwise import Fuse

NO_KERNEL_OPS = frozenset({"Const", "Identity", "NoOp", "Placeholder"})  # ops that launch no kernel of their own
SIDE_LABELS = ("original", "fused")  # the runner's labels for side A and side B


@dataclass
class PassDiff:
    pass_id: str
    a: int  # matches with configuration A
    b: int
    gained: list[str]  # match ids B fuses and A does not
    lost: list[str]  # match ids A fuses and B does not

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class KernelDiff:
    kernel: str
    a_us: float | None  # time per step; None: the kernel does not run on that side
    b_us: float | None

    @property
    def delta_us(self) -> float:
        return (self.b_us or 0.0) - (self.a_us or 0.0)


@dataclass
class ConfigDiff:
    a_label: str
    b_label: str
    passes: list[PassDiff]
    nodes: tuple[int, int]  # fused graph nodes per side
    ops_run: tuple[int, int]  # nodes that launch a kernel (not Const, Identity, NoOp, Placeholder)
    step_us: tuple[float, float] | None = None  # median step time per side, after a run
    kernels: tuple[int, int] | None = None  # kernels seen per side, after a run
    kernel_diffs: list[KernelDiff] = field(default_factory=list)  # biggest change first
    allclose: bool | None = None  # B's outputs against A's, after a run

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a_label, "b": self.b_label, "passes": [p.to_json() for p in self.passes],
                "nodes": list(self.nodes), "ops_run": list(self.ops_run),
                "step_us": list(self.step_us) if self.step_us else None,
                "kernels": list(self.kernels) if self.kernels else None, "allclose": self.allclose,
                "kernel_diffs": [{"kernel": k.kernel, "a_us": k.a_us, "b_us": k.b_us, "delta_us": k.delta_us}
                                 for k in self.kernel_diffs]}


def diff_pipelines(a: PipelineResult, b: PipelineResult, a_label: str = "A", b_label: str = "B") -> ConfigDiff:
    """What B fuses that A does not and the other way round, per pass in pipeline order."""
    ids = list(dict.fromkeys([r.pass_id for r in a.results] + [r.pass_id for r in b.results]))
    passes = []
    for pass_id in ids:
        in_a, in_b = ([m.id for m in r.matches] if (r := p.result(pass_id)) else [] for p in (a, b))
        passes.append(PassDiff(pass_id, len(in_a), len(in_b), [i for i in in_b if i not in set(in_a)],
                               [i for i in in_a if i not in set(in_b)]))
    return ConfigDiff(a_label, b_label, passes, (len(a.fused), len(b.fused)),
                      (_ops_run(a.fused), _ops_run(b.fused)))


def _ops_run(graph: Graph) -> int:
    return sum(1 for node in graph if node.op not in NO_KERNEL_OPS)


def diff_configs(graph: Graph, a: PassConfig, b: PassConfig, fuse: Fuse, a_label: str = "A",
                 b_label: str = "B") -> tuple[ConfigDiff, PipelineResult, PipelineResult]:
    first, second = fuse(graph, a), fuse(graph, b)
    return diff_pipelines(first, second, a_label, b_label), first, second


def run_both(diff: ConfigDiff, a: PipelineResult, b: PipelineResult, *, steps: int = 30, warmup: int = 3,
             on_progress: Callable[[Any], None] | None = None, **request: Any) -> RunResult:
    """Run A's fused graph against B's (step by step in turn) and add the timings to `diff`."""
    result = run(RunRequest(original=a.fused, fused=b.fused, steps=steps, warmup=warmup, interleave=True,
                            **request), on_progress)
    add_run(diff, result)
    return result


def add_run(diff: ConfigDiff, result: RunResult) -> None:
    sides = [result.graphs[label] for label in SIDE_LABELS]
    diff.step_us = tuple(s.summary()["step_median_us"] for s in sides)
    diff.kernels = tuple(len(s.kernels) for s in sides)
    diff.allclose = result.allclose
    per_step = [{k.kernel: k.total_us / max(s.steps, 1) for k in s.kernels} for s in sides]
    names = list(dict.fromkeys([*per_step[0], *per_step[1]]))
    diff.kernel_diffs = sorted((KernelDiff(n, per_step[0].get(n), per_step[1].get(n)) for n in names),
                               key=lambda k: -abs(k.delta_us))


def format_diff(diff: ConfigDiff, limit: int = 10) -> str:
    a, b = diff.a_label, diff.b_label
    lines = [f"A = {a}", f"B = {b}",
             f"fused graph: {diff.nodes[0]} nodes, {diff.ops_run[0]} ops that run (A) vs "
             f"{diff.nodes[1]} nodes, {diff.ops_run[1]} ops that run (B)"]
    changed = [p for p in diff.passes if p.gained or p.lost]
    for p in diff.passes:
        if p.a or p.b:
            lines.append(f"  {p.pass_id:36s} {p.a:4d} -> {p.b:4d} matches"
                         + (f"  (+{len(p.gained)} gained, -{len(p.lost)} lost)" if p.gained or p.lost else ""))
    for p in changed:
        for verb, ids in (("gained", p.gained), ("lost", p.lost)):
            for match_id in ids[:limit]:
                lines.append(f"    {verb} {match_id}")
            if len(ids) > limit:
                lines.append(f"    ... {len(ids) - limit} more {verb}")
    if not changed:
        lines.append("  the two configurations fuse the same matches")
    if diff.step_us is not None:
        ratio = diff.step_us[0] / diff.step_us[1] if diff.step_us[1] else float("nan")
        lines.append(f"run: A {diff.step_us[0]:.1f} us/step, {diff.kernels[0]} kernels; B {diff.step_us[1]:.1f} "
                     f"us/step, {diff.kernels[1]} kernels; B is {ratio:.2f}x A's speed; outputs "
                     + ("agree" if diff.allclose else "DIFFER"))
        for k in diff.kernel_diffs[:limit]:
            before = f"{k.a_us:.1f}" if k.a_us is not None else "-"
            after = f"{k.b_us:.1f}" if k.b_us is not None else "-"
            lines.append(f"  {k.delta_us:+9.1f} us/step  {before:>9s} -> {after:>9s}  {k.kernel}")
    return "\n".join(lines)
