"""Does a change leave `fuse` as it was? Run two checkouts' own `main.py fuse` on the same models and compare.

    .venv/bin/python scripts/compare_checkouts.py BEFORE_DIR AFTER_DIR [--nodes 20000] [--keep DIR]

Each checkout runs its own code (a subprocess, cwd and PYTHONPATH that checkout) on every sample that is
built (resources/samples and the Keras ones in the sample cache) and on a synthetic graph of about
`--nodes` nodes (benchmarks/bench_passes.py's Keras-style blocks, written once and given to both), with
`-o`, `--report` and `--ledger`. The fused .pb and the ledger are compared byte for byte, the JSON report
byte for byte after its timings (every "seconds" field: a measurement, different at each run) are set to
0. Prints one row per model; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fuselens.core.formats.samples import SAMPLES, is_built, sample_path

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = ("pb", "report", "ledger")


def synthetic_graph(nodes: int, folder: Path) -> Path:
    """bench_passes' chain of Keras-style blocks, as a .pb."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_passes import keras_blocks

    path = folder / f"synthetic{nodes}.pb"
    path.write_bytes(keras_blocks(nodes).to_bytes())
    return path


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: 0 if k == "seconds" else without_timings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def fuse(checkout: Path, model: Path, folder: Path) -> dict[str, bytes] | str:
    """The three outputs of `checkout`'s fuse of `model`, or the error it printed."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"pb": folder / "fused.pb", "report": folder / "report.json", "ledger": folder / "ledger.json"}
    env = {**os.environ, "PYTHONPATH": str(checkout), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "main.py", "fuse", str(model), "-o", str(files["pb"]),
                           "--report", str(files["report"]), "--ledger", str(files["ledger"])],
                          cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return f"exit {done.returncode}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    report = without_timings(json.loads(files["report"].read_text()))
    return {"pb": files["pb"].read_bytes(), "ledger": files["ledger"].read_bytes(),
            "report": json.dumps(report, indent=2, sort_keys=True).encode()}


def compare(before: Path, after: Path, models: list[Path], work: Path) -> list[tuple[str, list[str]]]:
    rows = []
    for model in models:
        a = fuse(before, model, work / "before" / model.stem)
        b = fuse(after, model, work / "after" / model.stem)
        if isinstance(a, str) or isinstance(b, str):
            cells = [f"before {a}" if isinstance(a, str) else "", f"after {b}" if isinstance(b, str) else ""]
            rows.append((model.stem, [" ".join(c for c in cells if c)] * len(OUTPUTS)))
            continue
        rows.append((model.stem, ["same" if a[k] == b[k] else f"DIFFERS ({len(a[k])} vs {len(b[k])} B)"
                                  for k in OUTPUTS]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout directory (its main.py is run)")
    parser.add_argument("after", type=Path, help="another checkout directory")
    parser.add_argument("--nodes", type=int, default=20000, help="size of the synthetic graph (0: none)")
    parser.add_argument("--keep", type=Path, help="keep the outputs in this folder")
    args = parser.parse_args(argv)
    for checkout in (args.before, args.after):
        if not (checkout / "main.py").is_file():
            print(f"error: {checkout} is not a FuseLens checkout (no main.py)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        models = [sample_path(name, build=False) for name in SAMPLES if is_built(name)]
        if args.nodes:
            models.append(synthetic_graph(args.nodes, work))
        rows = compare(args.before.resolve(), args.after.resolve(), models, work)
    width = max(len(name) for name, _ in rows)
    print(f"{'model':<{width}}  " + "  ".join(f"{k:<10}" for k in OUTPUTS))
    for name, cells in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{c:<10}" for c in cells))
    differing = sum(any(c != "same" for c in cells) for _, cells in rows)
    print(f"{len(rows)} models, {differing} with a difference")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
