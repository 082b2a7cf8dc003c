"""Keras 3 LayerNormalization: a worded near miss from the built-in LayerNorm pass, no "BatchNorm that
needs Sub" from the small-op BN pass, and the shipped user rule file fusing it into LayerNorm.

The models are real Keras 3 models with two LayerNormalization layers (random weights, gamma and
beta), saved as .keras and opened through FuseLens's Keras loader, in float32 and under the
mixed_float16 policy (x cast to float32 inside the layer and the result cast back).
"""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import Graph, proto
from fuselens.passes.amct.small_op_bn import SmallOpBatchnormFusionPass
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.scope.layer_norm import KERAS3_RULE_FILE, ScopeLayerNormPass
from tests.passes.scope_check import assert_same_outputs, fused_calls
from tests.zoo.models import ROOT, zoo_model
from tests.zoo.zoo_check import assert_agrees

RULE_FILE = ROOT / KERAS3_RULE_FILE
RULE_FOR = {"float32": "ScopeKeras3LayerNormPass", "mixed_float16": "ScopeKeras3LayerNormMixedPass"}
LAYOUT = "a LayerNorm laid out differently (Keras 3 LayerNormalization)"


def build_keras_model(path, policy: str) -> None:
    """Dense -> LayerNormalization -> Dense + Relu -> LayerNormalization(epsilon=1e-5), random weights."""
    import keras

    previous = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(7)
        inputs = keras.Input((8, 16), name="tokens")
        x = keras.layers.Dense(16)(inputs)
        x = keras.layers.LayerNormalization()(x)
        x = keras.layers.Dense(16, activation="relu")(x)
        x = keras.layers.LayerNormalization(epsilon=1e-5)(x)
        model = keras.Model(inputs, x)
        rng = np.random.default_rng(7)
        for layer in model.layers:
            if isinstance(layer, keras.layers.LayerNormalization):
                layer.gamma.assign(rng.uniform(0.5, 1.5, 16).astype(np.float32))
                layer.beta.assign(rng.normal(0.0, 0.5, 16).astype(np.float32))
            elif layer.weights:
                layer.weights[1].assign(rng.normal(0.0, 0.3, 16).astype(np.float32))  # the Dense bias
        model.save(path)
    finally:
        keras.mixed_precision.set_global_policy(previous)


@pytest.fixture(scope="module", params=list(RULE_FOR))
def keras_ln(request, tmp_path_factory) -> tuple[str, Graph]:
    path = tmp_path_factory.mktemp("keras3_ln") / f"two_layer_norms_{request.param}.keras"
    build_keras_model(path, request.param)
    return request.param, load_model(path).graph


def without_frozen_noop(graph: Graph) -> Graph:
    """The graph minus the NoOp a frozen tf.function keeps (control edges from every ReadVariableOp)."""
    graph_def = proto.GraphDef()
    graph_def.CopyFrom(graph.graph_def)
    noops = {n.name for n in graph_def.node if n.op == "NoOp"}
    kept = [n for n in graph_def.node if n.name not in noops]
    for node in kept:
        node.input[:] = [i for i in node.input if i.lstrip("^") not in noops]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    return Graph(graph_def, source=f"{graph.source} (no NoOp)")


def layer_scopes(graph: Graph) -> list[str]:
    return sorted({n.name.rsplit("/moments/", 1)[0] for n in graph if "/moments/" in n.name})


def test_the_builtin_pass_says_what_differs_from_its_layout(keras_ln) -> None:
    _, graph = keras_ln
    result = ScopeLayerNormPass().dry_run(graph)
    assert not result.matches
    assert [n.anchor for n in result.near_misses] == layer_scopes(graph) and len(result.near_misses) == 2
    reason = result.near_misses[0].reason
    assert reason.startswith(LAYOUT)
    assert "instead of a sibling batchnorm scope" in reason and "Sub: found none, pattern needs 1" in reason
    assert KERAS3_RULE_FILE in reason


def test_tf1_layer_norms_and_keras_batchnorms_get_no_such_near_miss(load_sample) -> None:
    for sample in ("bert_layernorm", "keras_bn_small_ops", "instance_norm", "demo"):
        assert not any(LAYOUT in n.reason for n in ScopeLayerNormPass().dry_run(load_sample(sample)).near_misses)


def test_the_small_op_batchnorm_pass_does_not_call_it_a_batchnorm_that_needs_sub(keras_ln) -> None:
    _, graph = keras_ln
    near = SmallOpBatchnormFusionPass().dry_run(graph).near_misses
    assert near and not SmallOpBatchnormFusionPass().dry_run(graph).matches
    for miss in near:
        assert "needs Sub" not in miss.reason
        assert "moments/variance (Mean) is not a constant: this normalises with computed statistics" in miss.reason


def rule_config(policy: str) -> PassConfig:
    return PassConfig.default().with_scope_rules(RULE_FILE).with_scope_list(RULE_FOR[policy])


def assert_fused_into_two_layer_norms(graph: Graph, policy: str) -> None:
    pipeline = run_pipeline(graph, rule_config(policy))
    result = pipeline.result(RULE_FOR[policy])
    assert result is not None and not result.near_misses, result.near_misses[:1]
    scopes = layer_scopes(graph)
    assert [m.anchor for m in result.matches] == scopes
    calls = fused_calls(pipeline.fused, "LayerNorm")
    assert [c.name for c in calls] == scopes
    first = result.matches[0]
    assert first.details["attrs"] == {"begin_norm_axis": -1, "begin_params_axis": -1}
    assert len(first.details["inputs"]) == 1 and len(first.details["outputs"]) == 3
    also = {}
    for match in result.matches:  # y, mean and rsqrt of each layer, as the fused node's outputs 0, 1, 2
        also.update({out: f"{match.anchor}:{k}" for k, out in enumerate(match.details["outputs"])})
    assert_same_outputs(graph, pipeline.fused, also)


@pytest.mark.parametrize("frozen_noop", [True, False], ids=["as_frozen", "without_the_frozen_noop"])
def test_the_rule_file_fuses_both_layers_into_layer_norm_and_agrees(keras_ln, frozen_noop) -> None:
    """As a tf.function freezes it (a NoOp with a control edge from every ReadVariableOp) and without it."""
    policy, graph = keras_ln
    assert_fused_into_two_layer_norms(graph if frozen_noop else without_frozen_noop(graph), policy)


def test_each_rule_matches_only_its_own_precision(keras_ln) -> None:
    policy, graph = keras_ln
    other = next(p for p in RULE_FOR if p != policy)
    assert not run_pipeline(graph, rule_config(other)).result(RULE_FOR[other]).matches


@pytest.mark.slow
def test_convnext_layer_norms_are_near_misses_and_the_rule_fuses_all_23() -> None:
    graph = load_model(zoo_model("ConvNeXtTiny")).graph
    result = ScopeLayerNormPass().dry_run(graph)
    assert len(result.near_misses) == len(layer_scopes(graph)) == 23  # stem, 18 blocks, 3 downsamplings, head
    assert all(n.reason.startswith(LAYOUT) for n in result.near_misses)
    pipeline = run_pipeline(graph, rule_config("float32"))
    assert len(pipeline.result(RULE_FOR["float32"]).matches) == 23
    assert len(fused_calls(pipeline.fused, "LayerNorm")) == 23
    assert_agrees(pipeline, what="ConvNeXtTiny with the Keras 3 LayerNorm rule")
