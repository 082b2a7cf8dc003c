"""ScopeClipBoxesPass: Faster R-CNN's `clip_boxes` scope fuses into ClipBoxes when enabled."""

from __future__ import annotations

from fuselens.passes.registry import default_pass_ids
from fuselens.passes.scope.clip_boxes import ScopeClipBoxesPass
from tests.passes.scope_check import assert_same_outputs, fused_calls

CLIP = "fastrcnn/clip_boxes"


def test_clip_boxes_fuses_with_boxes_and_image_shape_inputs(load_sample):
    assert "ScopeClipBoxesPass" not in default_pass_ids()
    original = load_sample("clip_boxes")
    fused, result = ScopeClipBoxesPass().apply(original)
    (match,) = result.matches
    assert match.details["inputs"] == ["boxes", "image_shape"]
    assert match.details["outputs"] == [f"{CLIP}/fastrcnn_all_boxes"]
    (call,) = fused_calls(fused, "ClipBoxes")
    assert call.name == CLIP
    assert_same_outputs(original, fused, seed=3)


def test_a_clip_boxes_scope_with_a_forbidden_op_is_a_near_miss(load_sample):
    graph = load_sample("clip_boxes")
    editor = graph.editor()
    editor.mutable(f"{CLIP}/Tile").op = "Squeeze"
    result = ScopeClipBoxesPass().dry_run(editor.build(validate=False))
    assert not result.matches
    assert result.near_misses[0].reason == ("ClipBoxes scope does not match the pattern: Tile: found none, "
                                            "pattern needs 1; Squeeze: found 1, pattern needs none")
