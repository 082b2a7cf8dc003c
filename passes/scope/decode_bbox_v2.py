"""ScopeDecodeBboxV2Pass: the object-detection API's box decoding under a `Decode` scope -> DecodeBboxV2."""

from __future__ import annotations

from passes.registry import register
from passes.scope.features import NodeOpTypeFeature, ScopeFeature, ScopePattern
from passes.scope.scope_pass import InputWire, OutputWire, ScopeRule, ScopeRulePass


@register
class ScopeDecodeBboxV2Pass(ScopeRulePass):
    id = "ScopeDecodeBboxV2Pass"
    title = "Decode scope -> DecodeBboxV2"
    description = ("A scope named Decode with Exp 2, Mul 4, Sub 4, an even number of RealDiv, Unpack 2, Pack 1, "
                   "Transpose 3 and no Softmax (counted with its sub-scopes) becomes DecodeBboxV2(box_encodings, "
                   "anchors): inputs of `transpose` and `get_center_coordinates_and_sizes/transpose`, "
                   "output `transpose_1`.")
    default_enabled = False
    order = 50
    rule = ScopeRule(
        "ScopeDecodeBboxV2Pass", "DecodeBboxV2",
        (ScopePattern("DecodeBboxV2", (
            ScopeFeature(suffix="Decode"), NodeOpTypeFeature("Exp", 2), NodeOpTypeFeature("Mul", 4),
            NodeOpTypeFeature("Sub", 4), NodeOpTypeFeature("RealDiv", 0, 2), NodeOpTypeFeature("Unpack", 2),
            NodeOpTypeFeature("Pack", 1), NodeOpTypeFeature("Transpose", 3), NodeOpTypeFeature("Softmax", -1))),),
        inputs=(InputWire("transpose", 0), InputWire("get_center_coordinates_and_sizes/transpose", 0)),
        outputs=(OutputWire("transpose_1"),),
    )
