"""TF-parser scope fusion: the scope engine, the built-in rules and user rule files.

Importing the package registers the built-in passes in toolchain order.
"""

from passes.scope import clip_boxes, decode_bbox_v2, instance_norm, layer_norm  # noqa: F401  (registers)
