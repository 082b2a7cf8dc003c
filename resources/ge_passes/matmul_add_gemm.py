"""MatMul + Add -> GEMM, expression style: a FuseLens template for a GE Python fusion pass.

Deploy it as it is: `export ASCEND_GE_PY_PASS_PATH=$PWD/matmul_add_gemm.py` before GE starts (or
`pyatc ...`); try it first with `fuselens py-pass check matmul_add_gemm.py --model M`.

GE's TensorFlow parser names tf.matmul's op MatMulV2 (TensorFlow's MatMul is GE's MatMulV2), so the
patterns are over MatMulV2: plus an Add, plus a BiasAdd (a Keras Dense layer), and the batched
BatchMatMulV2 plus an Add. GEMM computes alpha * (a @ b) + beta * c.
"""

from ge.es.all import GEMM, BatchMatMulV2, BiasAdd, MatMulV2
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="MatMulAddToGemmPass", stage=PassStage.BEFORE_INFER_SHAPE)
class MatMulAddToGemmPass(PatternFusionPass):
    @pattern
    def matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return MatMulV2(a, b) + c

    @pattern
    def matmul_bias_add(self, inputs):
        a, b, c = inputs[:3]
        return BiasAdd(MatMulV2(a, b), c)

    @pattern
    def batch_matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return BatchMatMulV2(a, b) + c

    def replacement(self, inputs):
        a, b, c = inputs[:3]
        return GEMM(a, b, c, 1.0, 1.0)
