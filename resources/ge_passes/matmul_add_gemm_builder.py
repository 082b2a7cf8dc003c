"""MatMul + Add -> GEMM, graph-building style: a FuseLens template for a GE Python fusion pass.

The patterns are built with GraphBuilder and create_pattern, and capture the MatMulV2 and the Add so
the hooks can read them: meet_requirements refuses an Add whose inputs are not float32 (and says why
with set_error_message), replacement copies the MatMulV2's transpose attributes onto the GEMM.
"""

from ge.es.all import GEMM, Add, MatMulV2
from ge.es.graph_builder import GraphBuilder
from ge.graph.types import DataType
from ge.passes import PassStage, PatternFusionPass, create_pattern, create_replacement, register_fusion_pass

MATMUL, ADD = 0, 1  # capture indices


@register_fusion_pass(name="MatMulAddToGemmCapturePass", stage=PassStage.BEFORE_INFER_SHAPE)
class MatMulAddToGemmCapturePass(PatternFusionPass):
    def patterns(self):
        builder = GraphBuilder("matmul_add")
        a, b, c = builder.create_inputs(3)
        matmul = MatMulV2(a, b)
        add = Add(matmul, c)
        found = create_pattern(builder.build_and_reset([add]))
        found.capture_tensor(matmul).capture_tensor(add)
        return [found]

    def meet_requirements(self, match_result, context):
        add = match_result.get_captured_tensor(ADD).node
        types = [add.get_input_desc(i).get_data_type() for i in range(2)]
        if any(t != DataType.DT_FLOAT for t in types):
            context.set_error_message(f"{add.name}: GEMM here takes float32 inputs, got "
                                      f"{', '.join(t.name for t in types)}")
            return False
        return True

    def replacement(self, match_result):
        matmul = match_result.get_captured_tensor(MATMUL).node
        builder = GraphBuilder("gemm")
        a, b, c = builder.create_inputs(3)
        gemm = GEMM(a, b, c, builder.create_scalar_float(1.0), builder.create_scalar_float(1.0),
                    transpose_a=bool(matmul.get_attr("transpose_x1")),
                    transpose_b=bool(matmul.get_attr("transpose_x2")))
        return create_replacement(builder.build_and_reset([gemm]))
