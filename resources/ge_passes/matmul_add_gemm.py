"""MatMul + Add -> GEMM, expression style: a FuseLens template for a GE Python fusion pass.

Deploy it as it is: `export ASCEND_GE_PY_PASS_PATH=$PWD/matmul_add_gemm.py` before GE starts (or
`pyatc ...`); try it first with `fuselens py-pass check matmul_add_gemm.py --model M`.

GE's TensorFlow parser names tf.matmul's op MatMulV2 (TensorFlow's MatMul is GE's MatMulV2), so the
first pattern is over MatMulV2; the second catches batched matmuls.
"""

from ge.es.all import GEMM, BatchMatMulV2, MatMulV2
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="MatMulAddToGemmPass", stage=PassStage.BEFORE_INFER_SHAPE)
class MatMulAddToGemmPass(PatternFusionPass):
    @pattern
    def matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return MatMulV2(a, b) + c

    @pattern
    def batch_matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return BatchMatMulV2(a, b) + c

    def replacement(self, inputs):
        a, b, c = inputs[:3]
        return GEMM(a, b, c, 1.0, 1.0)
