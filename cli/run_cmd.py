"""`run` (original vs fused in a child process), `import-profile` (msprof results) and
`export-npu-script` (a bundle that runs both on an Ascend host, see session/npu_export.py)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli import print_json
from cli.npu_cmd import add_check_args, check_report
from cli.pass_args import add_pass_selection_args
from core.errors import FuseLensError
from core.io import check_output_path, write_json_atomic
from core.loaders import LoadedModel, load_model
from core.runtime.backends import BACKENDS
from core.runtime.npu_script import MODES
from core.runtime.run_view import parse_input_shapes

if TYPE_CHECKING:
    from passes.registry import PipelineResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the original and the fused graph; compare outputs and per-kernel timings")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("--backend", choices=BACKENDS, default=BACKENDS[0])
    p.add_argument("--host", metavar="NAME", help="with --backend npu: run on this Ascend host (`fuselens hosts`), "
                                                  "bring the results back and set them against the prediction")
    p.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    _add_input_args(p)
    p.add_argument("--inputs", metavar="X.npz", help="input arrays, one per placeholder (default: seeded random)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="stop the run after S seconds")
    p.add_argument("--no-trace", action="store_true", help="no FULL_TRACE step stats: wall times only")
    p.add_argument("--no-grappler", action="store_true",
                   help="run both graphs as written, without Grappler (which composes e.g. Abs+Relu into one kernel)")
    p.add_argument("--trace", metavar="T.json", help="write a Chrome trace (Perfetto) of one step per graph")
    p.add_argument("--csv", metavar="K.csv", help="write the kernel tables as CSV")
    p.add_argument("--save", metavar="RUN.json", help="write the run file (the GUI opens it)")
    p.add_argument("--layerwise", action="store_true",
                   help="also compare every fused node's outputs with the original tensors they replace: per match "
                        "max abs / max rel error and the first divergent match (in the JSON as \"layerwise\")")
    p.add_argument("--json", action="store_true", help="print the run result as JSON")
    p.set_defaults(func=run_run)

    p = sub.add_parser("import-profile", help="read msprof op_summary/op_statistic CSVs or a PROF_* folder")
    p.add_argument("path", help="op_summary_*.csv, op_statistic_*.csv, a PROF_* folder, a folder with "
                                "original/ and fused/ runs (as the exported NPU script writes it), or a run file")
    p.add_argument("--model", help="map kernels to the nodes of this model or of its fused graph, whichever "
                                   "fits the kernel names (as the window does)")
    add_pass_selection_args(p)
    add_check_args(p)
    p.add_argument("--save", metavar="RUN.json", help="write the run file (the GUI opens it)")
    p.add_argument("--json", action="store_true", help="print the imported result as JSON (the run file; the "
                                                       "predicted-vs-actual report is --check's)")
    p.set_defaults(func=run_import_profile)

    p = sub.add_parser("export-npu-script", help="write a bundle that runs the baseline and the fused graph on an "
                                                 "Ascend host and brings back what the toolchain left")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("--mode", choices=list(MODES), default=next(iter(MODES)),
                   help="; ".join(f"{mode}: {what}" for mode, what in MODES.items()))
    _add_input_args(p)
    p.add_argument("--steps", type=int, default=100, help="timed steps per side on the NPU (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    p.add_argument("-o", "--output", required=True, metavar="BUNDLE/",
                   help="the bundle folder: run_on_npu.py, both graphs, the switches per side, bundle.json, README.md")
    p.set_defaults(func=run_export_npu_script)


def _add_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="shape of an input with unknown dimensions (repeatable), e.g. input_1=1,224,224,3")


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The --input-shape values, parsed as the window parses its shape field."""
    return parse_input_shapes(";".join(args.input_shape), "--input-shape")


def fuse_model(args: argparse.Namespace) -> tuple[LoadedModel, PipelineResult]:
    """`args.model` and its fused graph under the command line's pass configuration (`pipeline.config`)."""
    from passes.config import PassConfig
    from passes.registry import run_pipeline

    config = PassConfig.from_args(args)  # a bad option or rule file fails before the model loads
    model = load_model(args.model)
    pipeline = run_pipeline(model.graph, config)
    for error in pipeline.errors:
        print(f"fuselens: warning: {error}", file=sys.stderr)
    if args.strict and pipeline.errors:
        raise FuseLensError(f"{len(pipeline.errors)} fusion failure(s) and --strict: nothing was run")
    return model, pipeline


def original_to_final(pipeline: PipelineResult) -> dict[str, list[str]] | None:
    """Provenance, so outputs renamed by a fusion still pair with the original's."""
    return pipeline.provenance.original_to_final() if pipeline.provenance else None


def _progress_printer(enabled: bool) -> Any:
    if not enabled:
        return None

    def show(progress: Any) -> None:
        print(f"\r\033[K{progress}", end="", file=sys.stderr, flush=True)

    return show


def emit_result(result: Any, args: argparse.Namespace) -> int:
    """Save the run file when asked (--save), then print the result as JSON or as text."""
    if args.save:
        result.save(args.save)
    if args.json:
        print_json(result.to_json())
    else:
        print(format_result(result))
    return 0


