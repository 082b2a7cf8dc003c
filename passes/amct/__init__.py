"""AMCT pre-quantization fusions, one module each; the catalog (passes/registry.py) imports every
module here, and each pass module registers its pass.

Order inside the family: small-op BatchNorm -> FusedBatchNormV3 first (so the conv folds see it),
group conv before plain conv, the scalar Mul fold last (it folds into what the BN folds left).
"""
