"""`fuselens fuse` never imports TensorFlow, also on a bare .pb (a frozen GraphDef without `_output_shapes`,
which is what most users have): the shapes the passes ask for come from core.graph.shapes' table. Each
sample and a Keras zoo model is fused as it is and bare, in one child process that runs `main.py fuse` per
file and says at exit whether `tensorflow` was imported; bare and as-is must fuse the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuselens.core.graph import proto
from fuselens.core.graph.wire import SerializedGraphDef
from tests.zoo.models import zoo_model

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "resources" / "samples").glob("*.pb"))
ZOO_MODEL = "MobileNetV3Small"
# Runs `main.py fuse` on each (model, output, report) of argv[1] (JSON) in this one process, then prints
# the exit codes and whether TensorFlow was imported.
DRIVER = """
import json, sys
from fuselens import main
jobs = json.load(open(sys.argv[1]))
codes = [main.main(["fuse", model, "-o", out, "--report", report]) for model, out, report in jobs]
print(json.dumps({"codes": codes, "tensorflow": sorted(m for m in sys.modules if m.split(".")[0] == "tensorflow")[:3]}))
"""


def bare_copy(model: Path, folder: Path) -> Path:
    """`model` with `_output_shapes` taken off every node (and every function body)."""
    graph_def = proto.GraphDef.FromString(model.read_bytes())
    for node in [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]:
        if "_output_shapes" in node.attr:
            del node.attr["_output_shapes"]
    path = folder / f"{model.stem}-bare.pb"
    path.write_bytes(graph_def.SerializeToString(deterministic=True))
    return path


def without_shapes(path: Path) -> bytes:
    """A fused .pb with every `_output_shapes` taken off, for comparing what the passes did."""
    read = SerializedGraphDef.read(path.read_bytes())
    graph_def = read.parsed() if isinstance(read, SerializedGraphDef) else read
    for node in graph_def.node:
        if "_output_shapes" in node.attr:
            del node.attr["_output_shapes"]
    return graph_def.SerializeToString(deterministic=True)


def outcome(report: Path) -> list[tuple]:
    """Per pass: its matches, near misses, skips, errors and rewrites (not its timing)."""
    passes = json.loads(report.read_text())["passes"]
    return [tuple(p[k] for k in ("pass", "matches", "near_misses", "skipped", "errors", "rewrites")) for p in passes]


def fuse_in_child(models: list[Path], folder: Path) -> list[tuple[Path, Path]]:
    jobs = [(str(m), str(folder / f"{m.stem}-fused.pb"), str(folder / f"{m.stem}-report.json")) for m in models]
    (folder / "jobs.json").write_text(json.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(folder / "jobs.json")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["codes"] == [0] * len(models), said
    assert said["tensorflow"] == [], f"fuse imported TensorFlow ({said['tensorflow']})"
    return [(Path(out), Path(report)) for _, out, report in jobs]


def check_same_fusion(originals: list[Path], folder: Path) -> None:
    bare = [bare_copy(model, folder) for model in originals]
    results = fuse_in_child([*originals, *bare], folder)
    for model, (out, report), (bare_out, bare_report) in zip(originals, results, results[len(originals):]):
        assert outcome(bare_report) == outcome(report), model.name
        assert without_shapes(bare_out) == without_shapes(out), model.name


def test_fuse_imports_no_tensorflow_on_every_sample_with_and_without_shapes(tmp_path):
    check_same_fusion(SAMPLES, tmp_path)


@pytest.mark.slow
def test_fuse_imports_no_tensorflow_on_a_bare_keras_model(tmp_path):
    check_same_fusion([zoo_model(ZOO_MODEL)], tmp_path)
