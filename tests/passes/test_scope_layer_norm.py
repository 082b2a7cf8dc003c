"""ScopeLayerNormPass: BERT's LayerNorm scopes fuse with the toolchain's wiring; Keras BNs do not."""

from __future__ import annotations

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import proto
from fuselens.core.graph.nodes import make_node
from fuselens.passes.config import PassConfig
from fuselens.passes.fused import FUSED_NODES_ATTR, FUSION_PASS_ATTR
from fuselens.passes.registry import default_pass_ids
from fuselens.passes.scope.layer_norm import ScopeLayerNormPass
from tests.passes.scope_check import assert_same_outputs, fused_calls, renamed

LN = "bert/encoder/layer_0/attention/output/LayerNorm"
LN_OUT = "bert/encoder/layer_0/output/LayerNorm"
FLOAT = proto.AttrValue(type=proto.DT_FLOAT)


def with_shapes(node: proto.NodeDef, shapes: list) -> proto.NodeDef:
    """Give a hand-added node `_output_shapes`, as the samples' nodes have (no TF shape inference)."""
    node.attr["_output_shapes"].list.shape.extend(proto.shape_proto(s) for s in shapes)
    node.attr["_output_shapes"].list.SetInParent()
    return node


@pytest.fixture(scope="module")
def bert(load_sample):
    original = load_sample("bert_layernorm")
    fused, result = ScopeLayerNormPass().apply(original)
    return original, fused, result


def test_general_pass_is_always_on():
    assert "ScopeLayerNormPass" in default_pass_ids()
    assert "ScopeLayerNormPass" in PassConfig.from_ids([]).pass_ids()
    with pytest.raises(FuseLensError, match="general pass"):
        PassConfig.default().with_pass("ScopeLayerNormPass", False)


def test_bert_gives_one_layernorm_per_layer_with_the_toolchain_wiring(bert):
    original, fused, result = bert
    assert [m.anchor for m in result.matches] == [LN, LN_OUT] and not result.near_misses
    first = result.matches[0]
    assert first.bindings == {"batchnorm": f"{LN}/batchnorm", "moments": f"{LN}/moments"}
    assert first.details["inputs"] == ["input_ids_embedding", f"{LN}/gamma/read", f"{LN}/beta/read"]
    assert first.details["outputs"] == [f"{LN}/batchnorm/add_1", f"{LN}/moments/mean", f"{LN}/batchnorm/Rsqrt"]
    assert first.details["attrs"] == {"begin_norm_axis": -1, "begin_params_axis": -1}
    # the body is every node under moments + batchnorm (their constants too), nothing of the parent scope
    assert set(first.nodes) == {n for n in original.nodes if n.startswith((f"{LN}/moments/", f"{LN}/batchnorm/"))}
    assert len(first.nodes) == 14

    calls = fused_calls(fused, "LayerNorm")
    assert [c.name for c in calls] == [LN, LN_OUT]
    call = fused.node(LN)
    assert list(call.input) == first.details["inputs"]
    assert fused.attr(LN, FUSION_PASS_ATTR) == "ScopeLayerNormPass"
    assert fused.attr(LN, FUSED_NODES_ATTR) == list(first.nodes)
    assert fused.attr(LN, "_begin_norm_axis") == -1
    assert call.op in fused.functions
    assert not any(n.startswith(f"{LN}/batchnorm") for n in fused.nodes)
    assert str(fused.inputs("bert/encoder/layer_0/output/Reshape")[0]) == LN
    # provenance: the scope nodes were removed and the call node created
    rewrite = result.rewrites[0]
    assert rewrite.removed == first.nodes and rewrite.created == (LN,)


def test_fused_graph_computes_the_same_y_mean_and_rsqrt(bert):
    original, fused, _ = bert
    assert_same_outputs(original, fused, {f"{LN}/batchnorm/add_1": LN, f"{LN}/moments/mean": f"{LN}:1",
                                          f"{LN}/batchnorm/Rsqrt": f"{LN}:2",
                                          f"{LN_OUT}/batchnorm/Rsqrt": f"{LN_OUT}:2"})


