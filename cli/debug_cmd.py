"""`bisect` (which matches break accuracy or speed) and `diff-config` (two pass configurations side by side)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fuselens.cli.common import add_input_args, flag_string, input_shapes, pass_selection, print_json, progress_line
from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.devices.backends import BACKENDS
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the matches whose fusion makes the outputs differ (or the model slower)",
                       description="Delta debugging over the matches, in pipeline order: names the culprit "
                                   "matches in far fewer runs than one per match. Exit 0 when nothing is wrong, "
                                   "1 when culprits were found, 2 on bad input.")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("--by", choices=("numeric", "time"), default="numeric",
                   help="numeric: outputs not allclose; time: fused step time more than --slowdown %% above the "
                        "original's")
    p.add_argument("--rtol", type=float, help="relative tolerance (default: by dtype, float32 1e-4)")
    p.add_argument("--atol", type=float, help="absolute tolerance (default: by dtype, float32 1e-4)")
    p.add_argument("--slowdown", type=float, default=10.0, metavar="PCT",
                   help="--by time: a slowdown above PCT percent counts (default 10)")
    p.add_argument("--steps", type=int, default=20, help="--by time: timed steps per block (default 20)")
    p.add_argument("--blocks", type=int, default=3, help="--by time: blocks of steps; the median of their "
                                                         "slowdowns counts (default 3)")
    p.add_argument("--warmup", type=int, default=3, help="--by time: untimed steps first (default 3)")
    p.add_argument("--backend", choices=[b for b in BACKENDS if b != "npu"], default="cpu")
    p.add_argument("--no-grappler", action="store_true",
                   help="run both graphs as written, without Grappler (a numeric bisect runs about 3x faster)")
    add_input_args(p)
    p.add_argument("--inputs", metavar="X.npz", help="input arrays, one per placeholder (default: seeded random)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="stop one run after S seconds")
    p.add_argument("--max-runs", type=int, default=400, help="give up after this many runs (default 400)")
    p.add_argument("--export", metavar="DIR", help="write the reproduction: skip.txt (for --skip-file), "
                                                   "autofuse_skip.ini, fusion_switch.json")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_bisect)

    p = sub.add_parser("diff-config", help="two pass configurations of one model: matches gained and lost, "
                                           "nodes, kernels (and with --run, step times)")
    p.add_argument("model", help="a model file or directory, or a sample name")
    p.add_argument("--a", type=flag_string, default="", metavar="SELECTION",
                   help='pass selection A, as the options of fuse: --a "--disable AutoFusePass" (default: defaults)')
    p.add_argument("--b", type=flag_string, default="", metavar="SELECTION", help="pass selection B (likewise)")
    p.add_argument("--run", action="store_true", help="run both fused graphs (in turn, one process) and compare "
                                                      "step times, kernels and outputs")
    p.add_argument("--steps", type=int, default=30, help="--run: timed steps (default 30)")
    p.add_argument("--warmup", type=int, default=3, help="--run: untimed steps first (default 3)")
    add_input_args(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run_diff_config)


def run_bisect(args: argparse.Namespace) -> int:
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import run_pipeline
    from fuselens.session.bisect import BisectOptions, Bisector, format_result

    options = BisectOptions(by=args.by, rtol=args.rtol, atol=args.atol, slowdown=args.slowdown, steps=args.steps,
                            blocks=args.blocks, warmup=args.warmup, backend=args.backend, grappler=not args.no_grappler,
                            input_shapes=input_shapes(args), inputs=args.inputs, seed=args.seed,
                            timeout=args.timeout, max_runs=args.max_runs)
    config = PassConfig.from_args(args)
    if args.export and Path(args.export).exists() and not Path(args.export).is_dir():
        raise FuseLensError(f"{args.export}: --export takes a folder, and this is a file")
    model = load_model(args.model)
    with progress_line(sys.stderr.isatty()) as show:
        result = Bisector(model.graph, config, options, run_pipeline, model=args.model,
                          progress=show or (lambda _text: None)).run()
    written = result.write_reproduction(args.export) if args.export and result.found else []
    if args.json:
        print_json({**result.to_json(), "written": [str(p) for p in written]})
        return 1 if result.found else 0
    print(format_result(result))
    if result.found:
        if written:
            print("reproduction: " + ", ".join(str(p) for p in written))
            print(f"check: fuselens fuse {args.model} ... --skip-file {written[0]}")
        else:
            print("skip file (--export DIR writes it with autofuse_skip.ini and fusion_switch.json):")
            print(result.skip_file_text(), end="")
    return 1 if result.found else 0


def run_diff_config(args: argparse.Namespace) -> int:
    from fuselens.passes.pipeline import run_pipeline
    from fuselens.session.config_diff import diff_configs, format_diff, run_both

    a, b = pass_selection(args.a, "--a"), pass_selection(args.b, "--b")
    shapes = input_shapes(args)
    model = load_model(args.model)
    diff, first, second = diff_configs(model.graph, a, b, run_pipeline, args.a or "defaults", args.b or "defaults")
    if args.run:
        with progress_line(sys.stderr.isatty()) as show:
            run_both(diff, first, second, steps=args.steps, warmup=args.warmup, on_progress=show, model=args.model,
                     input_shapes=shapes)
    if args.json:
        print_json(diff.to_json())
    else:
        print(format_diff(diff))
    return 0
