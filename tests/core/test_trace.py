"""Chrome trace export passes a schema check (what Perfetto / chrome://tracing need); CSV export.

The trace comes from real TensorFlow step stats (one traced session.run in this process), so
the check covers what a run actually produces.
"""

from __future__ import annotations

import csv
import io
import json
import numbers

import pytest

from fuselens.core.formats.execute import random_feeds
from fuselens.core.graph import proto
from fuselens.core.measure.profile import build_graph_run
from fuselens.core.measure.result import RunResult
from fuselens.core.runtime.child import step_events
from fuselens.core.runtime.trace import CSV_COLUMNS, chrome_trace, kernel_csv, write_chrome_trace

METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def check_chrome_trace(data: object) -> list[str]:
    """Problems with a Chrome trace JSON object (Trace Event Format, JSON object form); [] if none."""
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        return ["top level must be an object with a traceEvents list"]
    problems = []
    named_pids, named_tids = set(), set()
    for i, event in enumerate(data["traceEvents"]):
        if not isinstance(event, dict):
            problems.append(f"event {i} is not an object")
            continue
        for key, kind in (("ph", str), ("name", str), ("pid", int), ("tid", int)):
            if not isinstance(event.get(key), kind) or isinstance(event.get(key), bool):
                problems.append(f"event {i}: {key} missing or not {kind.__name__}")
        if event.get("ph") == "M":
            if event.get("name") not in METADATA_NAMES or not isinstance(event.get("args"), dict):
                problems.append(f"event {i}: bad metadata event")
            elif event["name"] == "process_name":
                named_pids.add(event["pid"])
            elif event["name"] == "thread_name":
                named_tids.add((event["pid"], event["tid"]))
        elif event.get("ph") == "X":
            for key in ("ts", "dur"):
                value = event.get(key)
                if not isinstance(value, numbers.Real) or isinstance(value, bool) or value < 0:
                    problems.append(f"event {i}: {key} must be a number >= 0, got {value!r}")
            if not isinstance(event.get("args", {}), dict):
                problems.append(f"event {i}: args must be an object")
        else:
            problems.append(f"event {i}: unexpected ph {event.get('ph')!r}")
    for event in data["traceEvents"]:
        if isinstance(event, dict) and event.get("ph") == "X":
            if event.get("pid") not in named_pids:
                problems.append(f"pid {event.get('pid')} has no process_name")
            if (event.get("pid"), event.get("tid")) not in named_tids:
                problems.append(f"tid {event.get('tid')} of pid {event.get('pid')} has no thread_name")
    return problems


@pytest.fixture(scope="module")
def traced_result(load_sample):
    """A RunResult from one real FULL_TRACE step of abs_relu_exp, as the 'original' and 'fused' graph."""
    import tensorflow as tf

    graph = load_sample("abs_relu_exp")
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
    feeds = {f"{k}:0": v for k, v in random_feeds(graph).items()}
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    metadata = tf.compat.v1.RunMetadata()
    with tf.compat.v1.Session(graph=tf_graph) as session:
        session.run("exp_0:0", feeds, options=options, run_metadata=metadata)
    events = step_events(0, metadata.step_stats)
    runs = {label: build_graph_run(label, graph, events, [100.0], 1) for label in ("original", "fused")}
    return RunResult(model="abs_relu_exp", backend="cpu", steps=1, warmup=0, traced=True, graphs=runs)


def test_trace_passes_the_schema_check(traced_result, tmp_path):
    data = json.loads(write_chrome_trace(traced_result, tmp_path / "t.json").read_text())
    assert check_chrome_trace(data) == []
    kernels = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in kernels} == {1, 2}  # one process per graph
    assert {e["args"]["node"] for e in kernels} == {"relu_0", "exp_0"}
    assert all("pass" in e["args"] for e in kernels)
    names = {(e["pid"], e["args"]["name"]) for e in data["traceEvents"] if e["name"] == "process_name"}
    assert names == {(1, "original graph (abs_relu_exp)"), (2, "fused graph (abs_relu_exp)")}


def test_schema_check_catches_broken_traces(traced_result):
    data = chrome_trace(traced_result)
    kernel = next(e for e in data["traceEvents"] if e["ph"] == "X")
    kernel["dur"] = -1.0
    del kernel["tid"]
    problems = check_chrome_trace(data)
    assert any("dur must be a number >= 0" in p for p in problems)
    assert any("tid missing" in p for p in problems)
    assert check_chrome_trace({"events": []}) == ["top level must be an object with a traceEvents list"]


def test_kernel_csv(traced_result):
    rows = list(csv.DictReader(io.StringIO(kernel_csv(traced_result))))
    assert list(rows[0]) == CSV_COLUMNS
    expected = {(g, n) for g in ("original", "fused") for n in ("relu_0", "exp_0")}
    assert {(r["graph"], r["node"]) for r in rows} == expected
    assert all(float(r["total_us"]) > 0 and r["count"] == "1" for r in rows)
