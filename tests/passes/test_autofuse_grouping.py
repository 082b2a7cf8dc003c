"""AutoFuse grouping rules on small TF-built graphs: limits, reduce tails, cycles, near misses, naming."""

from __future__ import annotations

import pytest
from autofuse_check import assert_same_outputs, tf_graph

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.graph.opclass import op_category
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass
from fuselens.passes.autofuse.flags import AutofuseFlags, parse_autofuse_flags
from fuselens.passes.autofuse.grouping import group_graph, kernel_name
from fuselens.passes.autofuse.op_classes import ascend_op_type, classify, fusion_class

REDUCE_ON = parse_autofuse_flags("--autofuse_enable_pass=reduce")


def x_placeholder(tf, name="x", shape=(4, 8)):
    return tf.compat.v1.placeholder(tf.float32, shape, name=name)


def unary_chain(length: int):
    """Abs, Relu, Abs, Relu, ... named abs0, relu1, abs2, ..."""
    def build(tf):
        t = x_placeholder(tf)
        for i in range(length):
            t = tf.abs(t, name=f"abs{i}") if i % 2 == 0 else tf.nn.relu(t, name=f"relu{i}")
    return build


def reasons(grouping) -> list[str]:
    return [r.reason for r in grouping.refusals]


def fuse_and_check(graph, flags=None):
    fused, result = AutoFusePass({"autofuse_flags": flags}).apply(graph)
    assert_same_outputs(graph, fused, [result])
    return fused, result


def test_op_table_spells_ops_like_the_graph_engine():
    spellings = {"AddV2": "Add", "Sum": "ReduceSumD", "Mean": "ReduceMeanD", "Max": "ReduceMaxD",
                 "Min": "ReduceMinD", "Prod": "ReduceProdD", "All": "ReduceAllD", "Any": "ReduceAnyD",
                 "ConcatV2": "ConcatD", "RealDiv": "RealDiv", "Maximum": "Maximum", "Conv2D": "Conv2D"}
    assert {op: ascend_op_type(op) for op in spellings} == spellings


def test_autofuse_classes_come_from_the_one_op_table():
    for op in ("Expm1", "IsNan", "Gelu", "Swish", "Relu", "AddV2", "BiasAdd"):  # drawn and fused alike
        assert op_category(op) == "elementwise" and fusion_class(op) is not None
    for op in ("Softmax", "MaxPool", "ArgMax", "Select", "Conv2D", "Reshape", "NoSuchOp"):
        assert fusion_class(op) is None
    assert fusion_class("Sum").pattern == "reduce" and fusion_class("ConcatV2").axis_operands == (-1,)


def test_binary_op_with_differing_input_shapes_is_broadcast(load_sample):
    graph = load_sample("abs_add_relu")
    assert [classify(graph, n) for n in ("abs_0", "add_0", "relu_0", "data1")] == [
        "elementwise", "broadcast", "elementwise", "opaque"]


def test_binary_op_on_two_unknown_shapes_is_broadcast_not_elementwise():
    """Two operands whose shapes nobody knows may still differ ([4, 8] + [8]): not taken as one shape."""
    float_attr = {"dtype": proto.DT_FLOAT}
    nodes = [make_node("Placeholder", "a", [], float_attr), make_node("Placeholder", "b", [], float_attr),
             make_node("AddV2", "add", ["a", "b"], {"T": proto.DT_FLOAT})]
    graph = Graph.from_nodes(nodes, source="unknown shapes")
    assert graph.output_shape("a") is None and graph.output_shape("b") is None
    assert classify(graph, "add") == "broadcast"


def test_kernel_of_more_than_max_fusion_size_ops_is_split_with_a_near_miss():
    graph = tf_graph(unary_chain(6))
    grouping = group_graph(graph, parse_autofuse_flags("--max_fusion_size=4"))
    assert [g.name for g in grouping.groups] == ["autofuse_pointwise_0_Abs_Relu_Abs_Relu",
                                                 "autofuse_pointwise_1_Abs_Relu"]
    assert reasons(grouping) == ["fusing abs4 (Abs) would make a kernel of 5 ops, over --max_fusion_size=4"]
    fuse_and_check(graph, "--max_fusion_size=4")


