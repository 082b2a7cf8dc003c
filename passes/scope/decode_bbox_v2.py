"""DecodeBboxV2ScopeFusionPass: the object-detection API's box decoding under a `Decode` scope -> DecodeBboxV2.

The id is the name the CANN scope-fusion reference enables (`--enable_scope_fusion_passes=DecodeBboxV2ScopeFusionPass`,
registered by Ascend/samples' DecodeBboxV2 scope pass); the built-in ops package registers the same rule as
ScopeDecodeBboxV2Pass, FuseLens's earlier id, which stays an alias. Its switch lists both for the toolchain.
"""

from __future__ import annotations

from fuselens.passes.registry import register
from fuselens.passes.scope.features import NodeOpTypeFeature, ScopeFeature, ScopePattern
from fuselens.passes.scope.rule import InputWire, OutputWire, ScopeRule
from fuselens.passes.scope.scope_pass import ScopeRulePass
from fuselens.passes.switch import BUILTIN_SCOPE_SOURCE, SCOPE, ToolchainSwitch

_SAMPLE_DECODE = ("Ascend/samples cplusplus/level1_single_api/4_op_dev/1_custom_op/framework/tf_scope_fusion_pass/"
                  "decode_bbox_v2_scope_fusion_pass.cpp (REGISTER_SCOPE_FUSION_PASS(\"DecodeBboxV2ScopeFusionPass\", "
                  "..., false))")
_SCOPE_DOC = ("https://www.hiascend.com/document/detail/en/TensorFlowCommercial/800/Scopefusionpattern/"
              "tfscopefusionref (enable_scope_fusion_passes; its example enables DecodeBboxV2ScopeFusionPass)")
_UNKNOWN_SCOPE_NAME = ("hicann/ge parser/parser/tensorflow/tensorflow_parser.cc (a listed name no pass registered is "
                       "a warning, 'Failed to set enable flag of scope fusion pass', and is skipped)")


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
    fused_formula = (
        "anchors (y_a, x_a, h_a, w_a); deltas (t_y, t_x, t_h, t_w), each divided by its scale factor",
        "y = t_y · h_a + y_a,  x = t_x · w_a + x_a,  h = exp(t_h) · h_a,  w = exp(t_w) · w_a",
        "boxes = [y − h/2, x − w/2, y + h/2, x + w/2]")
    switch = ToolchainSwitch(
        SCOPE, ("DecodeBboxV2ScopeFusionPass", "ScopeDecodeBboxV2Pass"),
        note="the CANN reference and Ascend/samples register the rule as DecodeBboxV2ScopeFusionPass, the built-in "
             "ops package as ScopeDecodeBboxV2Pass; both names are listed, and the parser skips the one the host "
             "did not register",
        sources=(_SAMPLE_DECODE, BUILTIN_SCOPE_SOURCE, _SCOPE_DOC, _UNKNOWN_SCOPE_NAME))
