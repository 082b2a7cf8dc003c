"""Every pass's cost per node from 1k to 50k nodes, and a whole `fuselens fuse` process against Grappler.

    .venv/bin/python benchmarks/bench_passes.py [--sizes 1000,5000,20000,50000] [--repeat 3]
    .venv/bin/python benchmarks/bench_passes.py --process 20000 [--repeat 3] [--bare]
    .venv/bin/python benchmarks/bench_passes.py --profile 20000
    .venv/bin/python benchmarks/bench_passes.py --memory 20000

Graphs: chains of Keras-style blocks built as a GraphDef with core.graph.nodes (no TensorFlow needed to
build them): Conv2D + Keras small-op BatchNorm (weights and statistics read through
`ReadVariableOp` Identities, as a frozen Keras 3 graph has them) + Relu; every second block
continues with an elementwise chain `Sigmoid -> Mul -> AddV2(block input)` (a swish with a
residual), so AutoFuse has kernels to build and cycles to refuse. 1,000 blocks are ~20k nodes.

Per pass (the default pipeline, in toolchain order, each pass given the previous one's graph):
seconds and microseconds per input node, best of `--repeat`. A per-node figure that stays flat
from 1k to 50k nodes is a linear pass.

`--process N[,M...]`: per graph size, the whole `fuselens fuse` process (default passes, `-o` a .pb)
against a whole process that runs TensorFlow Grappler's default optimisation of the same graph
(`tf_optimizer.OptimizeGraph`, graph read from the same .pb), alternated `--repeat` times; the
median CPU time (user + system: wall time moves 2x between runs on a shared machine) and wall time
of each. `--before DIR` adds, alternated with the others, the fuse process of another checkout
(e.g. `git archive <commit> | tar -x -C DIR`): the figures before a change, in the same run.
Memory, from each process's peak RSS (`VmHWM`; a child's `ru_maxrss` counts its parent's RSS at the
fork, here the benchmark's own graph: ~70 MB at 20k nodes, 115 at 50k): a fuse process's growth is its peak minus its
RSS once it has imported what `fuse` imports before it reads the model (TensorFlow too where that
checkout's command line imports it up front), set against the GraphDef's size in memory, the RSS
growth of a process that parses the .pb into a GraphDef (and its protobuf `ByteSize`, the wire size).

`--memory N`: in a child process, what `fuse`'s memory is made of on N nodes, step by step (RSS
after parsing, indexing, the passes and the write), the Python objects alive at the end by owner
(deep sizes), and how much of the RSS is live: Python's small-object allocator's live bytes against
the arenas it holds, and glibc's bytes in use against those it keeps free.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench_amct import CHANNELS, SyntheticBuilder, bare  # noqa: E402

from fuselens.core.graph import Graph, proto  # noqa: E402


class KerasBlocks(SyntheticBuilder):
    """Blocks as a frozen Keras 3 model writes them."""

    def stats(self, name: str) -> dict[str, str]:
        consts = super().stats(name)
        return {k: self.node("Identity", f"{name}/{k}/ReadVariableOp", [c], shapes=((CHANNELS,),))
                for k, c in consts.items()}

    def block(self, x: str, name: str, chain: bool) -> str:
        conv = self.node("Conv2D", f"{name}/conv", [x, self.weight(f"{name}/kernel", (1, 1, CHANNELS, CHANNELS))],
                         {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC"})
        relu = self.node("Relu", f"{name}/relu", [self.small_op_bn(conv, f"{name}/bn")])
        if not chain:
            return relu
        gate = self.node("Sigmoid", f"{name}/swish/Sigmoid", [relu])
        swish = self.node("Mul", f"{name}/swish/mul", [relu, gate])
        return self.node("AddV2", f"{name}/residual", [x, swish])


def keras_blocks(target_nodes: int, seed: int = 0) -> Graph:
    """A chain of KerasBlocks with about `target_nodes` nodes (1,000 blocks: ~20k)."""
    builder = KerasBlocks(seed)
    shape = proto.AttrValue(shape=proto.shape_proto(builder.activation))
    x = builder.node("Placeholder", "input", [], {"dtype": proto.AttrValue(type=proto.DT_FLOAT), "shape": shape},
                     typed=False)
    i = 0
    while len(builder.graph_def.node) < target_nodes:
        x = builder.block(x, f"block{i}", chain=i % 2 == 1)
        i += 1
    builder.node("Identity", "output", [x])
    return Graph(builder.graph_def, source=f"keras-blocks-{target_nodes}")


def time_passes(graph: Graph, repeat: int) -> list[tuple[str, float, int]]:
    """(pass id, best seconds, matches) per default pass, each applied to the previous pass's output."""
    from fuselens.passes.config import PassConfig

    config = PassConfig.default()
    options = config.options()
    rows = []
    current = graph
    for pass_id in config.pass_ids():
        best, out = float("inf"), current
        for _ in range(repeat):
            start = time.perf_counter()
            out, result = config.get_pass(pass_id)(options).apply(current)
            best = min(best, time.perf_counter() - start)
        rows.append((pass_id, best, len(result.matches)))
        current = out
    return rows


