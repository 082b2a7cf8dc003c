"""`passes` (the catalog) and `fuse` (apply passes, write the fused model and a report)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from fuselens.cli.common import print_json
from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.formats.io import check_output_path, write_bytes_atomic, write_json_atomic
from fuselens.core.formats.loaders import load_model


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("passes", help="list the fusion passes with their metadata")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--markdown", action="store_true", help="print the README's pass table")
    p.set_defaults(func=run_passes)

    p = sub.add_parser("fuse", help="apply fusion passes; print matches, near misses and op-count changes")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("-o", "--output", metavar="OUT.pb", help="write the fused GraphDef here (atomically)")
    p.add_argument("--report", metavar="R.json", help="write the JSON fuse report here")
    p.add_argument("--ledger", metavar="F.json", help="write FuseLens's fusion ledger here, shaped like the "
                                                      "toolchain's fusion_result.json")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--watch", action="store_true",
                   help="stay and fuse again on every save of the model file or a --py-pass file, printing the "
                        "new result (Ctrl+C stops)")
    p.set_defaults(func=run_fuse)


def run_passes(args: argparse.Namespace) -> int:
    from fuselens.passes.pass_table import catalog_markdown
    from fuselens.passes.registry import FAMILY_TITLES, catalog_rows

    if args.markdown:
        sys.stdout.write(catalog_markdown())
        return 0
    rows = catalog_rows()
    if args.json:
        print_json(rows)
        return 0
    family = None
    for row in rows:
        if row["family"] != family:
            family = row["family"]
            print(f"{FAMILY_TITLES[family]}:")
        state = "general (always on)" if row["general"] else ("on" if row["default_enabled"] else "off")
        print(f"  {row['id']:40s} {state:20s} {row['title']}")
    return 0


def run_fuse(args: argparse.Namespace) -> int:
    if not args.watch:
        return fuse_once(args)
    from fuselens.core.errors import FuseLensError
    from fuselens.session.watch import FileWatch, watch_loop

    def again(changed: list[str] | None = None) -> None:
        if changed:
            print(f"\n== {', '.join(changed)} saved: fusing again", file=sys.stderr)
        try:
            fuse_once(args)
        except FuseLensError as e:  # the user fixes it and saves again
            print(f"fuselens: error: {e}", file=sys.stderr)
        sys.stdout.flush()

    watch = FileWatch(watched_files(args))
    if not watch.paths:
        raise FuseLensError(f"--watch watches the model file and the --py-pass files: {args.model} is no file "
                            "and no --py-pass was given")
    again()
    print(f"fuselens: watching {', '.join(watch.paths)} (Ctrl+C stops)", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        watch_loop(watch, again)
    return 0


def watched_files(args: argparse.Namespace) -> list[str]:
    """What `fuse --watch` watches: the model when it is a file, every --py-pass file (a folder: its .py files)."""
    paths = [args.model] if Path(args.model).is_file() else []
    for entry in getattr(args, "py_pass", None) or []:
        paths += [str(p) for p in sorted(Path(entry).rglob("*.py"))] if Path(entry).is_dir() else [entry]
    return paths


def fuse_once(args: argparse.Namespace) -> int:
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import run_pipeline
    from fuselens.passes.report import build_report, format_pipeline, format_report

    config = PassConfig.from_args(args)  # a bad option or rule file fails before the model loads
    model = load_model(args.model)
    protect = model.path if Path(model.path).exists() else None
    for out in (args.output, args.report, args.ledger):  # refuse before any work or any write
        if out:
            check_output_path(out, protect=protect)
    # Only the JSON report carries every match, its details and its explanation: without one, none is
    # kept (on a big graph they cost seconds and tens of MB) and the printed summary and the ledger
    # come from the pipeline's counts.
    wants_json = bool(args.report or args.json)
    pipeline = run_pipeline(model.graph, config, explain=wants_json, details=wants_json)
    report = build_report(pipeline, model=args.model) if wants_json else None
    if args.output:
        write_bytes_atomic(args.output, pipeline.fused.serialized(),
                           protect=protect)
    if args.report:
        write_json_atomic(args.report, report, protect=protect)
    if args.ledger:
        from fuselens.core.ascend.ge.fusion_result import write_fusion_result
        from fuselens.passes.ledger import pipeline_ledger

        write_fusion_result(args.ledger, [pipeline_ledger(pipeline)], protect=protect)
    if args.json:
        print_json(report)
    else:
        print(format_report(report) if report is not None else format_pipeline(pipeline, model=args.model))
        for written in (args.output, args.ledger):
            if written:
                print(f"wrote {written}", file=sys.stderr)
    return 1 if args.strict and pipeline.errors else 0
