"""The fuse report: per pass its matches and near misses, and op histograms before and after."""

from __future__ import annotations

from typing import Any

from fuselens.passes.base import SHOWN_NEAR_MISSES, PassResult
from fuselens.passes.pipeline import PipelineResult


def op_count_diff(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """tf2onnx-style lines: 'FusedBatchNormV3 -52 (52->0)', biggest change first."""
    ops = set(before) | set(after)
    changes = [(after.get(op, 0) - before.get(op, 0), op) for op in ops]
    return [
        f"{op} {delta:+d} ({before.get(op, 0)}->{after.get(op, 0)})"
        for delta, op in sorted(changes, key=lambda c: (-abs(c[0]), c[1]))
        if delta
    ]


def build_report(pipeline: PipelineResult, *, model: str = "") -> dict[str, Any]:
    before = pipeline.original.op_histogram()
    after = pipeline.fused.op_histogram()
    return {
        "model": model or pipeline.original.source,
        "nodes_before": len(pipeline.original),
        "nodes_after": len(pipeline.fused),
        "seconds": round(pipeline.seconds, 6),
        "passes": [{**_pass_json(r), "family": pipeline.config.get_pass(r.pass_id).family} for r in pipeline.results],
        "ops_before": before,
        "ops_after": after,
        "op_diff": op_count_diff(before, after),
    }


def _pass_json(result: PassResult) -> dict[str, Any]:
    """The pass's JSON with, per match, the nodes it changed (before) and what stands there now (after)."""
    data = result.to_json()
    after = {rewrite.match_index: list(rewrite.after) for rewrite in result.rewrites}
    for found in data["matches"]:
        found["nodes_before"] = found["nodes"]
        found["nodes_after"] = after.get(found["index"], [])
    return data


def format_report(report: dict[str, Any]) -> str:
    return _summary(report["model"], report["nodes_before"], report["nodes_after"], report["seconds"],
                    [(p["pass"], len(p["matches"]), [(n["anchor"], n["reason"]) for n in p["near_misses"]],
                      len(p["near_misses"]), len(p["skipped"]), p["errors"]) for p in report["passes"]],
                    report["op_diff"])


def format_pipeline(pipeline: PipelineResult, *, model: str = "") -> str:
    """format_report(build_report(pipeline)) without the report: no JSON of every match (a big graph's
    matches cost megabytes as JSON, and the printed summary only counts them)."""
    return _summary(model or pipeline.original.source, len(pipeline.original), len(pipeline.fused),
                    round(pipeline.seconds, 6),
                    [(r.pass_id, r.match_count, [(n.anchor, n.reason) for n in r.near_misses[:SHOWN_NEAR_MISSES]],
                      r.near_miss_count, r.skipped_count, r.errors) for r in pipeline.results],
                    op_count_diff(pipeline.original.op_histogram(), pipeline.fused.op_histogram()))


def _summary(model: str, nodes_before: int, nodes_after: int, seconds: float,
             passes: list[tuple[str, int, list[tuple[str, str]], int, int, list[str]]], op_diff: list[str]) -> str:
    """The printed summary: per pass (id, matches, near misses as (anchor, reason) (the first are shown),
    how many near misses, skipped, errors)."""
    lines = [f"{model}: {nodes_before} -> {nodes_after} nodes in {seconds * 1000:.0f} ms"]
    for pass_id, matches, near_misses, near_miss_count, skipped, errors in passes:
        counts = f"{matches:4d} matches {near_miss_count:4d} near misses"
        lines.append(f"  {pass_id:40s} {counts}" + (f" {skipped} skipped" if skipped else ""))
        lines += [f"      ! {error}" for error in errors]
        lines += [f"      ~ {anchor}: {reason}" for anchor, reason in near_misses[:SHOWN_NEAR_MISSES]]
        if near_miss_count > SHOWN_NEAR_MISSES:
            lines.append(f"      ~ ... {near_miss_count - SHOWN_NEAR_MISSES} more (--report FILE or --json lists "
                         "them all)")
    if op_diff:
        lines.append("op counts: " + ", ".join(op_diff))
    return "\n".join(lines)
