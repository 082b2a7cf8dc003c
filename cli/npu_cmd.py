"""`stages`, `diff` and `ledger`: reading what the NPU toolchain brought back (GE dumps, fusion_result.json).

`import-profile --model` sets those records against FuseLens's prediction (cli/common.py's `import_profile`),
and `fuse --ledger` writes FuseLens's own ledger.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fuselens.cli.common import fuse_model, print_json
from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.ascend.ge.diff import diff_graphs, format_diff
from fuselens.core.ascend.ge.fusion_result import (
    NULL,
    FusionResult,
    GraphLedger,
    LedgerRow,
    fusion_result_json,
    read_fusion_result,
)
from fuselens.core.ascend.ge.open import open_graph
from fuselens.core.ascend.ge.stages import scan_dump_folder
from fuselens.core.errors import FuseLensError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stages", help="list the graphs and stages of a folder of GE graph dumps, in order")
    p.add_argument("folder", help="the DUMP_GRAPH_PATH folder (or one pid_*_deviceid_* folder in it)")
    p.add_argument("--no-load", action="store_true", help="list file names only; do not read the dumps")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_stages)

    p = sub.add_parser("diff", help="nodes removed, added and changed between two graphs, grouped by pass")
    p.add_argument("before", help="a model, a sample name, a GE dump file, or DIR:STAGE (a stage of a dump folder)")
    p.add_argument("after", help="the same kinds as BEFORE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_diff)

    p = sub.add_parser("ledger", help="read a fusion_result.json; with --model, compare it with FuseLens's ledger")
    p.add_argument("fusion_result", metavar="FUSION_RESULT.json", help="the toolchain's fusion_result.json")
    p.add_argument("--model", help="compare with what FuseLens predicts for this model under the pass selection")
    p.add_argument("--graph", metavar="KEY", help="show (and compare) this graph alone, in any spelling: S_G, "
                                                  "session_and_graph_id_S_G, or G when one session has it; "
                                                  "default: every graph, the most rewrites first (and the "
                                                  "one with the most is compared)")
    add_pass_selection_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_ledger)


# ---- stages ------------------------------------------------------------------------------------
def run_stages(args: argparse.Namespace) -> int:
    """Every stage in order; with loading, its node count, and each unreadable file as one error line."""
    folder = scan_dump_folder(args.folder)
    loads = {} if args.no_load else {id(load.stage): load for load in folder.load_all()}
    errors = [load.error for load in loads.values() if load.error]
    if args.json:
        data = folder.to_json()
        for timeline, t_json in zip(folder.timelines, data["timelines"]):
            for stage, s_json in zip(timeline.stages, t_json["stages"]):
                load = loads.get(id(stage))
                if load is not None:
                    s_json["nodes"] = len(load.dump.graph) if load.dump else None
                    s_json["fused_nodes"] = sum(r.fused for r in load.dump.provenance().values()) if load.dump else None
                    s_json["error"] = load.error
        print_json(data)
    else:
        print(f"{folder.path}: {len(folder.stages())} stages in {len(folder.timelines)} graph"
              f"{'s' if len(folder.timelines) != 1 else ''}")
        for timeline in folder.timelines:
            print(f"{timeline.label}:")
            for stage in timeline.stages:
                load = loads.get(id(stage))
                facts = ""
                if load is not None and load.dump is not None:
                    fused = sum(r.fused for r in load.dump.provenance().values())
                    facts = f"{len(load.dump.graph):6d} nodes" + (f", {fused} fused by the toolchain" if fused else "")
                elif load is not None:
                    facts = "  (not readable: see below)"
                formats = "+".join(fmt.removeprefix("ge_") for fmt in stage.files)
                print(f"  {stage.index_label:>8s}  {stage.label:48s} {formats:10s} {facts}")
        for line in folder.skipped:
            print(f"skipped: {line}", file=sys.stderr)
    for error in errors:
        print(f"fuselens: error: {error}", file=sys.stderr)
    return 2 if errors else 0


# ---- diff --------------------------------------------------------------------------------------
def run_diff(args: argparse.Namespace) -> int:
    before, before_label = open_graph(args.before)
    after, after_label = open_graph(args.after)
    diff = diff_graphs(before, after, before_label=before_label, after_label=after_label)
    if args.json:
        print_json(diff.to_json())
    else:
        print(format_diff(diff))
    return 0


# ---- ledger ------------------------------------------------------------------------------------
DETAILED_GRAPHS = 10  # graphs whose passes are listed one by one; the rest get a line each, or share one


def run_ledger(args: argparse.Namespace) -> int:
    result = read_fusion_result(args.fusion_result)
    named = result.graph(args.graph) if args.graph else None  # an unknown graph is an error before any fusion work
    rows: list[LedgerRow] = []
    chosen = named
    if args.model:
        from fuselens.passes.ledger import compare_with_toolchain

        chosen = named or result.busiest()
        if chosen is None:
            raise FuseLensError(f"{args.fusion_result}: holds no graph to compare with")
        _, pipeline = fuse_model(args)
        rows = compare_with_toolchain(pipeline, chosen)
    if args.json:
        shown_graphs = [named] if named is not None else result.ranked()
        data: dict[str, Any] = {"source": result.source, "form": result.form,
                                "graphs": [graph_summary(g) for g in shown_graphs], "notes": result.notes,
                                "fusion_result": fusion_result_json(shown_graphs)}
        if chosen is not None and args.model:
            data["comparison"] = {"model": args.model, "graph": chosen.key, "rows": [r.to_json() for r in rows]}
        print_json(data)
        return 0
    print(format_ledger(result, named))
    if chosen is not None and args.model:
        print(format_comparison(args.model, chosen.key, rows))
    return 0


def graph_summary(graph: GraphLedger) -> dict[str, Any]:
    return {"graph": graph.graph, "key": graph.key, "passes": len(graph.passes), "matches": graph.total_matches(),
            "rewrites": graph.total_effects()}


def format_ledger(result: FusionResult, graph: GraphLedger | None = None) -> str:
    """The graphs with the most rewrites first, each with its passes; past the first few, a line per graph,
    and the graphs that recorded no pass share one line. With `graph`, that graph alone."""
    fused = sum(g.total_effects() > 0 for g in result.graphs)
    count = len(result.graphs)
    form = "null: nothing was compiled" if result.form == NULL else f"{result.form} form"
    lines = [f"{result.source}: {_plural(count, 'graph')} ({form})" + (f", {fused} with rewrites" if count > 1 else "")]
    lines += [f"note: {n}" for n in result.notes]
    ranked = [graph] if graph is not None else result.ranked()
    empty = [g for g in ranked if not g.passes]
    recorded = [g for g in ranked if g.passes]
    for i, ledger in enumerate(recorded):
        lines.append(f"{ledger.key}: {_plural(len(ledger.passes), 'pass', 'passes')}, "
                     f"{_plural(ledger.total_matches(), 'match', 'matches')}, "
                     f"{_plural(ledger.total_effects(), 'rewrite')}")
        if i < DETAILED_GRAPHS:
            for (section, name), c in ledger.passes.items():
                hits = f"  repository hits {c.repository_hit_times}" if c.repository_hit_times is not None else ""
                lines.append(f"  {section:12s} {name:48s} match {c.match_times:4d}  effect {c.effect_times:4d}{hits}")
    if empty:
        keys = ", ".join(g.key for g in empty[:DETAILED_GRAPHS])
        more = f" and {len(empty) - DETAILED_GRAPHS} more (--json for all)" if len(empty) > DETAILED_GRAPHS else ""
        lines.append(f"{_plural(len(empty), 'graph')} with no pass recorded: {keys}{more}")
    if len(recorded) > DETAILED_GRAPHS:
        lines.append(f"(passes listed for the {DETAILED_GRAPHS} graphs with the most rewrites; "
                     "--graph S_G for any other)")
    return "\n".join(lines)


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def format_comparison(model: str, graph: str, rows: list[LedgerRow]) -> str:
    def counts(c: Any) -> str:
        return "-" if c is None else f"{c.match_times}/{c.effect_times}"

    tally = {s: sum(r.status == s for r in rows) for s in ("agree", "disagree", "unverifiable", "not_modelled")}
    lines = [f"FuseLens ({model}) vs {graph} (match/effect): " + ", ".join(f"{n} {s.replace('_', ' ')}"
                                                                          for s, n in tally.items())]
    for row in rows:
        note = f"  {row.note}" if row.note and row.status != "not_modelled" else ""
        lines.append(f"  {row.status.replace('_', ' '):13s} {row.name:44s} FuseLens {counts(row.predicted):7s} "
                     f"toolchain {counts(row.actual):7s}{note}")
    return "\n".join(lines)
