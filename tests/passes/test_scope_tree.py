"""The scope tree and the toolchain's pattern features, on tiny hand-made graphs (no TensorFlow)."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.scope.features import NodeAttrFeature, NodeOpTypeFeature, ScopeContext, ScopeFeature, ScopePattern
from fuselens.passes.scope.scope_tree import ScopeTree, trim_scope_index


def graph(*nodes) -> Graph:
    return Graph.from_nodes(nodes, source="toy")


def ph(name):
    return make_node("Placeholder", name, attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})


@pytest.fixture(scope="module")
def toy():
    return graph(
        ph("x"),
        make_node("Mul", "a/b/mul", ["x", "x"]),
        make_node("Mul", "a/b/mul_1", ["a/b/mul", "x"]),
        make_const("a/b/add/y", np.float32(1.0)),
        make_node("AddV2", "a/b/add", ["a/b/mul_1", "a/b/add/y"]),
        make_node("Split", "a/split", ["x"], attrs={"num_split": 4}),
        make_node("RealDiv", "a/c_1/d", ["x", "x"]),
        make_node("RealDiv", "a/c_1/d_1", ["x", "x"]),
        make_node("RealDiv", "a/c_1/d_2", ["x", "x"]),
    )


def context(g, sub_types=None):
    return ScopeContext(g, dict(sub_types or {}))


def test_tree_puts_nodes_in_scopes_and_counts_ops_in_every_ancestor(toy):
    tree = ScopeTree(toy)
    assert tree["a/b"].nodes == ["a/b/mul", "a/b/mul_1", "a/b/add"]
    assert tree["a/b/add"].nodes == ["a/b/add/y"]  # a node name that is also a scope
    assert tree[""].nodes == ["x"]
    assert [s.name for s in tree["a"].descendants()] == ["a/b", "a/b/add", "a/c_1"]
    assert tree["a/b"].op_count("Mul") == 2 and tree["a"].op_count("Mul") == 2 and tree[""].op_count("Mul") == 2
    assert tree["a"].op_count("Const") == 1  # the census counts sub-scopes (a/b/add/y)
    assert tree["a/b"].op_count("Softmax") == -1  # absent counts as -1, as in the toolchain
    assert set(tree["a"].all_nodes()) == {n.name for n in toy} - {"x"}


def test_last_name_trims_positive_indices_only():
    assert trim_scope_index("InstanceNorm_1") == "InstanceNorm"
    assert trim_scope_index("layer_0") == "layer_0"
    assert trim_scope_index("get_center_coordinates_and_sizes") == "get_center_coordinates_and_sizes"
    assert trim_scope_index("batchnorm_12") == "batchnorm"


def test_op_type_feature_counts_absent_as_minus_one_and_honours_step(toy):
    tree, ctx = ScopeTree(toy), context(toy)
    assert NodeOpTypeFeature("Mul", 2).check(tree["a/b"], ctx) is None
    assert NodeOpTypeFeature("Mul", 3).check(tree["a/b"], ctx) == "Mul: found 2, pattern needs 3"
    assert NodeOpTypeFeature("Identity", -1).check(tree["a/b"], ctx) is None
    assert NodeOpTypeFeature("Mul", -1).check(tree["a/b"], ctx) == "Mul: found 2, pattern needs none"
    assert NodeOpTypeFeature("Sub", 1).check(tree["a/b"], ctx) == "Sub: found none, pattern needs 1"
    # step: count % step == num, and an absent type never matches (count -1)
    assert NodeOpTypeFeature("RealDiv", 1, 2).check(tree["a"], ctx) is None
    assert NodeOpTypeFeature("RealDiv", 0, 2).check(tree["a"], ctx) == "RealDiv: found 3, pattern needs a multiple of 2"
    assert NodeOpTypeFeature("Exp", 1, 2).check(tree["a"], ctx) is not None


def test_attr_feature_looks_at_nodes_directly_in_the_scope(toy):
    tree, ctx = ScopeTree(toy), context(toy)
    assert NodeAttrFeature("Split", "num_split", 4).check(tree["a"], ctx) is None
    assert NodeAttrFeature("Split", "num_split", 4.0).check(tree["a"], ctx) is None  # numbers compare by value
    assert NodeAttrFeature("Split", "num_split", 2).check(tree["a"], ctx) == \
        "Split.num_split: pattern needs 2, split has 4"
    assert "no Split node directly in the scope" in NodeAttrFeature("Split", "num_split", 4).check(tree[""], ctx)


def test_scope_feature_suffix_sub_type_and_mask(toy):
    tree = ScopeTree(toy)
    assert ScopeFeature(suffix="c").check(tree["a/c_1"], context(toy)) is None  # index trimmed
    assert ScopeFeature(suffix="b").check(tree["a/c_1"], context(toy)) == "last name is 'c', pattern needs 'b'"
    assert ScopeFeature(sub_scope_mask="ad").check(tree["a"], context(toy)) is None
    assert ScopeFeature(sub_scope_mask="zz").check(tree["a"], context(toy)) == "no sub-scope whose name contains 'zz'"
    typed = context(toy, {"a/b": "inner"})
    assert ScopeFeature(sub_type="inner", num=1).check(tree["a"], typed) is None
    assert ScopeFeature(sub_type="inner", num=2).check(tree["a"], typed) == \
        "sub-scopes of type inner: found 1, pattern needs 2"


def test_a_scope_holding_a_retval_never_matches():
    g = graph(ph("x"), make_node("Abs", "s/abs", ["x"]), make_node("_Retval", "s/out/_Retval", ["s/abs"]))
    pattern = ScopePattern("s", (ScopeFeature(suffix="s"), NodeOpTypeFeature("Abs", 1)))
    reasons = pattern.failures(ScopeTree(g)["s"], context(g))
    assert reasons == ["the scope holds a _Retval node (s/out/_Retval); a scope with a _Retval is never fused"]
