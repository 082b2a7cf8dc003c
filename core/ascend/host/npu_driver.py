#!/usr/bin/env python3
"""Run a FuseLens NPU bundle on an Ascend host: the baseline and the fused graph, each in a process
of its own with its own environment, then put what the toolchain wrote under one results folder.

    python run_on_npu.py [--steps N] [--warmup N] [--results DIR] [--msprof PATH] [--overwrite]

The toolchain reads AUTOFUSE_FLAGS, AUTOFUSE_DFX_FLAGS and the GE dump variables once per process,
so one process cannot run an unfused baseline and an AutoFuse run: this driver starts itself once
per side (`--side original|fused`) with that side's variables, as bundle.json gives them. Then it
exports each side's profile with msprof and prints the one command that imports everything.

Written by FuseLens (`fuselens export-npu-script`) from core/ascend/host/npu_driver.py. It runs on the
host's Python and TensorFlow, so it is free of FuseLens imports and of syntax newer than Python 3.7.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIDES = ("original", "fused")
# What the toolchain reads from the environment of the process it runs in; each side sets its own.
SIDE_VARIABLES = ("AUTOFUSE_FLAGS", "AUTOFUSE_DFX_FLAGS", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH",
                  "ASCEND_WORK_PATH", "ASCEND_PROCESS_LOG_PATH", "ASCEND_GLOBAL_LOG_LEVEL")
# INFO: the level at which the TF adapter and GE log which scope passes matched and how long each FE
# fusion pass ran (the toolchain's default, 3, logs errors only).
LOG_LEVEL = 1


def load_bundle():
    with open(os.path.join(HERE, "bundle.json")) as f:
        return json.load(f)


def side_environment(bundle, side, results, base=None, log_level=LOG_LEVEL):
    """The environment of one side's process: its AUTOFUSE_FLAGS (and per-node skips), GE graph dumps into
    results/<side>/ge_dumps, FE's fusion_result.json into results/<side>/ascend_work/FE/<pid>/, and the
    toolchain's logs (plog-*.log, device-*.log) at `log_level` into results/<side>/log
    (ASCEND_PROCESS_LOG_PATH comes before ASCEND_WORK_PATH and $HOME/ascend/log, so a user's own setting
    of it is replaced for the run)."""
    spec = bundle["sides"][side]
    folder = os.path.join(results, side)
    env = dict(os.environ if base is None else base)
    for key in SIDE_VARIABLES:
        env.pop(key, None)
    env["AUTOFUSE_FLAGS"] = spec["autofuse_flags"]
    if spec.get("autofuse_skip_file"):
        env["AUTOFUSE_DFX_FLAGS"] = "--skip_node_names_cfg=" + os.path.join(HERE, spec["autofuse_skip_file"])
    env.update(bundle["dump"])
    env["DUMP_GRAPH_PATH"] = os.path.join(folder, "ge_dumps")
    env["ASCEND_WORK_PATH"] = os.path.join(folder, "ascend_work")
    env["ASCEND_PROCESS_LOG_PATH"] = os.path.join(folder, "log")
    env["ASCEND_GLOBAL_LOG_LEVEL"] = str(log_level)
    return env


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, help="timed steps per side (default: the bundle's)")
    parser.add_argument("--warmup", type=int, help="untimed steps first (default: the bundle's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (the same for both sides)")
    parser.add_argument("--results", help="where everything goes (default: results/ next to this script)")
    parser.add_argument("--msprof", default="msprof", help="the msprof executable")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs each side")
    parser.add_argument("--overwrite", action="store_true", help="replace the results of an earlier run")
    parser.add_argument("--log-level", type=int, choices=range(5), default=LOG_LEVEL,
                        help="the toolchain's log level (ASCEND_GLOBAL_LOG_LEVEL) for both sides: 1 INFO (default: "
                             "the lines saying which scope passes matched), 3 ERROR (smaller logs), 4 none")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    bundle = load_bundle()
    results = os.path.abspath(args.results or os.path.join(HERE, "results"))
    if args.side:
        return run_side(bundle, args.side, results, args)
    for side in SIDES:
        folder = os.path.join(results, side)
        if os.path.isdir(folder) and os.listdir(folder):
            if not args.overwrite:
                print(f"run_on_npu: {folder} holds an earlier run; move it away or pass --overwrite")
                return 2
            shutil.rmtree(folder)
    for side in SIDES:
        os.makedirs(os.path.join(results, side), exist_ok=True)
        spec = bundle["sides"][side]
        scope = ",".join(spec["scope_passes"]) or "(none)"
        print(f"== {side}: {spec['graph']}; enable_scope_fusion_passes={scope}; "
              f"AUTOFUSE_FLAGS={spec['autofuse_flags']}; fusion switch file {spec['fusion_switch_file']}")
        sys.stdout.flush()
        command = [args.python, os.path.abspath(__file__), "--side", side, "--results", results,
                   "--seed", str(args.seed)]
        for option, value in (("--steps", args.steps), ("--warmup", args.warmup)):
            if value is not None:
                command += [option, str(value)]
        code = subprocess.call(command, env=side_environment(bundle, side, results, log_level=args.log_level))
        if code != 0:
            print(f"run_on_npu: the {side} side failed (exit code {code}); see its output above")
            return code
    for side in SIDES:
        collect(results, side, args.msprof)
    compare_outputs(results)
    shown = os.path.relpath(results) if not os.path.relpath(results).startswith("..") else results
    print(f"done: bring back {shown} and run on the FuseLens machine:")
    print("  " + bundle["import_command"].replace("{results}", shown))
    return 0


def collect(results, side, msprof):
    """Export the side's profile with msprof and move FE's fusion_result.json to results/<side>/."""
    import npu_session

    folder = os.path.join(results, side)
    try:
        for prof in npu_session.msprof_export(os.path.join(folder, "profiling"), msprof):
            print(f"{side}: exported {prof}")
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"{side}: no profile exported ({e}); run `msprof --export=on --output=PROF_DIR` on "
              f"{os.path.join(folder, 'profiling')} yourself")
    found = sorted(glob.glob(os.path.join(folder, "ascend_work", "FE", "*", "fusion_result.json")))
    if found:
        shutil.move(found[-1], os.path.join(folder, "fusion_result.json"))
    else:
        print(f"{side}: FE wrote no fusion_result.json under {os.path.join(folder, 'ascend_work')}")


def compare_outputs(results):
    import numpy as np

    loaded = []
    for side in SIDES:
        path = os.path.join(results, side, "outputs.npz")
        if not os.path.exists(path):
            return
        loaded.append(np.load(path))
    original, fused = loaded
    for key in sorted(original.files, key=int):
        a, b = np.asarray(original[key], np.float64), np.asarray(fused[key], np.float64)
        error = float(np.abs(a - b).max()) if a.size and a.shape == b.shape else float("nan")
        print(f"output {key}: max abs error {error:.3g} between the sides")


# ---- one side, in its own process ---------------------------------------------------------------
def load_graph(tf, path):
    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    return graph


def make_feeds(np, inputs, seed):
    rng = np.random.RandomState(seed)
    feeds = {}
    for name, (dtype, shape) in sorted(inputs.items()):
        if np.issubdtype(np.dtype(dtype), np.floating):
            feeds[name + ":0"] = rng.normal(0.0, 1.0, shape).astype(dtype)
        elif dtype == "bool":
            feeds[name + ":0"] = rng.random_sample(shape) > 0.5
        else:
            feeds[name + ":0"] = rng.randint(0, 4, shape).astype(dtype)
    return feeds


def run_side(bundle, side, results, args):
    """Run one graph under the side's switches with profiling on; record what it was given."""
    wanted = side_environment(bundle, side, results)
    for key in SIDE_VARIABLES:  # started by hand (not by the driver): the same variables, before the adapter loads
        if key in wanted:
            os.environ[key] = wanted[key]
        else:
            os.environ.pop(key, None)
    import npu_session
    import numpy as np
    import tensorflow as tf

    spec = bundle["sides"][side]
    folder = os.path.join(results, side)
    os.makedirs(folder, exist_ok=True)
    adapter = npu_session.import_npu(bundle["mode"])
    graph = load_graph(tf, os.path.join(HERE, spec["graph"]))
    switch_file = os.path.join(HERE, spec["fusion_switch_file"])
    config = npu_session.npu_session_config(tf, spec["scope_passes"], switch_file, os.path.join(folder, "profiling"))
    feeds = make_feeds(np, bundle["inputs"], args.seed)
    steps = bundle["steps"] if args.steps is None else args.steps
    warmup = bundle["warmup"] if args.warmup is None else args.warmup
    times = []
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        for _ in range(warmup):
            session.run(spec["fetches"], feeds)
        for _ in range(steps):
            start = time.perf_counter()
            values = session.run(spec["fetches"], feeds)
            times.append((time.perf_counter() - start) * 1e6)
    np.savez(os.path.join(folder, "outputs.npz"), **{str(i): v for i, v in enumerate(values)})
    ordered = sorted(times)
    record = {"side": side, "adapter": adapter, "graph": spec["graph"], "fetches": spec["fetches"],
              "steps": steps, "warmup": warmup, "step_us": times,
              "median_us": ordered[len(ordered) // 2] if ordered else None,
              "enable_scope_fusion_passes": spec["scope_passes"], "fusion_switch_file": switch_file,
              "environment": {k: os.environ.get(k) for k in SIDE_VARIABLES}}
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump(record, f, indent=2)
    print(f"{side}: {steps} steps, median {record['median_us'] or 0.0:.1f} us/step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
