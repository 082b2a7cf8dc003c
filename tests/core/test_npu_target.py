"""Graphs for the Ascend host's TensorFlow (1.15 / 2.6.5): default-valued attributes stripped, anything the
target lacks refused with the node and what to do; one test per entry of the additions table, and every
sample's graphs (original and AMCT side) pass the check for both targets."""

from __future__ import annotations

import pytest

from fuselens.core.ascend.npu_target import ADDITIONS, TARGETS, Addition, for_target, op_table
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import SAMPLES
from fuselens.passes.pipeline import run_pipeline

tf = pytest.importorskip("tensorflow")


def _graph(build) -> bytes:
    graph = tf.Graph()
    with graph.as_default():
        build()
    return graph.as_graph_def().SerializeToString()


def _node(graph_def: bytes, name: str):
    return next(n for n in tf.compat.v1.GraphDef.FromString(graph_def).node if n.name == name)


def _with_addition(addition: Addition, value) -> bytes:
    """A graph with one node of the addition's op, the attribute set to `value`."""
    def build():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 4], name="x")
        if addition.op == "FusedBatchNormV3":
            c = tf.constant([1.0] * 4)
            tf.raw_ops.FusedBatchNormV3(x=x, scale=c, offset=c, mean=c, variance=c, is_training=False,
                                        exponential_avg_factor=value, name="node")
        elif addition.op == "DepthwiseConv2dNative":
            padding = "EXPLICIT" if value else "VALID"
            tf.raw_ops.DepthwiseConv2dNative(input=x, filter=tf.ones([3, 3, 4, 1]), strides=[1, 1, 1, 1],
                                             padding=padding, explicit_paddings=value, name="node")
        elif addition.op == "MaxPool":
            tf.raw_ops.MaxPool(input=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                               padding="EXPLICIT" if value else "VALID", explicit_paddings=value, name="node")
        else:
            m = tf.compat.v1.placeholder(tf.float32, [2, 2], name="m")
            tf.raw_ops.MatMul(a=m, b=m, **{addition.attr: value}, name="node")
    return _graph(build)


NON_DEFAULT = {("FusedBatchNormV3", "exponential_avg_factor"): 0.5,
               ("DepthwiseConv2dNative", "explicit_paddings"): [0, 0, 1, 1, 1, 1, 0, 0],
               ("MaxPool", "explicit_paddings"): [0, 0, 1, 1, 1, 1, 0, 0],
               ("MatMul", "grad_a"): True, ("MatMul", "grad_b"): True}


@pytest.mark.parametrize("addition", ADDITIONS, ids=lambda a: f"{a.op}.{a.attr}")
def test_each_addition_is_stripped_at_its_default_and_refused_where_the_target_lacks_it(addition):
    # the versions checked in the documentation agree with the registries read from the wheels
    for mode in TARGETS:
        assert (addition.attr in op_table(mode)[addition.op]) == (mode not in addition.absent_from), mode
    at_default = _with_addition(addition, addition.default)
    for mode in TARGETS:
        written, stripped = for_target(at_default, mode, "g.pb")
        assert addition.attr not in _node(written, "node").attr and stripped >= 1
    changed = _with_addition(addition, NON_DEFAULT[(addition.op, addition.attr)])
    for mode, target in TARGETS.items():
        if mode in addition.absent_from:
            with pytest.raises(FuseLensError) as error:
                for_target(changed, mode, "g.pb")
            text = str(error.value)
            assert text.startswith(f"g.pb cannot be written for {target.title}: node node ({addition.op}) sets "
                                   f"{addition.attr}=")
            assert f"an attribute TensorFlow {target.version} does not have (added {addition.added})" in text
            assert f"set it to its default {addition.default!r} in the model" in text
            assert ("or export with --mode tf2-compat" in text) == (addition.absent_from == ("tf1",))
        else:
            written, _ = for_target(changed, mode, "g.pb")
            assert addition.attr in _node(written, "node").attr


def test_an_op_the_target_lacks_is_refused_naming_the_mode_that_has_it():
    """BatchMatMulV3 is in TF 2.6's registry, not 1.15's."""
    graph_def = _graph(lambda: tf.raw_ops.BatchMatMulV3(
        x=tf.ones([2, 2, 2]), y=tf.ones([2, 2, 2]), Tout=tf.float32, name="bmm"))
    with pytest.raises(FuseLensError, match=r"node bmm is a BatchMatMulV3, an op TensorFlow 1\.15\.0 does not have: "
                                            r"export with --mode tf2-compat"):
        for_target(graph_def, "tf1", "m.pb")
    assert for_target(graph_def, "tf2-compat", "m.pb")[0]


def test_a_default_the_target_does_not_share_is_written_out(monkeypatch):
    """Stripping must not hand the target its own, different default: such an attribute stays."""
    from fuselens.core.ascend import npu_target

    graph_def = _graph(lambda: tf.raw_ops.Cast(x=tf.compat.v1.placeholder(tf.float32, [2], name="x"),
                                               DstT=tf.int32, Truncate=False, name="cast"))
    table = {**npu_target.op_table("tf1"), "Cast": {**npu_target.op_table("tf1")["Cast"], "Truncate": True}}
    monkeypatch.setattr(npu_target, "op_table", lambda mode: table)
    written, _ = for_target(graph_def, "tf1", "m.pb")
    assert _node(written, "cast").attr["Truncate"].b is False


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if SAMPLES[n].cached else n
                                  for n in SAMPLES])
def test_every_sample_is_written_for_both_targets(name):
    """The original and the AMCT graph of every sample import on TF 1.15 and 2.6.5 as far as their registries
    tell, and what is written still loads in TensorFlow."""
    original = load_model(name).graph
    amct = run_pipeline(original, None, families=("amct",)).fused
    for mode in TARGETS:
        for graph in (original, amct):
            written, _ = for_target(graph.graph_def.SerializeToString(), mode, name)
            with tf.Graph().as_default():
                tf.compat.v1.import_graph_def(tf.compat.v1.GraphDef.FromString(written), name="")
