"""session/audit: models found in folders, each audited in a worker process (crashes and hangs are rows),
the rows the same as a fuse in this process, near-miss reasons by class, the baseline gate."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import sample_path
from fuselens.core.runtime.child import FAULT_ENV as RUNNER_FAULT_ENV
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.audit.audit import AuditOptions, build_report, build_tasks, run_audit
from fuselens.session.audit.baseline import regressions
from fuselens.session.audit.collect import collect_models
from fuselens.session.audit.reasons import reason_kind, top_by_kind
from fuselens.session.audit.summary import ranked_reasons
from fuselens.session.audit.worker import FAULT_ENV

SAMPLES = ["demo", "conv_bn", "conv_shared", "instance_norm"]


def audit(paths, config=None, **options):
    config = config or PassConfig.default()
    opts = AuditOptions(**{"jobs": 2, **options})
    return run_audit(build_tasks(paths, config, opts), config, opts)


def test_a_known_reason_gets_its_class_and_an_unknown_one_a_class_of_its_text_without_names():
    assert reason_kind("bn1 (FusedBatchNormV3) is in training mode (is_training=true): ...").id == "bn-training"
    reduce = reason_kind("m/mean (Mean) is a reduce op and the reduce category is off, so it is not fused with x")
    assert (reduce.id, reduce.title) == ("category-off-reduce", "the AutoFuse reduce category switched off")
    first = reason_kind("block_1/odd (Foo) wants 3 widgets from block_1/src", ["block_1/odd", "block_1/src"])
    second = reason_kind("b2/odd (Bar) wants 12 widgets from b2/x", ["b2/odd", "b2/x"])
    assert first == second and first.id.startswith("other-") and "block" not in first.title
    assert reason_kind("a different refusal altogether").id != first.id


def test_a_models_top_near_misses_are_one_per_kind_the_most_frequent_kind_first():
    kinds = ["a", "b", "b", "c", "b", "c"]
    assert top_by_kind([{"kind": k} for k in kinds], 2) == [1, 3]
    assert top_by_kind([{"kind": k} for k in kinds], 5) == [1, 3, 0]


def test_folders_are_searched_for_every_format_and_a_savedmodel_is_one_model(tmp_path):
    zoo = tmp_path / "zoo"
    (zoo / "nested" / "saved" / "variables").mkdir(parents=True)
    (zoo / "nested" / "saved" / "saved_model.pb").write_bytes(b"x")
    (zoo / "nested" / "saved" / "variables" / "inner.pb").write_bytes(b"x")  # inside the SavedModel: not a model
    shutil.copy(sample_path("conv_bn"), zoo / "a.pb")
    (zoo / "notes.txt").write_text("not a model")
    (zoo / "weights.bin").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 8)  # HDF5 content, a Keras file by content
    found = collect_models([str(zoo), "demo", str(tmp_path / "missing.pb")])
    names = [name for name, _ in found]
    assert names == ["zoo/a.pb", "zoo/nested/saved", "zoo/weights.bin", "demo", str(tmp_path / "missing.pb")]
    assert found[1][1] == str((zoo / "nested" / "saved").resolve())


def test_each_row_counts_what_a_fuse_in_this_process_finds():
    report = audit(SAMPLES)
    assert [row["model"] for row in report["models"]] == SAMPLES and report["complete"]
    for row in report["models"]:
        pipeline = run_pipeline(load_model(row["model"]).graph, PassConfig.default(), explain=False)
        assert row["status"] == "ok" and row["nodes_before"] == len(pipeline.original)
        assert row["nodes_after"] == len(pipeline.fused)
        assert {p: c["matches"] for p, c in row["passes"].items()} == {r.pass_id: len(r.matches)
                                                                       for r in pipeline.results}
        assert len(row["near_misses"]) == sum(len(r.near_misses) for r in pipeline.results)
        matched = sum(len(r.matches) for r in pipeline.results)
        assert (row["fused_share"] > 0) == (matched > 0) and len(row["kernels"]) == matched
    conv_shared = report["models"][2]
    assert conv_shared["passes"]["ConvBatchnormFusionPass"]["matches"] == 0
    assert any(n["kind"] == "intermediate-read" for n in conv_shared["near_misses"])


def test_reasons_rank_by_models_then_matches_with_the_first_model_that_has_each():
    rows = [{"model": m, "near_misses": [{"pass": "P", "anchor": f"{m}/{i}", "reason": f"r{k}", "kind": k,
                                          "kind_title": f"the {k}"} for i, k in enumerate(kinds)]}
            for m, kinds in [("m1", ["a", "a", "a", "b"]), ("m2", ["b"]), ("m3", ["b", "c"])]]
    ranked = ranked_reasons(rows)
    assert [r["kind"] for r in ranked] == ["b", "a", "c"]
    assert ranked[0]["summary"] == "the b: 3 matches in 3 models" and ranked[0]["first"]["model"] == "m1"
    assert ranked[1]["summary"] == "the a: 3 matches in 1 model"


def test_numeric_compares_original_and_fused_in_the_runner_and_run_times_both():
    report = audit(["conv_bn", "bert_layernorm"], numeric=True, run=True, steps=3, jobs=1)  # TensorFlow starts once
    for row in report["models"]:
        assert row["numeric"]["allclose"] is True and row["numeric"]["outputs"] >= 1
        assert row["numeric"]["max_abs"] is not None and row["numeric"]["max_abs"] < 1e-4
        assert row["timing"]["steps"] == 3 and row["timing"]["original_us"] > 0 and row["timing"]["fused_us"] > 0
    assert report["summary"]["disagreeing"] == []
    assert sorted(s["model"] for s in report["summary"]["slowest"]) == ["bert_layernorm", "conv_bn"]


@pytest.mark.slow
def test_a_folder_of_keras_files_and_a_savedmodel_is_audited_with_numerics(tmp_path):
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((8, 8, 3), name="img"), keras.layers.Conv2D(4, 3),
                              keras.layers.BatchNormalization(), keras.layers.ReLU()])
    rng = np.random.default_rng(5)
    bn = model.layers[1]
    bn.set_weights([rng.uniform(0.5, 2.0, 4), rng.normal(0, 1, 4), rng.normal(0, 1, 4), rng.uniform(0.5, 2.0, 4)])
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    model.save(zoo / "m.keras")
    model.save(zoo / "m.h5")
    tf.saved_model.save(model, str(zoo / "saved"))
    report = audit([str(zoo)], numeric=True, jobs=1)
    rows = {row["model"]: row for row in report["models"]}
    assert {name: row.get("format") for name, row in rows.items()} == {
        "zoo/m.h5": "h5", "zoo/m.keras": "keras", "zoo/saved": "savedmodel"}
    for row in rows.values():
        assert row["status"] == "ok" and row["numeric"]["allclose"] is True
        assert sum(p["matches"] for p in row["passes"].values()) >= 1


def _graph_that_kills_tensorflow() -> bytes:
    """A real graph TensorFlow dies on: its output waits on an `Abort` op (SIGABRT when the run reaches it)."""
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [1, 4], name="x")
        abort = tf.raw_ops.Abort(error_msg="this model kills TensorFlow")
        with tf.control_dependencies([abort]):
            tf.identity(tf.nn.relu(x), name="y")
    return graph.as_graph_def().SerializeToString()


def _graph_that_never_ends() -> bytes:
    """A real graph TensorFlow never finishes: a while loop whose condition is always true."""
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [1, 4], name="x")
        _, out = tf.while_loop(lambda i, v: tf.constant(True), lambda i, v: (i + 1, v * 1.0), [tf.constant(0), x])
        tf.identity(tf.nn.relu(out), name="y")
    return graph.as_graph_def().SerializeToString()


@pytest.mark.slow
def _processes_marked(mark: str) -> list[int]:
    """The processes whose environment holds `mark` (this test's children and theirs, orphans included)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            ours = proc.name.isdigit() and int(proc.name) != os.getpid()
            if ours and mark.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
    return found


def test_a_model_that_kills_tensorflow_and_one_that_never_ends_are_rows_and_leave_nothing_running(tmp_path,
                                                                                                  monkeypatch):
    """Real graphs, no test hook: TensorFlow aborts in the runner's child on one and loops forever on the
    other; the rows say so, the good models complete, and no process of the audit is left behind (the
    runner's child stuck in the loop ends with the worker killed past its timeout)."""
    mark = f"FUSELENS_TEST_MARK={uuid.uuid4().hex}"
    monkeypatch.setenv(*mark.split("="))
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    shutil.copy(sample_path("demo"), zoo / "demo.pb")
    (zoo / "bad.pb").write_bytes(b"\x08\x96\x01 definitely not a graph")
    (zoo / "kills_tf.pb").write_bytes(_graph_that_kills_tensorflow())
    (zoo / "never_ends.pb").write_bytes(_graph_that_never_ends())
    report = audit([str(zoo)], numeric=True, timeout=30.0)
    rows = {row["model"]: row for row in report["models"]}
    assert rows["zoo/bad.pb"]["status"] == "unreadable"
    assert rows["zoo/kills_tf.pb"]["status"] == "crashed (SIGABRT)", rows["zoo/kills_tf.pb"]
    assert "Abort_op intentional failure; this model kills TensorFlow" in rows["zoo/kills_tf.pb"]["reason"]
    assert "0x" not in rows["zoo/kills_tf.pb"]["reason"]  # TensorFlow's stack frames are left out
    assert rows["zoo/never_ends.pb"]["status"] == "timed out", rows["zoo/never_ends.pb"]
    assert rows["zoo/demo.pb"]["status"] == "ok" and rows["zoo/demo.pb"]["numeric"]["allclose"] is True
    assert [d["model"] for d in report["summary"]["disagreeing"]] == []  # a crash is its status, not a disagreement
    deadline = time.monotonic() + 10
    while _processes_marked(mark) and time.monotonic() < deadline:  # an orphan ends within a second of its parent
        time.sleep(0.2)
    assert _processes_marked(mark) == []


def test_a_bad_file_a_crash_and_a_hang_are_rows_and_the_others_complete(tmp_path, monkeypatch):
    """The worker process itself dying or hanging (its test hook FAULT_ENV: os.abort() and a sleep for the
    model named, once it is loaded), where the test above has TensorFlow die in the runner's child."""
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for name in ("conv_bn", "demo", "crash", "hang"):
        shutil.copy(sample_path("conv_bn" if name in ("crash", "hang") else name), zoo / f"{name}.pb")
    (zoo / "bad.pb").write_bytes(b"\x08\x96\x01 definitely not a graph")
    monkeypatch.setenv(FAULT_ENV, "zoo/crash.pb=abort,zoo/hang.pb=hang")
    report = audit([str(zoo)], timeout=10.0)
    rows = {row["model"]: row for row in report["models"]}
    assert list(rows) == ["zoo/bad.pb", "zoo/conv_bn.pb", "zoo/crash.pb", "zoo/demo.pb", "zoo/hang.pb"]
    assert rows["zoo/bad.pb"]["status"] == "unreadable" and "not a TensorFlow GraphDef" in rows["zoo/bad.pb"]["reason"]
    assert rows["zoo/crash.pb"]["status"] == "crashed (SIGABRT)", rows["zoo/crash.pb"]
    assert rows["zoo/hang.pb"]["status"] == "timed out" and rows["zoo/hang.pb"]["reason"] == "timed out after 10 s"
    assert rows["zoo/conv_bn.pb"]["status"] == rows["zoo/demo.pb"]["status"] == "ok"
    assert rows["zoo/demo.pb"]["passes"]["ConvBatchnormFusionPass"]["matches"] >= 1
    assert report["summary"]["statuses"] == {"crashed": 1, "ok": 2, "timed out": 1, "unreadable": 1}


def test_tensorflow_crashing_in_the_runner_makes_the_row_crashed(monkeypatch):
    """The runner's own test hook kills its child with SIGSEGV mid-run, as a TensorFlow crash would."""
    monkeypatch.setenv(RUNNER_FAULT_ENV, "SIGSEGV@run")
    (row,) = audit(["conv_bn"], numeric=True, jobs=1)["models"]
    assert row["status"] == "crashed (SIGSEGV)" and "died from signal SIGSEGV" in row["reason"]
    assert row["passes"]["ConvBatchnormFusionPass"]["matches"] == 1  # what was found before the crash stays


def test_a_cancelled_audit_keeps_the_rows_done(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "conv_shared=hang")
    config, opts = PassConfig.default(), AuditOptions(jobs=1)
    done = []
    report = run_audit(build_tasks(["conv_bn", "conv_shared", "demo"], config, opts), config, opts,
                       progress=lambda p: done.append(p.done), cancelled=lambda: bool(done and max(done) >= 1))
    assert [row["model"] for row in report["models"]] == ["conv_bn"] and not report["complete"]


def _row(model, matches, numeric=None, timing=None, status="ok"):
    return {"model": model, "status": status, "reason": "" if status == "ok" else "it broke",
            "passes": {"P": {"matches": matches}}, "numeric": numeric, "timing": timing}


def test_the_gate_names_lost_matches_new_failures_numeric_error_and_slowdowns():
    config, opts = PassConfig.default(), AuditOptions(jobs=1, run=True)
    old = build_report([_row("a", 3, {"allclose": True, "max_abs": 1e-7}, {"fused_us": 100.0}), _row("b", 2),
                        _row("c", 1)], config, opts, total=3)
    same = build_report([_row("a", 3, {"allclose": True, "max_abs": 1e-7}, {"fused_us": 105.0}), _row("b", 2),
                         _row("c", 1)], config, opts, total=3)
    assert regressions(old, same) == []
    worse = build_report([_row("a", 3, {"allclose": False, "max_abs": 0.5}, {"fused_us": 150.0}), _row("b", 1),
                          _row("c", 1, status="unreadable")], config, opts, total=3)
    found = {(r["model"], r["kind"]) for r in regressions(old, worse)}
    assert found == {("a", "numeric"), ("a", "slower"), ("b", "matches"), ("c", "fails")}
    assert any("loses 1 of 2 matches of P" in r["text"] for r in regressions(old, worse))
    assert {r["kind"] for r in regressions(old, worse, slower=None)} == {"numeric", "matches", "fails"}


@pytest.mark.slow
def test_a_dask_cluster_gives_the_rows_of_the_local_pool():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster:
        on_dask = audit(SAMPLES, scheduler=cluster.scheduler_address, pictures=1, numeric=True)
    local = audit(SAMPLES, pictures=1, numeric=True)
    assert without_timings(on_dask) == without_timings(local)


TIMINGS = {"seconds", "fuse_seconds", "timing"}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
