"""The fused node's contract: the attributes a pass writes on it and what they tell a reader.

A fusion without a native TF op becomes one call node of a library function (see
`passes/fused.py`, which builds it). Layout, profiles, properties and runs only read these
attributes, so the names live here, in core, where every reader can import them.
"""

from __future__ import annotations

from dataclasses import dataclass

FUSION_PASS_ATTR = "_fusion_pass"  # the pass id that made the node
FUSED_OP_TYPE_ATTR = "_fused_op_type"  # the toolchain op it stands for: LayerNorm, AscBackend, ...
FUSED_NODES_ATTR = "_fused_nodes"  # the original node names it replaced
XLA_MUST_COMPILE_ATTR = "_XlaMustCompile"  # one XLA kernel on CPU/GPU


@dataclass(frozen=True)
class FusedInfo:
    """What a fused call node says about itself."""

    pass_id: str
    op_type: str
    nodes: tuple[str, ...]
    function: str  # the library function it calls (its op)
    xla: bool