def test_kernel_reads_at_most_eight_inputs():
    def build(tf):
        total = x_placeholder(tf, "x0")
        for i in range(1, 10):
            total = tf.add(total, x_placeholder(tf, f"x{i}"), name=f"add{i}")

    graph = tf_graph(build)
    grouping = group_graph(graph, AutofuseFlags())
    assert [len(g.inputs) for g in grouping.groups] == [8, 3]
    assert grouping.refusals[0].anchor == "add8"
    assert reasons(grouping)[0] == "fusing add8 (AddV2) would make a kernel with 9 inputs, over the limit of 8"
    fuse_and_check(graph)


def test_reduce_takes_at_most_three_elementwise_producers():
    def build(ops):
        def graph_builder(tf):
            t = x_placeholder(tf)
            for i, op in enumerate(ops):
                t = getattr(tf.math, op)(t, name=f"{op}{i}")
            tf.reduce_sum(t, axis=1, name="total")
        return graph_builder

    three = group_graph(tf_graph(build(["abs", "negative", "exp"])), REDUCE_ON)
    assert [g.name for g in three.groups] == ["autofuse_reduce_0_Abs_Neg_Exp_ReduceSumD"]
    four = tf_graph(build(["abs", "negative", "exp", "sigmoid"]))
    grouping = group_graph(four, REDUCE_ON)
    assert [g.name for g in grouping.groups] == ["autofuse_pointwise_0_Abs_Neg_Exp_Sigmoid"]
    assert reasons(grouping) == ["reduce total (Sum) would take 4 elementwise producers "
                                 "(abs0, negative1, exp2, sigmoid3); a reduce takes at most 3"]
    fuse_and_check(four, REDUCE_ON)


def test_reduce_is_the_only_output_of_its_kernel():
    def build(tf):
        a = tf.abs(x_placeholder(tf), name="a")
        tf.reduce_max(a, axis=0, name="peak")
        tf.reshape(a, [-1], name="flat")

    grouping = group_graph(tf_graph(build), REDUCE_ON)
    assert not grouping.groups
    assert reasons(grouping)[0] == ("intermediate a has a consumer outside the group (flat); a reduce ends its "
                                    "kernel as its only output, so peak (Max) is not fused with a")


def test_pointwise_intermediate_read_outside_stays_a_kernel_output():
    def build(tf):
        a = tf.abs(x_placeholder(tf), name="a")
        tf.nn.relu(a, name="r")
        tf.reshape(a, [-1], name="flat")

    graph = tf_graph(build)
    (group,) = group_graph(graph, AutofuseFlags()).groups
    assert [str(o) for o in group.outputs] == ["a", "r"]
    fused, _ = fuse_and_check(graph)
    assert str(fused.inputs("flat")[0]) == "autofuse_pointwise_0_Abs_Relu"


def test_outside_path_back_into_the_group_breaks_it_as_a_cycle():
    def build(tf):
        a = tf.abs(x_placeholder(tf), name="a")
        back = tf.reshape(tf.reshape(a, [-1], name="flat"), [4, 8], name="unflat")
        tf.add(a, back, name="sum")

    grouping = group_graph(tf_graph(build), AutofuseFlags())
    assert not grouping.groups
    assert reasons(grouping)[0] == ("intermediate a has a consumer outside the group (flat) that leads back into "
                                    "it; fusing sum (AddV2) would create a cycle")


def test_chain_broken_by_an_opaque_op_is_a_near_miss_per_lone_op():
    def build(tf):
        tf.exp(tf.reshape(tf.abs(x_placeholder(tf), name="a"), [-1], name="flat"), name="e")

    grouping = group_graph(tf_graph(build), AutofuseFlags())
    assert not grouping.groups
    assert [r.anchor for r in grouping.refusals] == ["a", "e"]
    assert "its chain to e (Exp) is broken by the opaque op flat (Reshape)" in grouping.refusals[0].reason
    assert "a single-op group is lifted back" in grouping.refusals[1].reason


def test_siblings_reading_one_input_fuse_horizontally():
    def build(tf):
        x = x_placeholder(tf)
        tf.abs(x, name="a")
        tf.negative(x, name="n")
        tf.reshape(x, [-1], name="flat")

    graph = tf_graph(build)
    (group,) = group_graph(graph, AutofuseFlags()).groups
    assert group.name == "autofuse_pointwise_0_Abs_Neg"
    assert [str(i) for i in group.inputs] == ["x"] and [str(o) for o in group.outputs] == ["a", "n"]
    fuse_and_check(graph)


