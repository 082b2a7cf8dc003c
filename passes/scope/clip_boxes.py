"""ScopeClipBoxesPass: Faster R-CNN's `clip_boxes` scope (Maximum, ReverseV2, Tile, Minimum) -> ClipBoxes."""

from __future__ import annotations

from fuselens.passes.registry import register
from fuselens.passes.scope.features import NodeOpTypeFeature, ScopeFeature, ScopePattern
from fuselens.passes.scope.rule import InputWire, OutputWire, ScopeRule
from fuselens.passes.scope.scope_pass import ScopeRulePass
from fuselens.passes.switch import BUILTIN_SCOPE_SOURCE, SCOPE, ToolchainSwitch

_ABSENT = ("Gather", "TopKV2", "Split", "Greater", "Squeeze")


@register
class ScopeClipBoxesPass(ScopeRulePass):
    id = "ScopeClipBoxesPass"
    title = "clip_boxes scope -> ClipBoxes"
    description = ("A scope named clip_boxes with one each of Minimum, Maximum, Tile and ReverseV2 and none of "
                   "Gather, TopKV2, Split, Greater, Squeeze becomes ClipBoxes(boxes, image_shape): boxes = input 0 "
                   "of clip_boxes/Maximum, image_shape = input 0 of clip_boxes/ReverseV2; output "
                   "clip_boxes/fastrcnn_all_boxes.")
    default_enabled = False
    order = 40
    rule = ScopeRule(
        "ScopeClipBoxesPass", "ClipBoxes",
        (ScopePattern("ClipBoxes", (
            ScopeFeature(suffix="clip_boxes"),
            *(NodeOpTypeFeature(op, 1) for op in ("Minimum", "Maximum", "Tile", "ReverseV2")),
            *(NodeOpTypeFeature(op, -1) for op in _ABSENT))),),
        inputs=(InputWire("clip_boxes/Maximum", 0), InputWire("clip_boxes/ReverseV2", 0)),
        outputs=(OutputWire("clip_boxes/fastrcnn_all_boxes"),),
    )
    fused_formula = ("boxes = min(max(boxes, 0), [height, width, height, width] of the image)",)
    switch = ToolchainSwitch(SCOPE, ("ScopeClipBoxesPass",),
                             note="registered general in older CANN ops packages, non-general since",
                             sources=(BUILTIN_SCOPE_SOURCE,))
