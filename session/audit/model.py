"""One model's audit, in the process that does it (an audit worker): load, fuse, count, and with the
task's options compare and time the original and the fused graph in the isolated runner.

Everything comes back as one JSON-able row (`audit_model`); a model that cannot be read is a row with
its one-line reason. Crashes and hangs are the caller's to catch (session/audit/worker.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fuselens.core.errors import FuseLensError
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult
from fuselens.session.audit.reasons import reason_kind, top_by_kind

if TYPE_CHECKING:
    from fuselens.core.runtime.runner import RunnerProcess

NUMERIC_SEED = 0
_KILLED_BY = re.compile(r"child process died from signal (SIG\w+)")
PICTURE_CONTEXT_BOXES = 40  # a near miss's picture draws its nodes and their neighbours up to this many boxes


@dataclass(frozen=True)
class AuditTask:
    """What one worker does for one model; picklable (a Dask worker receives it as it is)."""

    name: str  # the row's name: a sample name or the path as found under the folder given
    spec: str  # what load_model reads: an absolute path or a sample name
    config: PassConfig
    numeric: bool = False
    run: bool = False
    steps: int = 20
    pictures: int = 0  # near misses per model drawn as SVG (the HTML report's); 0: none
    timeout: float = 600.0  # the whole model's, enforced by the caller; the runner's own is the same


def audit_model(task: AuditTask, stage: Callable[[str], None] = lambda _: None,
                runner: RunnerProcess | None = None) -> dict[str, Any]:
    """The row of one model. `stage(text)` tells what it is doing (the progress bar's "in flight");
    `runner` is a RunnerProcess to reuse for the numeric check and the timed run."""
    from fuselens.core.formats.loaders import load_model
    from fuselens.passes.pipeline import run_pipeline

    start = time.perf_counter()
    row: dict[str, Any] = {"model": task.name, "spec": task.spec, "status": "ok", "reason": ""}
    stage("loading")
    try:
        model = load_model(task.spec)
    except FuseLensError as e:
        return {**row, "status": "unreadable", "reason": str(e), "seconds": _since(start)}
    row["format"] = model.format
    stage("fusing")
    pipeline = run_pipeline(model.graph, task.config, explain=False)
    row.update(_fusion(pipeline))
    if task.pictures:
        stage("drawing near misses")
        _draw_near_misses(pipeline, row["near_misses"], task.pictures)
    if task.numeric or task.run:
        stage("running" if task.run else "comparing")
        row.update(_run(task, pipeline, runner))
    row["seconds"] = _since(start)
    return row


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 3)


def _fusion(pipeline: PipelineResult) -> dict[str, Any]:
    """Matches and near misses per pass, nodes before and after, the share of nodes inside a fusion and
    the predicted kernels."""
    from fuselens.session.npu_check.predictions import predictions

    original, provenance = pipeline.original, pipeline.provenance
    assert provenance is not None
    fused_nodes = sum(1 for n in original.nodes if provenance.original_status(n) != "unchanged")
    passes = {r.pass_id: {"family": pipeline.config.get_pass(r.pass_id).family, "matches": r.match_count,
                          "near_misses": r.near_miss_count, "skipped": r.skipped_count, "errors": list(r.errors)}
              for r in pipeline.results}
    near_misses = []
    for result in pipeline.results:
        for near in result.near_misses:
            kind = reason_kind(near.reason, (near.anchor, *near.nodes, *near.culprit.nodes))
            near_misses.append({"pass": result.pass_id, "anchor": near.anchor, "reason": near.reason,
                                "kind": kind.id, "kind_title": kind.title, "nodes": len(near.nodes),
                                "culprit": list(near.culprit.nodes)})
    kernels = [{"pass": p.pass_id, "anchor": p.anchor, "node": p.node, "op_type": p.op_type,
                "original_nodes": len(p.originals)} for p in predictions(pipeline)]
    return {"nodes_before": len(original), "nodes_after": len(pipeline.fused),
            "fused_share": round(fused_nodes / len(original), 4) if len(original) else 0.0,
            "fuse_seconds": round(pipeline.seconds, 3), "passes": passes, "near_misses": near_misses,
            "kernels": kernels, "errors": pipeline.errors}


def _draw_near_misses(pipeline: PipelineResult, near_misses: list[dict[str, Any]], count: int) -> None:
    """An inline SVG of the graph around each of the model's top `count` near misses (one per reason kind):
    its nodes outlined, the culprit's in red (what broke the match)."""
    from fuselens.core.layout import visible_graph
    from fuselens.core.layout.svg import layout_svg
    from fuselens.session.lesson import _around, _sub_layout

    graphs = [pipeline.original, pipeline.fused]  # a near miss on nodes an earlier pass made is in the fused one
    full = {id(g): visible_graph(g) for g in graphs}
    found = {(r.pass_id, n.anchor): n for r in pipeline.results for n in r.near_misses}
    for row in (near_misses[i] for i in top_by_kind(near_misses, count)):
        near = found[(row["pass"], row["anchor"])]
        graph = next((g for g in graphs if near.anchor in g or any(n in g for n in near.nodes)), None)
        if graph is None:
            continue
        core = {n for n in (near.anchor, *near.nodes) if n in graph}
        layout = _sub_layout(full[id(graph)], _around(graph, core), core)
        owner = full[id(graph)].owner
        status = {owner[n]: "modified" for n in core if n in owner}
        status.update({owner[n]: "removed" for n in near.culprit.nodes if n in owner})
        row["svg"] = layout_svg(layout, status, title=f"near miss {row['pass']}:{row['anchor']}")


def _run(task: AuditTask, pipeline: PipelineResult, runner: RunnerProcess | None) -> dict[str, Any]:
    """The numeric check (one step on seeded random inputs) and, with `task.run`, the timed steps."""
    from fuselens.core.runtime.runner import run
    from fuselens.session.run_workflow import RunSettings, run_request

    settings = RunSettings(steps=task.steps if task.run else 1, warmup=2 if task.run else 0, seed=NUMERIC_SEED,
                           timeout=task.timeout, trace=False)
    out: dict[str, Any] = {}
    try:
        result = run(run_request(pipeline.original, pipeline, task.name, settings), process=runner)
    except FuseLensError as e:
        failed = {"numeric": {"error": str(e)}} if task.numeric else {"timing": {"error": str(e)}}
        killed = _KILLED_BY.search(str(e))  # TensorFlow crashed the runner's child: the model crashed
        return {**failed, "status": f"crashed ({killed.group(1)})", "reason": str(e)} if killed else failed
    if task.numeric:
        finite = [c for c in result.comparison if c.max_abs is not None]
        out["numeric"] = {
            "outputs": len(result.comparison), "allclose": bool(result.allclose),
            "max_abs": max((c.max_abs for c in finite), default=None),
            "max_rel": max((c.max_rel for c in finite if c.max_rel is not None), default=None),
            "nonfinite": sum(c.nonfinite for c in result.comparison)}
    if task.run:
        before, after = (result.graphs[k].summary()["step_median_us"] for k in ("original", "fused"))
        out["timing"] = {"steps": task.steps, "original_us": before, "fused_us": after,
                         "speedup": result.speedup()}
    return out