GRAPPLER = r"""
import sys, time
t0 = time.perf_counter()
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
from tensorflow.python.grappler import tf_optimizer
gd = graph_pb2.GraphDef.FromString(open(sys.argv[1], "rb").read())
metagraph = meta_graph_pb2.MetaGraphDef()
metagraph.graph_def.CopyFrom(gd)
fetches = meta_graph_pb2.CollectionDef()
fetches.node_list.value.append("output")
metagraph.collection_def["train_op"].CopyFrom(fetches)
out = tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), metagraph)
open(sys.argv[2], "wb").write(out.SerializeToString())
print(int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]) / 1024,
      file=sys.stderr)
"""

FUSE_RSS = r"""
import os, sys
sys.path.insert(0, os.getcwd())
from fuselens import cli
from fuselens.main import main
from fuselens.passes.registry import catalog
catalog()
if "fuse" not in getattr(cli, "LIGHT_COMMANDS", ()):  # that command line imports TensorFlow before the model
    cli.import_tensorflow()
base = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
try:
    main(sys.argv[1:])
finally:
    peak = int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]) / 1024
    print(base, peak, file=sys.stderr)
"""

PARSE_RSS = r"""
import os, sys
from fuselens.core.graph import proto
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
data = open(sys.argv[1], "rb").read()
before = rss()
gd = proto.GraphDef.FromString(data)
print(rss() - before, gd.ByteSize() / 2**20)
"""


