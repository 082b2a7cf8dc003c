"""Fuzz every loader and importer: >= 1,000 mutated real inputs per format, a sample through the CLI.

    .venv/bin/python benchmarks/bench_fuzz.py [--cases 1000] [--cli 20] [--seed 0] [FORMAT ...]

Prints per format how many cases loaded, gave the one-line error, or hit a bug (known bugs, which a
strict xfail test in tests/fuzz/test_fuzz_found.py reproduces, are counted apart), and the same for the
command-line sample (`fuselens fuse` / `import-profile` / `inspect` / `ledger` as a subprocess). Every
new bug's input is kept under the printed folder. Exit status 1 when a new bug was found.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import FORMATS, fuzz  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("formats", nargs="*", metavar="FORMAT", help=f"default: all ({', '.join(FORMATS)})")
    parser.add_argument("--cases", type=int, default=1000, help="in-process cases per format")
    parser.add_argument("--cli", type=int, default=20, help="of those, cases also run through the command line")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    unknown = [f for f in args.formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown format {unknown[0]} (formats: {', '.join(FORMATS)})")
    work = Path(tempfile.mkdtemp(prefix="fuselens-fuzz-"))
    print("| format | cases | loaded | one-line error | new bug | known bug | s | CLI cases | CLI exit 0 | CLI exit 2 "
          "| CLI new bug | CLI s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    new_bugs = []
    totals = [0] * 9
    for name in args.formats or list(FORMATS):
        report = fuzz(FORMATS[name], args.cases, work / name, seed=args.seed, cli_cases=args.cli)
        cli_bugs = sum(1 for _, what, _ in report.bugs if what.startswith("command line:"))
        row = [report.cases, report.outcomes["loaded"], report.outcomes["error"], len(report.bugs) - cli_bugs,
               len(report.known), report.cli_cases, report.cli_outcomes["loaded"], report.cli_outcomes["error"],
               cli_bugs]
        totals = [t + v for t, v in zip(totals, row)]
        print(f"| {name} | {' | '.join(f'{v:,}' for v in row[:5])} | {report.seconds:.1f} | "
              f"{' | '.join(f'{v:,}' for v in row[5:])} | {report.cli_seconds:.1f} |", flush=True)
        new_bugs += [(name, case, what, path) for case, what, path in report.bugs]
    print(f"| all | {' | '.join(f'{v:,}' for v in totals[:5])} |  | {' | '.join(f'{v:,}' for v in totals[5:])} |  |")
    for name, case, what, path in new_bugs:
        print(f"BUG {name} case {case}: {what}\n    input: {path}")
    print(f"cases and bug inputs under {work}")
    return 1 if new_bugs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
