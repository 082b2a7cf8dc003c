"""Why a GE Python pass did not fire, as near misses: the pattern node that failed to bind (a wrong op type,
a missing edge, an inner node read outside), a meet_requirements refusal with its message or its return
line; and which of them GE counts in match_times."""

from __future__ import annotations

from tests.passes.ge_python_check import SAMPLE, ge_result, run_files, write_pass

HEAD = """
from ge.es.all import GEMM, BatchMatMulV2, MatMul, MatMulV2, Relu
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="TryPass", stage=PassStage.BEFORE_INFER_SHAPE)
class TryPass(PatternFusionPass):
"""


def run_pattern(tmp_path, load_sample, body: str):
    path = write_pass(tmp_path, "try_pass.py", HEAD + body)
    pipeline, _ = run_files(load_sample(SAMPLE), path)
    return ge_result(pipeline, "TryPass"), path


def test_a_wrong_op_type_names_the_pattern_node(tmp_path, load_sample):
    """GE's examples write MatMul; GE's TF parser calls TensorFlow's MatMul MatMulV2, so it never binds."""
    result, _ = run_pattern(tmp_path, load_sample, """
    @pattern
    def matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return MatMul(a, b) + c

    def replacement(self, inputs):
        a, b, c = inputs[:3]
        return GEMM(a, b, c, 1.0, 1.0)
""")
    assert (result.match_times, result.effect_times) == (0, 0)
    near = {n.anchor: n for n in result.near_misses}
    assert set(near) == {"dense2/Add", "add_zero"}
    miss = near["dense2/Add"]
    assert "pattern node MatMul_0 (input of Add_0, slot 0): dense2/MatMul is MatMulV2 (TensorFlow's MatMul), " \
           "the pattern needs MatMul" in miss.reason
    assert miss.culprit.nodes == ("dense2/MatMul",) and miss.culprit.edge == ("dense2/MatMul", "dense2/Add")
    assert miss.bindings == {"Add_0": "dense2/Add"}


def test_a_missing_edge_names_the_pattern_node(tmp_path, load_sample):
    """The pattern adds the MatMul's own first input; the graph's Add reads a bias: no such edge. GE walks
    breadth first, so input 0 binds to the bias at the Add, and the MatMul's first input does not fit."""
    result, _ = run_pattern(tmp_path, load_sample, """
    @pattern
    def residual(self, inputs):
        a, b = inputs[:2]
        return MatMulV2(a, b) + a

    def replacement(self, inputs):
        return inputs[0]
""")
    assert result.match_times == 0
    miss = next(n for n in result.near_misses if n.anchor == "dense2/Add")
    assert miss.reason.endswith("Data_0 is already bound to dense2/bias/resource; here it would be dense1/Relu")
    assert miss.culprit.nodes == ("dense1/Relu",) and miss.culprit.edge == ("dense1/Relu", "dense2/MatMul")


def test_an_input_count_that_does_not_fit(tmp_path, load_sample):
    result, _ = run_pattern(tmp_path, load_sample, """
    @pattern
    def batched(self, inputs):
        a, b, c = inputs[:3]
        return BatchMatMulV2(a, b, c) + inputs[3]

    def replacement(self, inputs):
        return inputs[0]
""")
    miss = next(n for n in result.near_misses if n.anchor == "dense2/Add")
    assert "pattern node BatchMatMulV2_0" in miss.reason and "needs BatchMatMulV2" in miss.reason


def test_a_refusal_shows_the_pass_message(tmp_path, load_sample):
    result, _ = run_pattern(tmp_path, load_sample, """
    @pattern
    def matmul_only(self, inputs):
        return Relu(inputs[0])

    def meet_requirements(self, match_result, context):
        context.set_error_message("not this time: " + match_result.get_matched_nodes()[0].name)
        return False

    def replacement(self, inputs):
        return inputs[0]
""")
    (miss,) = result.near_misses
    assert miss.anchor == "dense1/Relu" and miss.reason.endswith("not this time: dense1/Relu")
    assert (result.match_times, result.effect_times) == (1, 0)  # refused by meet_requirements: GE counts it


def test_a_refusal_without_a_message_names_the_line_it_returned_from(tmp_path, load_sample):
    result, path = run_pattern(tmp_path, load_sample, """
    @pattern
    def relu(self, inputs):
        return Relu(inputs[0])

    def meet_requirements(self, match_result):
        if match_result.get_pattern_graph_name():
            return False
        return True

    def replacement(self, inputs):
        return inputs[0]
""")
    (miss,) = result.near_misses
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "return False" in text)
    assert miss.reason == f"TryPass_relu_pattern: meet_requirements returned False (line {line} of try_pass.py)"


def test_a_leaking_inner_node_is_named_and_not_counted(tmp_path, load_sample):
    """A pattern Add(MatMulV2, c) -> its input over a graph where the MatMul's output is also read outside."""
    import numpy as np

    from fuselens.core.graph import Graph
    from fuselens.core.graph.nodes import make_const, make_node

    nodes = [make_node("Placeholder", "x", attrs={"dtype": 1}), make_const("w", np.ones((4, 4), np.float32)),
             make_const("c", np.ones((4,), np.float32)), make_node("MatMul", "mm", ["x", "w"], {"T": 1}),
             make_node("Add", "add", ["mm", "c"], {"T": 1}), make_node("Relu", "other", ["mm"], {"T": 1})]
    graph = Graph.from_nodes(nodes)
    path = write_pass(tmp_path, "leak.py", HEAD + """
    @pattern
    def matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return MatMulV2(a, b) + c

    def replacement(self, inputs):
        a, b, c = inputs[:3]
        return GEMM(a, b, c, 1.0, 1.0)
""")
    pipeline, _ = run_files(graph, path)
    result = ge_result(pipeline, "TryPass")
    (miss,) = result.near_misses
    assert "mm (pattern node MatMulV2_0) is also read by other outside the match" in miss.reason
    assert miss.culprit.edge == ("mm", "other")
    assert (result.match_times, result.effect_times) == (0, 0)  # GE's matcher drops it: not a match