def test_keras_batchnorm_scopes_are_near_misses_not_layernorms(load_sample):
    result = ScopeLayerNormPass().dry_run(load_sample("keras_bn_small_ops"))
    assert not result.matches
    reasons = {n.anchor: n.reason for n in result.near_misses}
    assert reasons["bn_default/batchnorm"] == ("a batchnorm scope without a sibling moments scope "
                                               "(a Keras BatchNormalization, not a LayerNorm)")
    assert "Mul: found 2, pattern needs 3" in reasons["bn_no_scale/batchnorm"]
    assert "Sub: found none, pattern needs 1" in reasons["bn_no_center/batchnorm"]


def test_a_name_containing_while_is_skipped(load_sample):
    looped = renamed(load_sample("bert_layernorm"), "bert/encoder/layer_0/output/", "bert/while/layer_0/output/")
    result = ScopeLayerNormPass().dry_run(looped)
    assert [m.anchor for m in result.matches] == [LN]
    (miss,) = result.near_misses
    assert miss.anchor == "bert/while/layer_0/output/LayerNorm"
    assert miss.reason == ("the name bert/while/layer_0/output/LayerNorm/batchnorm contains 'while'; "
                           "ScopeLayerNormPass never fuses such a scope")


def test_a_scope_holding_a_retval_is_not_fused(load_sample):
    graph = load_sample("bert_layernorm")
    editor = graph.editor()
    editor.add(with_shapes(make_node("_Retval", f"{LN}/batchnorm/y_retval", [f"{LN}/batchnorm/add_1"],
                                     {"T": FLOAT, "index": 0}), []))
    result = ScopeLayerNormPass().dry_run(editor.build())
    assert [m.anchor for m in result.matches] == [LN_OUT]
    reasons = [n.reason for n in result.near_misses]
    assert any("holds a _Retval node" in r and "never fused" in r for r in reasons)


def test_an_inner_value_read_outside_the_scope_is_refused(load_sample):
    graph = load_sample("bert_layernorm")
    editor = graph.editor()
    editor.add(with_shapes(make_node("Relu", "spy", [f"{LN}/moments/variance"], {"T": FLOAT}),
                           [graph.output_shape(f"{LN}/moments/variance")]))
    result = ScopeLayerNormPass().dry_run(editor.build())
    assert [m.anchor for m in result.matches] == [LN_OUT]
    assert "is also read by spy outside the match" in result.near_misses[0].reason


@pytest.mark.slow
def test_mobilenet_v2_has_keras_batchnorms_and_no_layernorm(load_sample):
    result = ScopeLayerNormPass().dry_run(load_sample("mobilenet_v2"))
    assert not result.matches
    assert len(result.near_misses) == 52
    assert all(n.reason.startswith("a batchnorm scope without a sibling moments scope (a Keras BatchNormalization")
               for n in result.near_misses)


def test_a_tf2_graph_is_refused_whole_as_the_toolchain_refuses_it(load_sample):
    """scope_layernorm_pass.cc: a scope named `.../batchnorm/mul` holding a `mul/ReadVariableOp` node (gamma
    read as TF 2.x freezes it) makes the pass return FAILED: no LayerNorm of the graph is fused, not even
    the TF1 one beside it, and each says why."""
    original = load_sample("bert_layernorm")
    editor = original.editor()
    read = f"{LN_OUT}/batchnorm/mul/ReadVariableOp"
    gamma = original.inputs(f"{LN_OUT}/batchnorm/mul")[1]
    editor.add(with_shapes(make_node("Identity", read, [str(gamma)], {"T": FLOAT}), [[32]]))
    editor.set_input(f"{LN_OUT}/batchnorm/mul", 1, read)
    tf2 = editor.build()
    fused, result = ScopeLayerNormPass().apply(tf2)
    assert result.matches == [] and fused.op_histogram() == tf2.op_histogram()
    assert sorted(m.anchor for m in result.near_misses) == [f"{LN}/batchnorm", f"{LN_OUT}/batchnorm"]
    for miss in result.near_misses:
        assert f"a TF 2.x graph: {read} reads a weight through a ReadVariableOp" in str(miss.reason)
        assert "tf2.x can not do scope fusion" in str(miss.reason)
        assert miss.culprit.nodes == (read,)
