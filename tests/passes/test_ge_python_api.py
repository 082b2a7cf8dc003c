"""FuseLens's `ge` as a pass uses it: hook signatures checked at class definition as GE checks them, the
other pass kinds (DecomposePass, FusionBasePass), attribute matching, and an error in a hook as the
user's own traceback while the pass goes on."""

from __future__ import annotations

import pytest

from fuselens.passes.config import PassConfig
from fuselens.passes.ge_python.api.builder import GraphBuilder
from fuselens.passes.ge_python.api.hooks import PatternFusionPass, pattern
from fuselens.passes.ge_python.api.missing import UnsupportedGeApi
from fuselens.passes.ge_python.proof import prove
from fuselens.passes.pipeline import run_pipeline
from tests.passes.ge_python_check import SAMPLE, ge_result, run_files, write_pass


def test_overriding_run_or_mixing_styles_is_a_type_error():
    with pytest.raises(TypeError, match="overrides run"):
        type("Bad", (PatternFusionPass,), {"run": lambda self, graph, context: None})
    with pytest.raises(TypeError, match="mixes @pattern methods with patterns"):
        type("Mixed", (PatternFusionPass,), {"p": pattern(lambda self, inputs: inputs[0]),
                                             "patterns": lambda self: []})
    with pytest.raises(TypeError, match="meet_requirements takes"):
        type("Arity", (PatternFusionPass,), {"meet_requirements": lambda self: True})


def test_inputs_refuse_iteration_and_unknown_apis_are_named():
    builder = GraphBuilder("g")
    with pytest.raises(UnsupportedGeApi, match=r"GraphBuilder\.set_graph_attr_int64 is not provided"):
        builder.set_graph_attr_int64("k", 1)
    from fuselens.passes.ge_python.api.builder import PatternInputs

    with pytest.raises(TypeError, match="cannot be iterated"):
        list(PatternInputs(builder))


def test_decompose_pass_rewrites_each_node_of_its_type(tmp_path, load_sample):
    path = write_pass(tmp_path, "decompose.py", """
        from ge.es.all import Maximum
        from ge.es.graph_builder import GraphBuilder
        from ge.passes import DecomposePass, PassStage, register_decompose_pass


        @register_decompose_pass(name="ReluAsMaximumPass", stage=PassStage.AFTER_INFER_SHAPE, op_types=["Relu"])
        class ReluAsMaximumPass(DecomposePass):
            def replacement(self, node):
                builder = GraphBuilder("maximum")
                x = builder.create_input(0)
                return builder.build_and_reset([Maximum(x, builder.create_scalar_float(0.0))])
    """)
    pipeline, _ = run_files(load_sample(SAMPLE), path)
    result = ge_result(pipeline, "ReluAsMaximumPass")
    assert (result.match_times, result.effect_times) == (1, 1)
    assert pipeline.fused.op("dense1/Relu") == "Maximum"
    assert prove(pipeline, seed=1).status == "equal"


def test_fusion_base_pass_reads_the_graph(tmp_path, load_sample):
    path = write_pass(tmp_path, "whole.py", """
        from ge.passes import FusionBasePass, PassStage, register_fusion_pass

        SEEN = []


        @register_fusion_pass(name="CountPass", stage=PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE)
        class CountPass(FusionBasePass):
            def run(self, graph, context):
                matmuls = [n.name for n in graph.get_all_nodes() if n.type == "MatMulV2"]
                if len(matmuls) != 2:
                    context.set_error_message(f"expected 2 MatMulV2, saw {matmuls}")
                    return False
                graph.remove_node(graph.find_node_by_name(matmuls[0]))
    """)
    config = PassConfig.from_ids(["AutoFusePass"]).with_py_passes([path])
    pipeline = run_pipeline(load_sample(SAMPLE), config)
    assert [r.pass_id for r in pipeline.results][-2:] == ["AutoFusePass", "CountPass"]  # its stage: after AutoFuse
    result = ge_result(pipeline, "CountPass")
    assert result.unsupported == ["TargetGraph.remove_node"]
    (error,) = result.user_errors
    assert error.phase == "run" and "TargetGraph.remove_node is not provided" in error.message


def test_an_error_in_a_hook_is_the_users_traceback_and_the_pass_goes_on(tmp_path, load_sample):
    path = write_pass(tmp_path, "raising.py", """
        from ge.es.all import Relu
        from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


        def check(node):
            return node.get_attr("no_such_attr")


        @register_fusion_pass(name="RaisingPass", stage=PassStage.BEFORE_INFER_SHAPE)
        class RaisingPass(PatternFusionPass):
            @pattern
            def relu(self, inputs):
                return Relu(inputs[0])

            def meet_requirements(self, match_result):
                return check(match_result.get_matched_nodes()[0])

            def replacement(self, inputs):
                return inputs[0]
    """)
    pipeline, _ = run_files(load_sample(SAMPLE), path)
    result = ge_result(pipeline, "RaisingPass")
    (error,) = result.user_errors
    assert (error.file, error.line, error.phase) == (str(path), 6, "meet_requirements")
    assert error.message == "RuntimeError: Failed to get attribute 'no_such_attr' from Node"
    assert error.traceback.count("raising.py") == 2 and "fuselens" not in error.traceback
    assert result.match_times == 1 and result.effect_times == 0 and pipeline.fused is pipeline.original
    assert result.errors == [f"RaisingPass: {error.one_line()}"]


def test_ir_attribute_match_compares_ge_attributes(tmp_path, load_sample):
    body = """
        from ge.es.all import MatMulV2
        from ge.passes import PassStage, PatternFusionPass, PatternMatcherConfigBuilder, pattern, register_fusion_pass


        @register_fusion_pass(name="TransposedPass", stage=PassStage.BEFORE_INFER_SHAPE)
        class TransposedPass(PatternFusionPass):
            def __init__(self):
                super().__init__(PatternMatcherConfigBuilder().enable_ir_attr_match().build())

            @pattern
            def transposed(self, inputs):
                return MatMulV2(inputs[0], inputs[1], transpose_x2=TRANSPOSED)

            def meet_requirements(self, match_result):
                return False
    """
    transposed = write_pass(tmp_path, "transposed.py", body.replace("TRANSPOSED", "True"))
    plain = write_pass(tmp_path, "plain.py", body.replace("TRANSPOSED", "False").replace("TransposedPass",
                                                                                          "PlainPass"))
    pipeline, _ = run_files(load_sample(SAMPLE), transposed, plain)
    miss = ge_result(pipeline, "TransposedPass").near_misses[0]
    assert "transpose_x2 is False, the pattern needs True (IR attribute match is on)" in miss.reason
    assert ge_result(pipeline, "PlainPass").match_times == 2
