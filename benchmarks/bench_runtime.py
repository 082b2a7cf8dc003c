"""Compile-and-run figures for MobileNetV2: step time original vs fused, and what profiling costs.

    .venv/bin/python benchmarks/bench_runtime.py [--model mobilenet_v2] [--steps 100] [--warmup 10]

The graph is fused with the default passes (AMCT + AutoFuse), as `fuselens run` does, and with
the AMCT passes alone; each variant's row follows the original's row of the same run. Each
configuration is one `core.runtime.run` (a child process, both graphs, seeded inputs):
once with RunOptions FULL_TRACE step stats on every timed step (what the kernel table needs),
once without. "profiling overhead" is the traced median step time over the untraced one;
"run wall" is the whole run including the child's start and TensorFlow import.

    .venv/bin/python benchmarks/bench_runtime.py --lowering [--models mobilenet_v2,resnet50,TFKerasBERT] [--repeat 5]

`--lowering`: default passes, CPU, no trace: fused median step time over the original's in the
same run, both graphs timed step by step in turn (speedup, >1 = fused faster), `--repeat` runs
each with the CPU lowering of conv/matmul epilogue, LayerNorm and contraction-tail kernels off (every AutoFuse
node an XLA kernel, as before core/runtime/lowering.py) and on, alternated so both see the same
load; median and range of the per-run speedups. A model is a sample, a file, or a name of the
tests' Keras zoo (tests/zoo/models.py, built and cached on first use), such as TFKerasBERT.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from fuselens.core.formats.loaders import load_model  # noqa: E402
from fuselens.core.runtime import RunRequest, run  # noqa: E402
from fuselens.core.runtime.lowering import LOWERING_ENV  # noqa: E402
from fuselens.passes.config import PassConfig  # noqa: E402
from fuselens.passes.pipeline import run_pipeline  # noqa: E402
from tests.zoo.models import ZOO, zoo_model  # noqa: E402


def lowering_table(models: list[str], repeat: int, steps: int, warmup: int) -> None:
    """Speedup of the default-pass fused graph with the CPU lowering off and on, `repeat` runs each."""
    print("| model | AutoFuse nodes on CPU | runs | speedup median | speedup min-max | original median step (ms) |")
    print("|---|---|---:|---:|---:|---:|")
    for model in models:
        graph = load_model(zoo_model(model) if model in ZOO else model).graph
        pipeline = run_pipeline(graph)
        speedups: dict[str, list[float]] = {"off": [], "on": []}
        original_ms: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(repeat):
            for mode in ("off", "on"):
                os.environ[LOWERING_ENV] = mode  # the child inherits it
                result = run(RunRequest(graph, pipeline.fused, model=model, config=pipeline.config, steps=steps,
                                        warmup=warmup, trace=False, interleave=True,
                                        original_to_final=pipeline.provenance.original_to_final()))
                assert result.allclose, f"{model}: outputs differ with lowering {mode}"
                speedups[mode].append(result.speedup())
                original_ms[mode].append(result.graphs["original"].summary()["step_median_us"] / 1000)
        os.environ.pop(LOWERING_ENV, None)
        modes = (("off", "XLA kernels (before)"), ("on", "epilogues, LayerNorms, contraction tails as original ops"))
        for mode, title in modes:
            values = speedups[mode]
            print(f"| {model} | {title} | {len(values)} | {statistics.median(values):.2f}x | "
                  f"{min(values):.2f}-{max(values):.2f}x | {statistics.median(original_ms[mode]):.1f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--lowering", action="store_true", help="speedup with the CPU lowering off and on")
    parser.add_argument("--models", default="mobilenet_v2,resnet50", help="models for --lowering")
    parser.add_argument("--repeat", type=int, default=5, help="runs per mode for --lowering")
    args = parser.parse_args()
    if args.lowering:
        lowering_table(args.models.split(","), args.repeat, args.steps, args.warmup)
        return 0

    graph = load_model(args.model).graph
    variants = {"AMCT + AutoFuse (defaults)": run_pipeline(graph),
                "AMCT only": run_pipeline(graph, PassConfig.default().with_pass("AutoFusePass", on=False))}
    print(f"{args.model}: {len(graph)} nodes, {args.steps} timed steps after {args.warmup} warm-up, CPU, "
          f"{os.cpu_count()} cores\n")
    print("| graph | nodes | median step, no trace (ms) | median step, FULL_TRACE (ms) | profiling overhead | "
          "kernels | kernel time / step (ms) | speedup vs original (no trace) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    notes = []
    for name, pipeline in variants.items():
        results = {}
        for traced in (False, True):
            start = time.perf_counter()
            results[traced] = run(RunRequest(graph, pipeline.fused, model=args.model, config=pipeline.config,
                                             steps=args.steps, warmup=args.warmup, trace=traced,
                                             original_to_final=pipeline.provenance.original_to_final()))
            results[traced].seconds = time.perf_counter() - start
        for label, g in (("original", graph), ("fused", pipeline.fused)):
            plain = results[False].graphs[label].summary()
            traced = results[True].graphs[label].summary()
            speedup = f"{results[False].speedup():.2f}x" if label == "fused" else ""
            title = name if label == "fused" else "original (same run)"
            print(f"| {title} | {len(g)} | {plain['step_median_us'] / 1000:.2f} | "
                  f"{traced['step_median_us'] / 1000:.2f} | "
                  f"{traced['step_median_us'] / plain['step_median_us']:.2f}x | {traced['kernel_count']} | "
                  f"{traced['kernel_us_per_step'] / 1000:.2f} | {speedup} |")
        comparison = results[True].comparison[0]
        notes.append(f"{name}: allclose {results[True].allclose} (max abs {comparison.max_abs:.2g}); "
                     f"run wall {results[False].seconds:.1f} s without trace, {results[True].seconds:.1f} s with")
    print()
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
