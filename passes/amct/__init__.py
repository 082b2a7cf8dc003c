"""AMCT pre-quantization fusions. Importing the package registers every pass (one module each).

Order inside the family: small-op BatchNorm -> FusedBatchNormV3 first (so the conv folds see it),
group conv before plain conv, the scalar Mul fold last (it folds into what the BN folds left).
"""

from passes.amct import conv_bn, depthwise_bn, group_conv_bn, op_bias_mul, small_op_bn

__all__ = ["conv_bn", "depthwise_bn", "group_conv_bn", "op_bias_mul", "small_op_bn"]
