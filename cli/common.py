"""What several commands share: JSON output, flag-string options, input shapes, fusing the model under
the command line's pass selection, and reading an imported profile against the prediction.

Every command module imports this one (and cli/pass_args.py) and no other command module (a command never calls another
through the argparse parser), so `fuselens fuse` pays only for its own imports: the heavy ones are
inside the functions that need them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from fuselens.cli.pass_args import add_pass_selection_args, flag_string
from fuselens.core.errors import FuseLensError

if TYPE_CHECKING:
    from fuselens.core.formats.loaders import LoadedModel
    from fuselens.core.runtime import RunResult
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import PipelineResult
    from fuselens.session.fusion_gain import GainReport


# ---- output and option syntax ------------------------------------------------------------------
def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def flag_string_options(parser: argparse.ArgumentParser) -> set[str]:
    """The long option strings declared with `type=flag_string`, in the parser and its subcommands."""
    found = set()
    for action in parser._actions:
        if action.type is flag_string:
            found.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= flag_string_options(sub)
    return found


def join_flag_values(argv: Sequence[str], options: set[str]) -> list[str]:
    """`--opt VALUE` -> `--opt=VALUE` for these options, so a VALUE starting with `--` is taken as
    the value (the `=` spelling already is); words after a bare `--` are left alone."""
    words = list(argv)
    joined: list[str] = []
    i = 0
    while i < len(words):
        if words[i] == "--":
            return joined + words[i:]
        if words[i] in options and i + 1 < len(words):
            joined.append(f"{words[i]}={words[i + 1]}")
            i += 2
        else:
            joined.append(words[i])
            i += 1
    return joined


@contextlib.contextmanager
def progress_line(enabled: bool) -> Iterator[Callable[[Any], None] | None]:
    """A printer that keeps one progress line on stderr (None when not `enabled`), cleared at the end."""
    if not enabled:
        yield None
        return

    def show(progress: Any) -> None:
        print(f"\r\033[K{progress}", end="", file=sys.stderr, flush=True)

    try:
        yield show
    finally:
        print("\r\033[K", end="", file=sys.stderr)


# ---- the model and its pass selection ----------------------------------------------------------
def add_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="shape of an input with unknown dimensions (repeatable), e.g. input_1=1,224,224,3")


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The --input-shape values, parsed as the window parses its shape field."""
    from fuselens.core.runtime.run_view import parse_input_shapes

    return parse_input_shapes(";".join(args.input_shape), "--input-shape")


def pass_selection(text: str, what: str) -> PassConfig:
    """A pass selection written as the options of `fuse` ("--disable AutoFusePass --skip-match X")."""
    from fuselens.passes.config import PassConfig

    parser = argparse.ArgumentParser(prog=f"fuselens {what}", add_help=False, exit_on_error=False)
    add_pass_selection_args(parser)
    try:
        words = shlex.split(text)
        args, extra = parser.parse_known_args(words)
    except (ValueError, argparse.ArgumentError) as e:
        raise FuseLensError(f"{what} {text!r}: {e}") from None
    if extra:
        raise FuseLensError(f"{what} {text!r}: not a pass selection option: {' '.join(extra)}")
    return PassConfig.from_args(args)


def fuse_model(args: argparse.Namespace, config: PassConfig | None = None) -> tuple[LoadedModel, PipelineResult]:
    """`args.model` and its fused graph under `config` (default: the command line's pass selection)."""
    from fuselens.core.formats.loaders import load_model
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import run_pipeline

    config = config or PassConfig.from_args(args)  # a bad option or rule file fails before the model loads
    model = load_model(args.model)
    pipeline = run_pipeline(model.graph, config)
    for error in pipeline.errors:
        print(f"fuselens: warning: {error}", file=sys.stderr)
    if getattr(args, "strict", False) and pipeline.errors:
        raise FuseLensError(f"{len(pipeline.errors)} fusion failure(s) and --strict: nothing was run")
    return model, pipeline


# ---- a run's result ----------------------------------------------------------------------------
def emit_result(result: RunResult, args: argparse.Namespace, extra: dict[str, Any] | None = None,
                gains: GainReport | None = None) -> int:
    """Save the run file when asked (--save), then print the result (with `extra`, and the fusions' gains as
    "fusion_gain", in its JSON) as JSON or text."""
    if args.save:
        result.save(args.save)
    if args.json:
        print_json({**result.to_json(), **({"fusion_gain": gains.to_json()} if gains is not None else {}),
                    **(extra or {})})
    else:
        print(format_result(result, gains))
    return 0


