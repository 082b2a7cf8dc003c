"""The isolated runner: real child processes running TensorFlow, and every way a run can go wrong.

Each child imports TensorFlow (~3 s), so the runs are few and small; the faults that can be
caught before a process starts (missing shapes, bad .npz) are checked without one.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from fuselens.core.devices.backends import detect, detect_backends
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.switch_file import FusionSwitches, SwitchForms
from fuselens.core.graph import Graph, TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.runtime import RunRequest, RunResult, run, start_run
from fuselens.core.runtime.child import FAULT_ENV
from fuselens.core.runtime.runner import load_npz_inputs, prepare_job
from fuselens.passes.fused import fuse_subgraph

FUSED_NAME = "autofuse_pointwise_0_Abs_Relu_Exp"


def graph_of(*nodes: proto.NodeDef) -> Graph:
    gd = proto.GraphDef()
    gd.node.extend(nodes)
    return Graph(gd, source="test")


def placeholder(name: str, shape: list[int | None], dtype: int = proto.DT_FLOAT) -> proto.NodeDef:
    node = make_node("Placeholder", name, attrs={"dtype": proto.AttrValue(type=dtype)})
    node.attr["shape"].shape.CopyFrom(proto.shape_proto(shape))
    return node


def unary(op: str, name: str, inputs: list[str], **attrs: proto.AttrValue) -> proto.NodeDef:
    return make_node(op, name, inputs, attrs={"T": proto.AttrValue(type=proto.DT_FLOAT), **attrs})


def log_graph(*, abs_first: bool) -> Graph:
    """out = log(x), or log(abs(x)): the first gives NaN for the negative half of a normal input."""
    nodes = [placeholder("x", [8, 8])]
    if abs_first:
        nodes.append(unary("Abs", "a", ["x"]))
    nodes.append(unary("Log", "out", ["a" if abs_first else "x"]))
    return graph_of(*nodes)


@pytest.fixture(scope="module")
def abs_relu_exp(load_sample):
    """The AutoFuse reference graph and its hand-fused twin (one XLA-compiled call node)."""
    original = load_sample("abs_relu_exp")
    editor = original.editor()
    fuse_subgraph(original, editor, name=FUSED_NAME, nodes=["abs_0", "relu_0", "exp_0"],
                  inputs=[TensorRef("data1")], outputs=[TensorRef("exp_0")], pass_id="AutoFusePass",
                  op_type="AscBackend", xla=True)
    return original, editor.build()


class Chosen:
    """A pass configuration as core sees one (core.formats.switch_file.PassChoice), without importing passes."""

    def __init__(self, *pass_ids: str):
        self.ids = list(pass_ids)

    def pass_ids(self) -> list[str]:
        return self.ids

    def to_switch_forms(self) -> SwitchForms:
        return SwitchForms([], "--enable_autofuse=true", FusionSwitches(graph_fusion=dict.fromkeys(self.ids, "on")))


def test_run_profiles_both_graphs_and_compares_outputs(abs_relu_exp, tmp_path):
    original, fused = abs_relu_exp
    np.savez(tmp_path / "in.npz", data1=np.random.default_rng(3).normal(size=(128, 192)).astype(np.float16))
    seen = []
    result = run(RunRequest(original, fused, model="abs_relu_exp", config=Chosen("AutoFusePass"), steps=20, warmup=2,
                            inputs=tmp_path / "in.npz"), seen.append)
    assert result.pass_ids == ["AutoFusePass"]

    assert [(p.graph, p.phase, p.step) for p in seen if p.phase == "run" and p.step == 20] == \
        [("original", "run", 20), ("fused", "run", 20)]
    before, after = result.graphs["original"], result.graphs["fused"]
    assert [k.kernel for k in after.kernels] == [FUSED_NAME]
    kernel = after.kernels[0]
    assert (kernel.node, kernel.op_type, kernel.pass_id, kernel.count) == (FUSED_NAME, "AscBackend", "AutoFusePass", 20)
    assert 0 < kernel.min_us <= kernel.mean_us <= kernel.max_us
    assert {k.node for k in before.kernels} == {"relu_0", "exp_0"}  # Grappler composes Abs+Relu into one kernel
    assert len(before.kernels) == 2 and all(k.count == 20 for k in before.kernels)
    assert [e.kernel for e in after.timeline] == [FUSED_NAME] and after.timeline[0].start_us == 0
    assert len(after.step_times_us) == 20 and result.speedup() > 0

    [comparison] = result.comparison
    assert (comparison.original, comparison.fused) == ("exp_0:0", f"{FUSED_NAME}:0")
    assert comparison.allclose and comparison.dtype == "float16" and comparison.max_abs < 0.05

    saved = RunResult.load(result.save(tmp_path / "run.json"))
    assert saved.to_json() == result.to_json()


def test_the_configuration_gives_the_npu_backend_its_switch_forms(abs_relu_exp):
    original, fused = abs_relu_exp
    with pytest.raises(FuseLensError, match="the npu backend needs the pass configuration"):
        prepare_job(RunRequest(original, fused, backend="npu"))
    job, _ = prepare_job(RunRequest(original, fused, config=Chosen("AutoFusePass"), backend="npu"))
    assert job["switches"] == Chosen("AutoFusePass").to_switch_forms()
    assert prepare_job(RunRequest(original, fused, config=Chosen("AutoFusePass")))[0]["switches"] is None


def test_nan_in_one_graph_is_flagged_and_not_allclose():
    result = run(RunRequest(log_graph(abs_first=False), log_graph(abs_first=True), steps=2, warmup=0, seed=1))
    [comparison] = result.comparison
    assert comparison.nonfinite_original > 0 and comparison.nonfinite_fused == 0
    assert not comparison.allclose and "NaN/Inf" in comparison.note


def test_graph_tensorflow_refuses_names_the_node():
    bad = graph_of(placeholder("x", [4, 4]), make_const("shape", np.array([3], np.int32)),
                   unary("Reshape", "bad_reshape", ["x", "shape"], Tshape=proto.AttrValue(type=proto.DT_INT32)))
    with pytest.raises(FuseLensError, match=r"original graph at node bad_reshape: .*16.*3"):
        run(RunRequest(bad, steps=1, warmup=0))


def test_child_that_segfaults_mid_run_is_an_error_not_a_crash(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "SIGSEGV@run")
    with pytest.raises(FuseLensError, match=r"died from signal SIGSEGV \(at original: run 1/5\)"):
        run(RunRequest(log_graph(abs_first=True), steps=5, warmup=0))


def test_child_killed_at_start_is_an_error(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "SIGKILL@starting")
    with pytest.raises(FuseLensError, match="died from signal SIGKILL"):
        run(RunRequest(log_graph(abs_first=True), steps=5))


def _assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_run_past_its_timeout_is_stopped():
    handle = start_run(RunRequest(log_graph(abs_first=True), steps=10**8, timeout=1.5))
    with pytest.raises(FuseLensError, match=r"timed out after 1.5 s.*child process was stopped"):
        handle.result(30)
    _assert_gone(handle.pid)


def test_cancel_kills_the_child():
    handle = start_run(RunRequest(log_graph(abs_first=True), steps=10**8),
                       lambda progress: handle.cancel())
    with pytest.raises(FuseLensError, match="run cancelled"):
        handle.result(30)
    _assert_gone(handle.pid)


def test_missing_input_shape_names_the_input_before_any_child_starts():
    graph = graph_of(placeholder("images", [None, None, 3]), unary("Relu", "r", ["images"]))
    with pytest.raises(FuseLensError, match=r"input images has unknown dimensions \[\?,\?,3\].*--input-shape images="):
        start_run(RunRequest(graph))
    with pytest.raises(FuseLensError, match="--input-shape names imgs, which is not an input"):
        start_run(RunRequest(graph, input_shapes={"imgs": (1, 2, 2, 3)}))


def test_npz_inputs_are_checked_against_the_placeholders(tmp_path):
    graph = graph_of(placeholder("x", [None, 4]), unary("Relu", "r", ["x"]))
    np.savez(tmp_path / "ok.npz", **{"x:0": np.ones((2, 4))})
    assert load_npz_inputs(tmp_path / "ok.npz", graph)["x"].dtype == np.float32
    np.savez(tmp_path / "shape.npz", x=np.ones((2, 5)))
    with pytest.raises(FuseLensError, match=r"shape\.npz: array x has shape \[2, 5\], the input takes \[\?,4\]"):
        load_npz_inputs(tmp_path / "shape.npz", graph)
    np.savez(tmp_path / "other.npz", y=np.ones((2, 4)))
    with pytest.raises(FuseLensError, match=r"other\.npz: no array for input x"):
        load_npz_inputs(tmp_path / "other.npz", graph)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(FuseLensError, match=r"junk\.npz: cannot read as \.npz"):
        load_npz_inputs(tmp_path / "junk.npz", graph)


def test_backend_detection_says_why_a_backend_is_missing():
    statuses = {s.name: s for s in detect_backends()}
    assert statuses["cpu"].available
    assert statuses["gpu"].available or statuses["gpu"].reason == "TensorFlow sees no GPU"
    npu = statuses["npu"]
    assert npu.available or ("npu_bridge not importable" in npu.reason and "npu_device not importable" in npu.reason)
    with pytest.raises(FuseLensError, match="unknown backend 'tpu'"):
        detect("tpu")
