"""DecodeBboxV2ScopeFusionPass: the object-detection API's box decoding under a `Decode` scope -> DecodeBboxV2.

The id is the name the CANN scope-fusion reference enables (`--enable_scope_fusion_passes=DecodeBboxV2ScopeFusionPass`,
registered by Ascend/samples' DecodeBboxV2 scope pass); the built-in ops package registers the same rule as
ScopeDecodeBboxV2Pass, FuseLens's earlier id, which stays an alias. passes/toolchain.py lists both for the toolchain.
"""

from __future__ import annotations

from passes.registry import register
from passes.scope.features import NodeOpTypeFeature, ScopeFeature, ScopePattern
from passes.scope.scope_pass import InputWire, OutputWire, ScopeRule, ScopeRulePass


@register
class DecodeBboxV2ScopeFusionPass(ScopeRulePass):
    id = "DecodeBboxV2ScopeFusionPass"
    aliases = ("ScopeDecodeBboxV2Pass",)
    title = "Decode scope -> DecodeBboxV2"
    description = ("A scope named Decode with Exp 2, Mul 4, Sub 4, an even number of RealDiv, Unpack 2, Pack 1, "
                   "Transpose 3 and no Softmax (counted with its sub-scopes) becomes DecodeBboxV2(box_encodings, "
                   "anchors): inputs of `transpose` and `get_center_coordinates_and_sizes/transpose`, "
                   "output `transpose_1`.")
    default_enabled = False
    order = 50
    rule = ScopeRule(
        "DecodeBboxV2ScopeFusionPass", "DecodeBboxV2",
        (ScopePattern("DecodeBboxV2", (
            ScopeFeature(suffix="Decode"), NodeOpTypeFeature("Exp", 2), NodeOpTypeFeature("Mul", 4),
            NodeOpTypeFeature("Sub", 4), NodeOpTypeFeature("RealDiv", 0, 2), NodeOpTypeFeature("Unpack", 2),
            NodeOpTypeFeature("Pack", 1), NodeOpTypeFeature("Transpose", 3), NodeOpTypeFeature("Softmax", -1))),),
        inputs=(InputWire("transpose", 0), InputWire("get_center_coordinates_and_sizes/transpose", 0)),
        outputs=(OutputWire("transpose_1"),),
    )
