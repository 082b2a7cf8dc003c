"""`lesson`: one self-contained HTML (or Markdown) page that explains every match of a fused model."""

from __future__ import annotations

import argparse
from pathlib import Path

from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.formats.io import check_output_path
from fuselens.core.formats.loaders import load_model


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lesson", help="write a lesson page: every match drawn before/after and explained "
                                      "with its numbers (HTML, or Markdown for a .md name)")
    p.add_argument("model", help="a model file or directory, or a sample name")
    add_pass_selection_args(p)
    p.add_argument("--match", action="append", metavar="ID", dest="matches",
                   help="explain only this match (PassId:anchor, as the fuse report lists it); repeatable")
    p.add_argument("-o", "--output", metavar="LESSON.html", required=True,
                   help="the page to write (atomically); a name ending in .md writes Markdown")
    p.set_defaults(func=run_lesson)


def run_lesson(args: argparse.Namespace) -> int:
    from fuselens.core.errors import FuseLensError
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import run_pipeline
    from fuselens.session.lesson import write_lesson

    config = PassConfig.from_args(args)
    model = load_model(args.model)
    protect = model.path if Path(model.path).exists() else None
    check_output_path(args.output, protect=protect)
    pipeline = run_pipeline(model.graph, config)
    if args.matches:
        known = {m.id for r in pipeline.results for m in r.matches}
        unknown = [m for m in args.matches if m not in known]
        if unknown:
            raise FuseLensError(f"no match {unknown[0]} in {args.model} with these passes; "
                                f"`fuselens fuse {args.model}` lists the matches")
    written = write_lesson(args.output, pipeline, model=args.model, match_ids=args.matches, protect=protect)
    count = len(args.matches) if args.matches else sum(len(r.matches) for r in pipeline.results)
    print(f"{written}: {count} matches explained")
    return 0