MEMORY = r"""
import contextlib, ctypes, gc, os, re, sys, tempfile
sys.path.insert(0, os.getcwd())
from fuselens.core.graph import proto
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.formats.loaders import load_model
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import catalog

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

class MallInfo(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t)
                for f in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo

def allocators():
    # (pymalloc live MB, pymalloc arenas MB, glibc in use MB, glibc free but kept MB)
    with tempfile.TemporaryFile("w+") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        sys._debugmallocstats()
        os.dup2(saved, 2)
        os.close(saved)
        f.seek(0)
        text = f.read()
    live = int(re.search(r"# bytes in allocated blocks\s+=\s+([\d,]+)", text).group(1).replace(",", ""))
    arenas = int(re.search(r"# arenas allocated current\s+=\s+(\d+)", text).group(1))
    m = libc.mallinfo2()
    return live / 2**20, arenas, (m.uordblks + m.hblkhd) / 2**20, m.fordblks / 2**20

def deep(root, seen):
    total, stack = 0, [root]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack += [*o.keys(), *o.values()]
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack += o
        elif hasattr(o, "__dict__"):
            stack.append(o.__dict__)
        elif hasattr(o, "__slots__"):
            stack += [getattr(o, a) for a in o.__slots__ if hasattr(o, a)]
    return total / 2**20

catalog()
start, alloc0 = rss(), allocators()
def step(what):
    a = allocators()
    print(f"| {what} | {rss() - start:.1f} | {a[0] - alloc0[0]:.1f} | {a[1] - alloc0[1]} | {a[2] - alloc0[2]:.1f} "
          f"| {a[3] - alloc0[3]:.1f} |")
print("| after | RSS growth MB | pymalloc live MB | pymalloc arenas MB | glibc in use MB | glibc kept free MB |")
print("|---|---:|---:|---:|---:|---:|")
graph = load_model(sys.argv[1]).graph  # as fuse reads it: kept as the .pb's bytes, a node decoded when read
step("reading the .pb and indexing it (Graph)")
pipeline = run_pipeline(graph, explain=False, details=False)  # as `fuse` without a report runs it
gc.collect()
step("the default passes")
write_bytes_atomic(sys.argv[2], pipeline.fused.serialized())
step("writing the fused .pb")
seen = {id(name) for name in graph.nodes}
names = sum(sys.getsizeof(name) for name in graph.nodes) / 2**20
print(f"\nPython objects alive at the end (deep sizes, MB): node names {names:.1f}")
for label, g in (("input graph", graph), ("fused graph", pipeline.fused)):
    parts = {a: deep(g.__dict__[a], seen) for a in ("nodes", "_names", "_in_start", "_in_node", "_in_port",
             "_in_reader", "_out_start", "_out_edge", "_ops", "_topological", "_const_values") if a in g.__dict__}
    shown = ", ".join(f"{a.strip('_')} {v:.1f}" for a, v in parts.items())
    shown = shown.replace("nodes", "nodes (name -> id, NodeDef records)", 1)
    print(f"  {label}: {sum(parts.values()):.1f} ({shown})")
results = {kind: deep([getattr(r, kind) for r in pipeline.results], seen)
           for kind in ("matches", "near_misses", "rewrites")}
print("  pass results: " + ", ".join(f"{k} {v:.1f}" for k, v in results.items()))
del g
print("\nLive memory freed by dropping, in this order (pymalloc live MB + glibc in use MB):")
def drop(what):
    global last
    gc.collect()
    now = allocators()
    print(f"  {what}: {last[0] - now[0]:.1f} + {last[2] - now[2]:.1f} = {last[0] - now[0] + last[2] - now[2]:.1f}")
    last = now
last = allocators()
pipeline.results.clear()
drop("the pass results (matches, near misses, rewrites)")
fused_nodes, fused_functions = len(pipeline.fused), len(pipeline.fused.library.function)
pipeline.fused = None
drop(f"the fused graph ({fused_nodes:,} nodes, {fused_functions} functions: records, library, indexes)")
records = graph._graph_def
del pipeline, graph
drop("the input graph's indexes (Graph)")
size = len(records.node.data) / 2**20
del records
drop(f"the input graph's bytes ({size:.1f} MB) and its parsed library and versions")
data = open(sys.argv[2], "rb").read()
last = allocators()
fused = proto.GraphDef.FromString(data)
now = allocators()
print(f"the fused GraphDef parsed afresh: {now[0] - last[0] + now[2] - last[2]:.1f} MB (pymalloc live + glibc in use)")
"""


@dataclass
class Runs:
    """One kind of process, run several times: (wall s, CPU s, numbers it printed) per run."""

    name: str
    runs: list[tuple[float, float, list[float]]] = field(default_factory=list)

    def cpu(self) -> float:
        return statistics.median(c for _, c, _ in self.runs)

    def wall(self) -> float:
        return statistics.median(w for w, _, _ in self.runs)

    def spread(self) -> str:
        return ", ".join(f"{c:.2f}" for _, c, _ in self.runs)


