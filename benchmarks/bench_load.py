"""Load + inspect time and peak memory per model, each in a fresh process.

    .venv/bin/python benchmarks/bench_load.py [NAME ...]

A fresh process per model gives honest peak RSS (ru_maxrss) and includes import costs. The
loader parses GraphDefs with tensorboard's protos, so no model here imports TensorFlow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph.inspect import summarize
t_import = time.perf_counter() - t0
best_load = best_inspect = float("inf")
for _ in range(3):
    t = time.perf_counter(); model = load_model(sys.argv[1]); t_load = time.perf_counter() - t
    t = time.perf_counter(); summary = summarize(model.graph); t_inspect = time.perf_counter() - t
    best_load, best_inspect = min(best_load, t_load), min(best_inspect, t_inspect)
print(json.dumps({"nodes": summary["nodes"], "import_s": t_import, "load_s": best_load,
                  "inspect_s": best_inspect, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "tensorflow_imported": "tensorflow" in sys.modules}))
"""


def measure(name: str) -> dict:
    from fuselens.core.formats.samples import sample_path

    size = sample_path(name).stat().st_size  # builds a cached sample first, outside the timing
    out = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True, text=True, cwd=ROOT, check=True)
    return {"name": name, "mb": size / 1e6, **json.loads(out.stdout.strip().splitlines()[-1])}


def main(names: list[str]) -> None:
    from fuselens.core.formats.samples import SAMPLES

    names = names or [*[n for n, s in SAMPLES.items() if not s.cached], "mobilenet_v2", "resnet50", "densenet121"]
    print(f"{'model':18s} {'MB':>7s} {'nodes':>6s} {'import s':>9s} {'load s':>8s} {'inspect s':>10s} "
          f"{'peak MB':>8s} TF")
    for name in names:
        r = measure(name)
        print(f"{r['name']:18s} {r['mb']:7.2f} {r['nodes']:6d} {r['import_s']:9.3f} {r['load_s']:8.4f} "
              f"{r['inspect_s']:10.4f} {r['peak_mb']:8.0f} {'yes' if r['tensorflow_imported'] else 'no'}")


if __name__ == "__main__":
    main(sys.argv[1:])