def run_run(args: argparse.Namespace) -> int:
    from core.runtime import RunRequest
    from core.runtime.runner import start_run, wait
    from core.runtime.trace import write_chrome_trace, write_kernel_csv
    from passes.registry import run_pipeline
    from session.layerwise import build_report, format_report, plan_layers

    if args.host:
        from cli.hosts_cmd import run_on_host

        return run_on_host(args)
    shapes = input_shapes(args)
    model, pipeline = fuse_model(args)
    plan = plan_layers(pipeline, run_pipeline) if args.layerwise else None
    request = RunRequest(
        original=model.graph, fused=pipeline.fused, model=args.model, config=pipeline.config,
        backend=args.backend, steps=args.steps, warmup=args.warmup, input_shapes=shapes,
        inputs=args.inputs, seed=args.seed, timeout=args.timeout, trace=not args.no_trace,
        grappler=not args.no_grappler, original_to_final=original_to_final(pipeline),
        layers=plan.probes() if plan else ())
    show = _progress_printer(sys.stderr.isatty())
    try:
        handle = start_run(request, show)
        result = wait(handle)
    finally:
        if show:
            print("\r\033[K", end="", file=sys.stderr)
    if args.trace:
        write_chrome_trace(result, args.trace)
    if args.csv:
        write_kernel_csv(result, args.csv)
    if plan is None:
        return emit_result(result, args)
    report = build_report(plan, handle.layers)
    if args.save:
        result.save(args.save)
    if args.json:
        print_json({**result.to_json(), "layerwise": report.to_json()})
    else:
        print(format_result(result))
        print(format_report(report))
    return 0


def run_import_profile(args: argparse.Namespace) -> int:
    """The window's import: one profile lands on the graph (original or fused) its kernel names fit; with a
    model, the profile and whatever else came back (fusion_result.json, dumps) are set against the prediction."""
    from core.runtime.profile_import import import_run_file
    from session.npu_report import format_check

    if not args.model:
        given = [o for o, v in (("--check", args.check), ("--fusion-result", args.fusion_result),
                                ("--dumps", args.dumps), ("--stage", args.stage), ("--ledger-graph", args.ledger_graph))
                 if v]
        if given:
            raise FuseLensError(f"{', '.join(given)}: set the NPU's records against a prediction; give --model too")
        return emit_result(import_run_file(args.path), args)
    to_stdout = args.check == "-"
    if args.check and not to_stdout:
        check_output_path(args.check)
    model, pipeline = fuse_model(args)
    result = import_run_file(args.path, model.graph, pipeline.fused)
    report = check_report(args, pipeline, result)
    if args.check and not to_stdout:
        write_json_atomic(args.check, report)
    if to_stdout:
        if args.save:
            result.save(args.save)
        print_json(report)
        return 0
    emit_result(result, args)
    if not args.json:
        print(format_check(report))
    return 0


def run_export_npu_script(args: argparse.Namespace) -> int:
    from session.npu_export import export_npu_bundle

    shapes = input_shapes(args)
    model, pipeline = fuse_model(args)
    report = export_npu_bundle(args.output, pipeline, model=args.model, mode=args.mode, input_shapes=shapes,
                               steps=args.steps, warmup=args.warmup,
                               protect=model.path if Path(model.path).exists() else None)
    print(report.summary(MODES[args.mode]))
    return 0


def format_result(result: Any) -> str:
    """The run as a short text report: per graph the summary and top kernels, then outputs and speedup."""
    lines = [f"{result.model or 'model'} on {result.backend}: {result.steps} steps"
             + (f" after {result.warmup} warm-up" if result.warmup else "")]
    for label, run in result.graphs.items():
        s = run.summary()
        median = f"{s['step_median_us']:.1f} us/step" if s["step_median_us"] is not None else "no step times"
        kernel_time = f", kernels {s['kernel_us_per_step']:.1f} us/step" if s["kernel_us_per_step"] else ""
        lines.append(f"  {label:9s} {median}, {s['kernel_count']} kernels{kernel_time}")
        for k in run.kernels[:8]:
            node = f" -> {k.node}" if k.node and k.node != k.kernel else ""
            tag = f" [{k.pass_id}]" if k.pass_id else ""
            lines.append(f"      {k.mean_us:10.1f} us x{k.count:<5d} {k.op_type:24s} {k.kernel}{node}{tag}")
        if len(run.kernels) > 8:
            lines.append(f"      ... {len(run.kernels) - 8} more kernels (--json or --csv for all)")
        for how, count in Counter(run.execution.values()).most_common():
            lines.append(f"      fused nodes executed {how}: {count}")
    for c in result.comparison:
        verdict = "allclose" if c.allclose else "NOT allclose"
        errors = (f"max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}, mean abs {c.mean_abs:.3g}"
                  if c.max_abs is not None else "no finite values")
        lines.append(f"  output {c.original} vs {c.fused}: {c.dtype}{c.shape} {errors}: {verdict} "
                     f"(rtol {c.rtol:g}, atol {c.atol:g})" + (f"; {c.note}" if c.note else ""))
    if result.speedup() is not None:
        lines.append(f"  speedup fused vs original: {result.speedup():.2f}x per step"
                     + (f", {result.kernel_speedup():.2f}x kernel time" if result.kernel_speedup() else ""))
    return "\n".join(lines)