def _process(args: list[str], cwd: Path = ROOT) -> tuple[float, float, list[float]]:
    """(wall seconds, CPU seconds (user + system), the numbers on the last line of stderr) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{args[:3]} in {cwd} failed:\n{out.stderr[-2000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, [float(x) for x in out.stderr.strip().splitlines()[-1].split()]


def compare_processes(nodes: int, repeat: int, before: Path | None, bare_pb: bool = False) -> None:
    graph = keras_blocks(nodes)
    with tempfile.TemporaryDirectory() as tmp:
        pb = Path(tmp, "graph.pb")
        pb.write_bytes(bare(graph) if bare_pb else graph.to_bytes())
        parsed_mb, wire_mb = (float(x) for x in subprocess.run(
            [sys.executable, "-c", PARSE_RSS, str(pb)], cwd=ROOT, capture_output=True, text=True,
            check=True).stdout.split())
        kinds = [(Runs("fuse, before"), before)] if before else []
        kinds += [(Runs("fuse, now"), ROOT), (Runs("Grappler"), None)]
        for _ in range(repeat):  # alternated, so every kind sees the same load on a shared machine
            for runs, checkout in kinds:
                if checkout is None:
                    runs.runs.append(_process(["-c", GRAPPLER, str(pb), str(Path(tmp, "grappler.pb"))]))
                else:
                    runs.runs.append(_process(["-c", FUSE_RSS, "fuse", str(pb), "-o", str(Path(tmp, "fused.pb"))],
                                              cwd=checkout))
    grappler = kinds[-1][0]
    kind = " (a bare .pb: no _output_shapes)" if bare_pb else ""
    print(f"\n{len(graph):,} nodes{kind}; GraphDef {wire_mb:.1f} MB on the wire, {parsed_mb:.1f} MB in memory "
          f"(parsed); median of {repeat}, alternated")
    print("| process | CPU s | wall s | / Grappler (CPU) | CPU s per run | peak RSS MB | growth MB "
          "| growth / GraphDef |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for runs, checkout in kinds:
        peak = max(r[-1] for _, _, r in runs.runs)
        growth = "" if checkout is None else f"{max(r[1] - r[0] for _, _, r in runs.runs):.0f}"
        ratio = "" if checkout is None else f"{float(growth) / parsed_mb:.1f}x"
        print(f"| {runs.name} | {runs.cpu():.2f} | {runs.wall():.2f} | {runs.cpu() / grappler.cpu():.2f}x | "
              f"{runs.spread()} | {peak:.0f} | {growth} | {ratio} |", flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2500,5000,10000,20000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--process", metavar="N[,M...]", help="compare whole processes on graphs of these sizes")
    parser.add_argument("--before", type=Path, metavar="DIR", help="with --process: also the fuse of this checkout")
    parser.add_argument("--bare", action="store_true", help="with --process: the .pb without _output_shapes")
    parser.add_argument("--profile", type=int, metavar="N", help="cProfile the default pipeline on N nodes")
    parser.add_argument("--memory", type=int, metavar="N", help="what fuse's memory is made of on N nodes")
    args = parser.parse_args(argv)
    if args.process:
        for nodes in args.process.split(","):
            compare_processes(int(nodes), args.repeat, args.before, args.bare)
        return
    if args.memory:
        with tempfile.TemporaryDirectory() as tmp:
            pb = Path(tmp, "graph.pb")
            pb.write_bytes(keras_blocks(args.memory).to_bytes())
            subprocess.run([sys.executable, "-c", MEMORY, str(pb), str(Path(tmp, "fused.pb"))], cwd=ROOT, check=True)
        return
    if args.profile:
        from fuselens.passes.pipeline import run_pipeline

        graph = keras_blocks(args.profile)
        cProfile.runctx("run_pipeline(graph)", globals(), {"graph": graph, "run_pipeline": run_pipeline},
                        "/tmp/bench_passes.prof")
        pstats.Stats("/tmp/bench_passes.prof").sort_stats("cumulative").print_stats(40)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| nodes | pass | matches | s | us/node |")
    print("|---:|---|---:|---:|---:|")
    for n in sizes:
        graph = keras_blocks(n)
        for pass_id, seconds, matches in time_passes(graph, args.repeat):
            print(f"| {len(graph):,} | {pass_id} | {matches} | {seconds:.3f} | {seconds / len(graph) * 1e6:.1f} |",
                  flush=True)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