def format_result(result: RunResult, gains: GainReport | None = None) -> str:
    """The run as a short text report: per graph the summary and top kernels, then outputs and speedup, then
    whether each fusion paid (`gains`)."""
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
        lines += [f"      {note}" for note in run.execution_notes]
    for c in result.comparison:
        verdict = "allclose" if c.allclose else "NOT allclose"
        errors = (f"max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}, mean abs {c.mean_abs:.3g}"
                  if c.max_abs is not None else "no finite values")
        lines.append(f"  output {c.original} vs {c.fused}: {c.dtype}{c.shape} {errors}: {verdict} "
                     f"(rtol {c.rtol:g}, atol {c.atol:g})" + (f"; {c.note}" if c.note else ""))
    if result.speedup() is not None:
        lines.append(f"  speedup fused vs original: {result.speedup():.2f}x per step"
                     + (f", {result.kernel_speedup():.2f}x kernel time" if result.kernel_speedup() else ""))
    if gains is not None:
        from fuselens.session.fusion_gain import format_gains

        lines += format_gains(gains)
    return "\n".join(lines)


# ---- import-profile, and the results of a run on an Ascend host ----------------------------------
CHECK_OPTIONS = {"check": "--check", "fusion_result": "--fusion-result", "dumps": "--dumps", "stage": "--stage",
                 "ledger_graph": "--ledger-graph"}


def add_check_args(p: argparse.ArgumentParser) -> None:
    """Options of `import-profile --model` for the predicted-vs-actual report."""
    group = p.add_argument_group("predicted vs actual (with --model)")
    group.add_argument("--fusion-result", metavar="F", help="the toolchain's fusion_result.json "
                                                            "(default: one found under PATH)")
    group.add_argument("--dumps", metavar="DIR", help="the GE graph dump folder (default: dumps found under PATH)")
    group.add_argument("--stage", help="the dump stage to check against (default: the last stage of the graph "
                                       "that matches the model)")
    group.add_argument("--ledger-graph", metavar="KEY", help="the fusion_result.json graph to compare")
    group.add_argument("--check", metavar="R.json", help="write the predicted-vs-actual report (JSON) here; "
                                                          "`--check -` prints it instead of the run")


def import_profile(args: argparse.Namespace, config: PassConfig | None = None) -> int:
    """The window's import: one profile lands on the graph (original or fused) its kernel names fit; with a
    model, the profile and whatever else came back (fusion_result.json, dumps) are set against the prediction
    (`config`, default: the command line's pass selection)."""
    from fuselens.cli.check_text import format_check
    from fuselens.core.ascend.profile_import import import_run_file
    from fuselens.core.formats.io import check_output_path, write_json_atomic
    from fuselens.session.fusion_gain import paired_profiles, run_gains, toolchain_records
    from fuselens.session.npu_check import check_imported

    baseline = getattr(args, "baseline", None)
    if not args.model:
        given = [option for field, option in CHECK_OPTIONS.items() if getattr(args, field, None)]
        if given:
            raise FuseLensError(f"{', '.join(given)}: set the NPU's records against a prediction; give --model too")
        result = paired_profiles(baseline, args.path) if baseline else import_run_file(args.path)
        return emit_result(result, args, gains=run_gains(result, toolchain=toolchain_records(args.path)))
    check = getattr(args, "check", None)
    to_stdout = check == "-"
    if check and not to_stdout:
        check_output_path(check)
    model, pipeline = fuse_model(args, config)
    result = (paired_profiles(baseline, args.path, model.graph, pipeline.fused) if baseline
              else import_run_file(args.path, model.graph, pipeline.fused))
    gains = run_gains(result, pipeline, toolchain=toolchain_records(args.path, model.graph))
    report = check_imported(pipeline, args.path, result, model=args.model,
                            **{field: getattr(args, field, None) for field in CHECK_OPTIONS if field != "check"})
    if check and not to_stdout:
        write_json_atomic(check, report.to_json())
    if to_stdout:
        if args.save:
            result.save(args.save)
        print_json(report.to_json())
        return 0
    emit_result(result, args, gains=gains)
    if not args.json:
        print(format_check(report))
    return 0
