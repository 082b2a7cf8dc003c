"""`inspect`, `samples` and `export-sample`."""

from __future__ import annotations

import argparse
from pathlib import Path

from fuselens.cli.common import print_json
from fuselens.core.ascend.ge.dump import dump_summary, format_dump_summary, is_dump, load_dump
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import SAMPLES, is_built, sample_path
from fuselens.core.graph.inspect import format_summary, summarize


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="summarize a model or a GE graph dump: counts, op histogram, inputs, outputs, "
                                       "scopes")
    p.add_argument("model", help="a model file or directory, a sample name, or a GE dump (ge_proto_*.txt, "
                                 "ge_onnx_*.pbtxt)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_inspect)

    p = sub.add_parser("samples", help="list the built-in sample models")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_samples)

    p = sub.add_parser("export-sample", help="write a built-in sample as a frozen .pb")
    p.add_argument("name", help="sample name")
    p.add_argument("-o", "--output", required=True, help="the .pb file to write")
    p.set_defaults(func=run_export_sample)


def run_inspect(args: argparse.Namespace) -> int:
    if is_dump(args.model):
        summary = dump_summary(load_dump(args.model))
        text = format_dump_summary
    else:
        summary, text = summarize(load_model(args.model).graph), format_summary
    if args.json:
        print_json(summary)
    else:
        print(text(summary))
    return 0


def run_samples(args: argparse.Namespace) -> int:
    rows = [
        {"name": s.name, "description": s.description, "families": list(s.families),
         "cached": s.cached, "built": is_built(s.name)}
        for s in SAMPLES.values()
    ]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            note = "" if not row["cached"] else ("  [cached]" if row["built"] else "  [built on first use]")
            print(f"{row['name']:20s} {row['description']}{note}")
    return 0


def run_export_sample(args: argparse.Namespace) -> int:
    if args.name not in SAMPLES:
        raise FuseLensError(f"{args.name}: no built-in sample of that name (samples: {', '.join(SAMPLES)})")
    out = Path(args.output)
    write_bytes_atomic(out, sample_path(args.name).read_bytes())
    print(f"wrote {out}")
    return 0
