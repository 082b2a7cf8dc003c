"""Every near miss records what broke it on the graph (Culprit: the nodes at fault, the edge at fault),
so the window can draw the "why not" over the before pane. One test per family on the samples, the
engine's own safety checks on tiny graphs, and the invariant that every culprit names real nodes and
a real edge of the graph it came from."""

from __future__ import annotations

import pickle

import pytest

from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import SAMPLES
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.passes.base import Culprit, FusionPass, Match, NearMiss, Reason
from fuselens.passes.config import PassConfig
from fuselens.passes.pattern import ANY, Op, match
from fuselens.passes.pipeline import run_pipeline


def near_misses(sample: str, pass_id: str) -> dict[str, NearMiss]:
    pipeline = run_pipeline(load_model(sample).graph, PassConfig.default())
    result = next(r for r in pipeline.results if r.pass_id == pass_id)
    return {miss.anchor: miss for miss in result.near_misses}


# ---- one family at a time ----------------------------------------------------------------------
def test_scope_census_culprit_is_the_counted_nodes_and_a_missing_sibling_blames_the_structure():
    misses = near_misses("keras_bn_small_ops", "ScopeLayerNormPass")
    too_few = misses["bn_no_scale/batchnorm"]  # Mul: found 2, pattern needs 3
    assert "Mul: found 2, pattern needs 3" in too_few.reason
    assert too_few.culprit == Culprit(("bn_no_scale/batchnorm/mul", "bn_no_scale/batchnorm/mul_1"))
    unpaired = misses["bn_default/batchnorm"]  # nothing to point at: the moments scope is absent
    assert "without a sibling moments scope" in unpaired.reason
    assert unpaired.culprit == Culprit()


def test_amct_culprits_name_the_leaking_edge_the_training_bn_and_the_vector_factor():
    leak = near_misses("conv_shared", "ConvBatchnormFusionPass")["bn1"]
    assert leak.culprit == Culprit(("conv1",), ("conv1", "side_relu"))
    assert leak.bindings["op"] == "conv1"  # the pattern it tried is kept for the overlay
    training = near_misses("conv_bn_training", "ConvBatchnormFusionPass")["bn1"]
    assert training.culprit == Culprit(("bn1",))
    vector = near_misses("mul_vector", "OpBiasAddMulFusionPass")["mul"]
    assert vector.culprit == Culprit(("mul/y",), ("mul/y", "mul"))


def test_small_op_batchnorm_culprit_is_the_computed_statistic_and_its_edge_into_the_pattern():
    miss = near_misses("instance_norm", "SmallOpBatchnormFusionPass")["InstanceNorm/instancenorm/add_1"]
    assert miss.culprit == Culprit(("InstanceNorm/moments/variance",),
                                   ("InstanceNorm/moments/variance", "InstanceNorm/instancenorm/add"))
    assert miss.bindings["variance"] == "InstanceNorm/moments/variance"


def test_autofuse_culprits_name_the_switched_off_reduce_with_its_edge_and_the_splitting_opaque_op():
    reduce = near_misses("abs_reduce_sum", "AutoFusePass")["reduce_sum_0"]
    assert reduce.culprit == Culprit(("reduce_sum_0",), ("abs_0", "reduce_sum_0"))
    split = near_misses("demo", "AutoFusePass")["block1/depthwise"]
    assert split.culprit == Culprit(("block1/depthwise",))


# ---- the engine's safety checks --------------------------------------------------------------------
def ph(name: str):
    return make_node("Placeholder", name, attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})


class Proposes(FusionPass):
    """Proposes the matches it is given, so the engine's checks decide."""

    id, family, title, description = "ToyProposes", "amct", "toy", "toy"

    def __init__(self, *proposals: Match):
        super().__init__()
        self.proposals = proposals

    def candidates(self, graph):
        yield from self.proposals


def test_engine_culprits_for_a_leak_an_overlap_and_a_cycle():
    g = Graph.from_nodes([ph("x"), make_node("Abs", "a", ["x"]), make_node("Relu", "b", ["a"]),
                          make_node("AddV2", "c", ["a", "b"]), make_node("Exp", "side", ["b"])], source="toy")
    leak = Proposes(Match("ToyProposes", "c", ("b", "c"), ("c",), "b+c")).dry_run(g).near_misses[0]
    assert leak.culprit == Culprit(("b",), ("b", "side"))
    overlap = Proposes(Match("ToyProposes", "b", ("b",), ("b",), "first"),
                       Match("ToyProposes", "side", ("b", "side"), ("b", "side"), "second")).dry_run(g)
    assert overlap.near_misses[0].culprit == Culprit(("b",))
    cycle = Proposes(Match("ToyProposes", "c", ("a", "c"), ("a", "c"), "a+c")).dry_run(g).near_misses[0]
    assert "cycle through b" in cycle.reason and cycle.culprit == Culprit(("b",), ("a", "b"))


def test_a_failed_pattern_blames_the_input_that_did_not_fit_and_its_edge():
    g = Graph.from_nodes([ph("x"), make_node("Exp", "e", ["x"]), make_node("Relu", "r", ["e"])], source="toy")
    failed = match(g, Op("Relu", "relu", [Op("Abs", "abs", [ANY])]), "r")
    assert failed.reason == "e is Exp, the pattern needs Abs"
    assert failed.refusal.culprit == Culprit(("e",), ("e", "r"))


def test_a_near_miss_keeps_plain_text_and_its_culprit_through_json_and_pickle():
    miss = NearMiss("P", "r", ("r", "e"), Reason("e is Exp", "e", edge=("e", "r")))
    assert type(miss.reason) is str and miss.culprit == Culprit(("e",), ("e", "r"))
    assert miss.to_json()["culprit"] == {"nodes": ["e"], "edge": ["e", "r"]}
    assert pickle.loads(pickle.dumps(miss)) == miss  # the TensorFlow helper sends results back pickled


# ---- every culprit on every sample is real ----------------------------------------------------------
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_every_culprit_names_real_nodes_and_a_real_edge_of_the_graph_its_pass_saw(sample):
    config, graph = PassConfig.default(), load_model(sample).graph
    for pass_id in config.pass_ids():
        seen = graph
        graph, result = config.get_pass(pass_id)(config.options()).apply(seen)
        for miss in result.near_misses:
            culprit = miss.culprit
            assert all(n in seen for n in culprit.nodes), (miss.anchor, culprit)
            if culprit.edge is not None:
                producer, reader = culprit.edge
                assert producer in {r.node for r in seen.inputs(reader)}, (miss.anchor, culprit)
