"""`run` (original vs fused in a child process), `import-profile` (msprof results) and
`export-npu-script` (a bundle that runs both on an Ascend host, see session/npu_export.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fuselens.cli.common import (
    add_check_args,
    add_input_args,
    emit_result,
    fuse_model,
    import_profile,
    input_shapes,
    progress_line,
)
from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.ascend.npu_script import MODES
from fuselens.core.devices.backends import BACKENDS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the original and the fused graph; compare outputs and per-kernel timings")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("--backend", choices=BACKENDS, default=BACKENDS[0])
    p.add_argument("--host", metavar="NAME", help="with --backend npu: run on this Ascend host (`fuselens hosts`), "
                                                  "bring the results back and set them against the prediction")
    p.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    add_input_args(p)
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
    p.add_argument("--baseline", metavar="PROFILE", help="a profile (or run file) of the unfused model: PATH is then "
                                                         "the fused run's, and each fusion's kernel time is set "
                                                         "against its original nodes' in the baseline")
    add_pass_selection_args(p)
    add_check_args(p)
    p.add_argument("--save", metavar="RUN.json", help="write the run file (the GUI opens it)")
    p.add_argument("--json", action="store_true", help="print the imported result as JSON (the run file; the "
                                                       "predicted-vs-actual report is --check's)")
    p.set_defaults(func=import_profile)

    p = sub.add_parser("export-npu-script", help="write a bundle that runs the baseline and the fused graph on an "
                                                 "Ascend host and brings back what the toolchain left")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("--mode", choices=list(MODES), default=next(iter(MODES)),
                   help="; ".join(f"{mode}: {what}" for mode, what in MODES.items()))
    add_input_args(p)
    p.add_argument("--steps", type=int, default=100, help="timed steps per side on the NPU (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    p.add_argument("-o", "--output", required=True, metavar="BUNDLE/",
                   help="the bundle folder: run_on_npu.py, both graphs, the switches per side, bundle.json, README.md")
    p.set_defaults(func=run_export_npu_script)


def run_run(args: argparse.Namespace) -> int:
    from fuselens.core.runtime.trace import write_chrome_trace, write_kernel_csv
    from fuselens.passes.pipeline import run_pipeline
    from fuselens.session.fusion_gain import run_gains
    from fuselens.session.layerwise import format_report
    from fuselens.session.run_workflow import RunSettings, run_both, run_request

    if args.host:
        from fuselens.cli.hosts_cmd import run_on_host

        return run_on_host(args)
    settings = RunSettings(backend=args.backend, steps=args.steps, warmup=args.warmup, input_shapes=input_shapes(args),
                           inputs=args.inputs, seed=args.seed, timeout=args.timeout, trace=not args.no_trace,
                           grappler=not args.no_grappler)
    model, pipeline = fuse_model(args)
    request = run_request(model.graph, pipeline, args.model, settings)
    with progress_line(sys.stderr.isatty()) as show:
        outcome = run_both(request, pipeline, layerwise=run_pipeline if args.layerwise else None, on_progress=show)
    result, report = outcome.result, outcome.layerwise
    if args.trace:
        write_chrome_trace(result, args.trace)
    if args.csv:
        write_kernel_csv(result, args.csv)
    emit_result(result, args, {"layerwise": report.to_json()} if report is not None else None,
                gains=run_gains(result, pipeline))
    if report is not None and not args.json:
        print(format_report(report))
    return 0


def run_export_npu_script(args: argparse.Namespace) -> int:
    from fuselens.session.npu_export import export_npu_bundle

    shapes = input_shapes(args)
    model, pipeline = fuse_model(args)
    report = export_npu_bundle(args.output, pipeline, model=args.model, mode=args.mode, input_shapes=shapes,
                               steps=args.steps, warmup=args.warmup,
                               protect=model.path if Path(model.path).exists() else None)
    print(report.summary(MODES[args.mode]))
    return 0
