"""The pass engine's own guarantees, on tiny hand-made graphs with a toy pass."""

from __future__ import annotations

import numpy as np

from fuselens.core.graph import Graph, TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.graph.provenance import Provenance, Rewrite
from fuselens.passes.base import FusionPass, Match, NearMiss
from fuselens.passes.pattern import ANY, Const, Op, match
from fuselens.passes.report import op_count_diff


def graph(*nodes) -> Graph:
    return Graph.from_nodes(nodes, source="toy")


def ph(name):
    return make_node("Placeholder", name, attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})


class ReluAbsPass(FusionPass):
    """Toy: Relu(Abs(x)) -> Abs(x) (the Relu is redundant); folds nothing."""

    id = "ToyReluAbs"
    family = "amct"
    title = "toy"
    description = "toy"
    PATTERN = Op("Relu", "relu", [Op("Abs", "abs", [ANY])])

    def candidates(self, g):
        for node in g:
            if node.op != "Relu":
                continue
            m = match(g, self.PATTERN, node.name)
            if not m.ok:
                yield NearMiss(self.id, node.name, tuple(m.nodes), m.reason)
                continue
            b = m.bindings
            yield Match(self.id, b["relu"], (b["relu"], b["abs"]), (b["relu"],), f"drop {b['relu']}", b)

    def rewrite(self, g, editor, m):
        editor.remove(m.bindings["relu"])
        editor.redirect(TensorRef(m.bindings["relu"]), TensorRef(m.bindings["abs"]))
        return Rewrite(self.id, m.index, removed=(m.bindings["relu"],), modified=(m.bindings["abs"],))


def test_pattern_binds_optional_nodes_and_explains_failures():
    g = graph(ph("x"), make_const("w", np.ones((2, 2), np.float32)), make_node("Identity", "w/read", ["w"]),
              make_node("MatMul", "mm", ["x", "w/read"]), make_node("Relu", "r", ["mm"]))
    pat = Op("Relu", "relu", [Op("BiasAdd", "bias", [Op("MatMul", "mm", [ANY, Const("w")])], optional=True)])
    m = match(g, pat, "r")
    assert m.ok and m.bindings == {"relu": "r", "mm": "mm", "w": "w/read"}
    bad = match(g, Op("Relu", inputs=[Op("Conv2D")]), "r")
    assert not bad.ok and bad.reason == "mm is MatMul, the pattern needs Conv2D" and bad.nodes == ["mm"]
    not_const = match(g, Op("MatMul", inputs=[Const("a"), ANY]), "mm")
    assert not_const.reason == "x (Placeholder) is not a constant"


def test_apply_returns_new_graph_and_leaves_input_untouched():
    g = graph(ph("x"), make_node("Abs", "a", ["x"]), make_node("Relu", "r", ["a"]), make_node("Exp", "e", ["r"]))
    before = g.graph_def.SerializeToString()
    new, result = ReluAbsPass().apply(g)
    assert g.graph_def.SerializeToString() == before
    assert [n.name for n in new] == ["x", "a", "e"] and [str(r) for r in new.inputs("e")] == ["a"]
    assert result.rewrites[0].removed == ("r",)


def test_intermediate_read_outside_the_match_is_a_near_miss():
    g = graph(ph("x"), make_node("Abs", "a", ["x"]), make_node("Relu", "r", ["a"]), make_node("Exp", "side", ["a"]))
    result = ReluAbsPass().dry_run(g)
    assert not result.matches
    assert result.near_misses[0].reason == "a (Abs) has 2 consumers: it is also read by side outside the match"


def test_overlapping_matches_first_wins_and_loser_names_winner():
    class Greedy(ReluAbsPass):
        def candidates(self, g):
            yield Match(self.id, "r", ("r", "a"), ("r", "a"), "first")
            yield Match(self.id, "r2", ("r2", "a"), ("r2", "a"), "second")

    g = graph(ph("x"), make_node("Abs", "a", ["x"]), make_node("Relu", "r", ["a"]), make_node("Relu", "r2", ["a"]))
    result = Greedy().dry_run(g)
    assert [m.summary for m in result.matches] == ["first"]
    assert result.near_misses[0].reason.startswith("overlaps match #0 (first) on a")


def test_shared_weight_is_not_folded():
    class Folder(ReluAbsPass):
        def candidates(self, g):
            yield Match(self.id, "mm", ("mm",), ("mm",), "fold w", weights=("w/read",))

    g = graph(ph("x"), make_const("w", np.ones((2, 2), np.float32)), make_node("Identity", "w/read", ["w"]),
              make_node("MatMul", "mm", ["x", "w/read"]), make_node("MatMul", "other", ["x", "w"]))
    result = Folder().dry_run(g)
    assert "weight w/read is shared with other" in result.near_misses[0].reason


def test_contraction_that_would_create_a_cycle_is_refused():
    class Contract(ReluAbsPass):
        def candidates(self, g):
            yield Match(self.id, "c", ("a", "c"), ("c",), "a+c")

    # a -> b -> c and a -> c: fusing {a, c} while b stays outside makes a cycle
    g = graph(ph("x"), make_node("Abs", "a", ["x"]), make_node("Relu", "b", ["a"]),
              make_node("AddV2", "c", ["a", "b"]))
    result = Contract().dry_run(g)
    assert "a (Abs) has 2 consumers" in result.near_misses[0].reason or "cycle" in result.near_misses[0].reason

    class ContractWithOutputs(ReluAbsPass):
        def candidates(self, g):
            yield Match(self.id, "c", ("a", "c"), ("a", "c"), "a+c")

    assert "cycle through b" in ContractWithOutputs().dry_run(g).near_misses[0].reason


def test_provenance_composes_rewrites_across_passes():
    prov = Provenance(("x", "conv", "bn", "relu"))
    prov.record(Rewrite("P1", 0, removed=("bn",), modified=("conv",), created=("conv/bias",)))
    prov.record(Rewrite("P2", 0, removed=("conv/bias", "relu"), created=("fused",)))
    assert prov.origins("fused") == {"conv", "bn", "relu"}
    assert prov.status("conv") == "modified" and prov.status("fused") == "new" and prov.status("x") == "unchanged"
    assert prov.original_status("bn") == "removed" and prov.original_status("x") == "unchanged"
    assert prov.descendants("bn") == ["conv", "fused"]


def test_op_count_diff_reads_like_tf2onnx():
    assert op_count_diff({"Conv2D": 5, "FusedBatchNormV3": 52}, {"Conv2D": 5, "BiasAdd": 52}) == [
        "BiasAdd +52 (0->52)", "FusedBatchNormV3 -52 (52->0)"]
