"""`py-pass check`: a GE Python pass file (ge.passes) as FuseLens reads it, before it goes to a host.

Loads the files as GE loads ASCEND_GE_PY_PASS_PATH, lists each registered pass with its stage and
patterns, and with --model runs them on that model: matches, near misses (with the pattern node that
failed), GE's match_times / effect_times and the numeric proof of the rewrite. The user's errors print
with their own frames; the `ge` APIs a pass asked for that FuseLens lacks are listed by name. Exit 1
when there was an error or an API FuseLens lacks, else 0.
"""

from __future__ import annotations

import argparse
from typing import Any

from fuselens.cli.common import add_input_args, input_shapes, print_json

SHOWN = 10  # matches and near misses printed per pass


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("py-pass", help="GE Python fusion passes (ge.passes): check a pass file")
    commands = p.add_subparsers(dest="py_pass_command", metavar="ACTION", required=True)
    check = commands.add_parser("check", help="load pass files, list their passes and patterns, run them on a model")
    check.add_argument("paths", nargs="+", metavar="PATH", help="a pass file or a directory of them (GE's rules)")
    check.add_argument("--model", help="run the passes on this graph: a model (a file, a directory or a sample "
                                       "name), a GE dump file or DIR:STAGE (a stage of a dump folder)")
    check.add_argument("--seed", type=int, default=0, help="seed of the random inputs of the numeric proof")
    check.add_argument("--no-proof", action="store_true", help="skip the numeric proof (it needs TensorFlow)")
    add_input_args(check)
    check.add_argument("--json", action="store_true", help="print JSON")
    check.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    from fuselens.passes.config import PassConfig
    from fuselens.passes.ge_python.engine import describe_patterns

    config = PassConfig.from_ids([]).with_py_passes(args.paths)
    load = config.py_pass_load
    errors = list(load.errors)
    described = []
    for registered in load.passes:
        patterns, pattern_errors = describe_patterns(registered)
        errors += pattern_errors
        described.append((registered, patterns))
    report: dict[str, Any] = {**load.to_json(), "ge": load.ge_note(),
                              "passes": [{**r.to_json(), "patterns": p} for r, p in described]}
    unsupported = list(load.unsupported)
    lines = [f"{len(load.passes)} GE Python pass(es) from {', '.join(args.paths)}; {load.ge_note()}"]
    for registered, patterns in described:
        lines.append(f"  {registered.name}  {registered.kind}  {registered.stage}  "
                     f"{registered.source}:{registered.line}")
        lines += [f"    {p}" for p in patterns]
    if args.model:
        run_lines, run_report, run_errors, run_unsupported = _run_on_model(args, config)
        lines += run_lines
        report["run"] = run_report
        errors += run_errors
        unsupported += [api for api in run_unsupported if api not in unsupported]
    report["errors"] = [e.to_json() for e in errors]
    report["unsupported"] = unsupported
    if errors:
        lines.append(f"{len(errors)} error(s) in the pass code:")
        for error in errors:
            lines.append(f"  {error.one_line()}")
            if error.traceback and error.traceback != error.message:
                lines += [f"    {line}" for line in error.traceback.splitlines()]
    if unsupported:
        lines.append(f"ge APIs FuseLens does not provide: {', '.join(unsupported)}")
    if args.json:
        print_json(report)
    else:
        print("\n".join(lines))
    return 1 if errors or unsupported else 0


def _run_on_model(args: argparse.Namespace, config: Any) -> tuple[list[str], dict[str, Any], list[Any], list[str]]:
    from fuselens.core.ascend.ge.open import open_graph
    from fuselens.passes.ge_python.engine import GePassResult
    from fuselens.passes.ge_python.proof import prove
    from fuselens.passes.pipeline import run_pipeline

    graph, _ = open_graph(args.model)
    pipeline = run_pipeline(graph, config)
    lines = [f"on {args.model}:"]
    results = [r for r in pipeline.results if isinstance(r, GePassResult)]
    errors, unsupported = [], []
    for result in results:
        lines.append(f"  {result.pass_id}: match_times {result.match_times}, effect_times {result.effect_times}, "
                     f"{result.near_miss_count} near miss(es)")
        lines += [f"    match {m.anchor}: {m.summary}" for m in result.matches[:SHOWN]]
        lines += [f"    near miss {n.anchor}: {n.reason}" for n in result.near_misses[:SHOWN]]
        hidden = max(0, len(result.matches) - SHOWN) + max(0, len(result.near_misses) - SHOWN)
        if hidden:
            lines.append(f"    (+{hidden} more; --json lists them all)")
        errors += result.user_errors
        unsupported += result.unsupported
    report: dict[str, Any] = {"model": args.model, "results": [r.to_json() for r in results]}
    if not args.no_proof:
        proof = prove(pipeline, seed=args.seed, shapes=input_shapes(args) or None)
        lines.append(f"  proof: {proof.text}")
        report["proof"] = proof.to_json()
    return lines, report, errors, unsupported