def test_switched_off_category_is_a_near_miss_saying_how_to_switch_it_on(load_sample):
    graph = load_sample("abs_add_relu")
    grouping = group_graph(graph, parse_autofuse_flags("--autofuse_disable_pass=broadcast"))
    assert not grouping.groups
    assert reasons(grouping)[0] == ("add_0 (AddV2) is a broadcast op and the broadcast category is off, so it is "
                                    "not fused with abs_0 (Abs); remove broadcast from --autofuse_disable_pass")


def test_constant_subexpressions_are_left_to_constant_folding_and_small_constants_move_inside():
    def build(tf):
        scale = tf.math.rsqrt(tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], name="var") + 1e-3, name="inv")
        tf.nn.relu6(x_placeholder(tf) * scale + tf.constant(0.5, name="beta"), name="out")

    graph = tf_graph(build)
    (group,) = group_graph(graph, AutofuseFlags()).groups
    assert group.op_types == ("Mul", "Add", "Relu6")
    assert [str(i) for i in group.inputs] == ["x", "inv"] and group.constants == ("beta",)
    fuse_and_check(graph)


def test_concat_fuses_only_when_enabled():
    def build(tf):
        parts = [tf.abs(x_placeholder(tf, "x"), name="a"), tf.exp(x_placeholder(tf, "y"), name="e")]
        tf.nn.relu(tf.concat(parts, axis=1, name="cat"), name="r")

    graph = tf_graph(build)
    off = group_graph(graph, AutofuseFlags())
    assert not off.groups and "cat (ConcatV2) is a concat op and the concat category is off" in off.refusals[0].reason
    (group,) = group_graph(graph, parse_autofuse_flags("--autofuse_enable_pass=concat")).groups
    assert group.name == "autofuse_concat_0_Abs_Exp_ConcatD_Relu" and group.constants == ("cat/axis",)
    fuse_and_check(graph, "--autofuse_enable_pass=concat")


def test_counters_count_per_category_in_topological_order():
    def build(tf):
        first = tf.nn.relu(tf.abs(x_placeholder(tf, "x"), name="a1"), name="r1")
        total = tf.reduce_mean(tf.abs(tf.reshape(first, [4, 8]), name="a2"), axis=1, name="m")
        tf.exp(tf.negative(tf.reshape(total, [2, 2]), name="n3"), name="e3")

    grouping = group_graph(tf_graph(build), REDUCE_ON)
    assert [g.name for g in grouping.groups] == ["autofuse_pointwise_0_Abs_Relu", "autofuse_reduce_0_Abs_ReduceMeanD",
                                                 "autofuse_pointwise_1_Neg_Exp"]


def test_names_are_cut_to_140_characters():
    name = kernel_name("pointwise", 12, ["Abs"] * 60)
    assert len(name) == 140 and name.startswith("autofuse_pointwise_12_Abs_Abs_")


@pytest.mark.parametrize("flags", ["--enable_autofuse=false", "--max_fusion_size=0"])
def test_switched_off_autofuse_fuses_nothing(load_sample, flags):
    grouping = group_graph(load_sample("abs_relu_exp"), parse_autofuse_flags(flags))
    assert not grouping.groups and not grouping.refusals


def test_an_opaque_op_that_splits_a_chain_is_a_near_miss_naming_both_kernels():
    def build(tf):
        t = tf.exp(tf.nn.relu(tf.abs(x_placeholder(tf), name="abs"), name="relu"), name="exp")
        t = tf.reshape(t, (8, 4), name="reshape")
        tf.tanh(tf.sigmoid(t, name="sigmoid"), name="tanh")

    graph = tf_graph(build)
    grouping = group_graph(graph, AutofuseFlags())
    assert [g.name for g in grouping.groups] == ["autofuse_pointwise_0_Abs_Relu_Exp",
                                                 "autofuse_pointwise_1_Sigmoid_Tanh"]
    (split,) = [r for r in grouping.refusals if r.anchor == "reshape"]
    assert split.reason == ("reshape (Reshape) is not a vector op, so AutoFuse cannot fuse across it: the chains "
                            "Abs->Relu->Exp and Sigmoid->Tanh become two kernels (autofuse_pointwise_0_Abs_Relu_Exp, "
                            "autofuse_pointwise_1_Sigmoid_Tanh)")
    assert set(split.nodes) == {"reshape", "abs", "relu", "exp", "sigmoid", "tanh"}
    fuse_and_check(graph)
