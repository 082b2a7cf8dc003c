"""AutoFuse on the CPU: the unfused abs->relu->exp chain (TensorFlow, Grappler on) vs the fused XLA kernel.

For each size from the toolchain's reference [128,192] up to 4096x4096, in fp32 and fp16, both
graphs run in a TF1 session on the same input; the output is fetched as an operation (computed,
not copied back). Printed per row: median step time of each, speedup, and the achieved memory
bandwidth (input read + output written, the least traffic any implementation needs, over the
step time) next to a memory-copy bandwidth measured in the same run (numpy copy of a 256 MiB
array: the ceiling of a memory-bound kernel on this machine).

    python benchmarks/bench_autofuse.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from fuselens.core.graph import Graph, proto
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass

SIZES = [(128, 192), (512, 512), (1024, 1024), (2048, 2048), (4096, 4096)]
DTYPES = ["float32", "float16"]
COPY_BYTES = 256 * 2**20


def chain_graph(shape: tuple[int, int], dtype: str) -> Graph:
    """The af_tf_eleandele structure: data1 -> abs -> relu -> exp (output exp_0)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(dtype, shape, name="data1")
        tf.exp(tf.nn.relu(tf.abs(x, name="abs_0"), name="relu_0"), name="exp_0")
    return Graph(proto.GraphDef.FromString(graph.as_graph_def().SerializeToString()), source="bench")


def step_seconds(graph: Graph, output: str, feed: np.ndarray, budget: float) -> float:
    """Median wall time of one session.run after warm-up (XLA compiles on the first run)."""
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
    with tf.compat.v1.Session(graph=tf_graph) as session:
        run = session.make_callable(tf_graph.get_operation_by_name(output), [tf_graph.get_tensor_by_name("data1:0")])
        for _ in range(3):
            run(feed)
        times: list[float] = []
        start = time.perf_counter()
        while len(times) < 5 or (time.perf_counter() - start < budget and len(times) < 500):
            t0 = time.perf_counter()
            run(feed)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth() -> float:
    """Bytes read + written per second by a large numpy copy (best of 5)."""
    src = np.ones(COPY_BYTES // 4, np.float32)
    dst = np.empty_like(src)
    best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(5))
    return 2 * src.nbytes / best


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sizes, short timing budget")
    args = parser.parse_args()
    sizes = SIZES[:1] + SIZES[3:4] if args.quick else SIZES
    budget = 0.3 if args.quick else 1.5

    copy = copy_bandwidth()
    print(f"memory copy (numpy, {COPY_BYTES >> 20} MiB): {copy / 1e9:.1f} GB/s read+written")
    print(f"{'shape':>11} {'dtype':>7} {'unfused ms':>11} {'fused ms':>9} {'speedup':>8} "
          f"{'unfused GB/s':>13} {'fused GB/s':>11} {'fused/copy':>10}  kernel")
    rng = np.random.default_rng(0)
    for dtype in DTYPES:
        for shape in sizes:
            graph = chain_graph(shape, dtype)
            fused, result = AutoFusePass().apply(graph)
            (kernel,) = [m.details["kernel"] for m in result.matches]
            feed = rng.normal(0.0, 1.0, shape).astype(dtype)
            unfused_s = step_seconds(graph, "exp_0", feed, budget)
            fused_s = step_seconds(fused, kernel, feed, budget)
            traffic = 2 * feed.nbytes  # the input read once, the output written once
            print(f"{'x'.join(map(str, shape)):>11} {dtype:>7} {unfused_s * 1e3:11.3f} {fused_s * 1e3:9.3f} "
                  f"{unfused_s / fused_s:8.2f} {traffic / unfused_s / 1e9:13.2f} {traffic / fused_s / 1e9:11.2f} "
                  f"{traffic / fused_s / copy:10.0%}  {kernel}")


if __name__ == "__main__":
    main()
