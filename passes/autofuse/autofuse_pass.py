"""AutoFusePass: elementwise, broadcast, reduce and concat chains into one XLA-compiled kernel.

The grouping (grouping.py) decides the kernels; each becomes one `AscBackend` call node
named like the toolchain's kernel (`autofuse_pointwise_0_Abs_Relu_Exp`), whose library
function holds the original ops and carries `_XlaMustCompile=true`, so TensorFlow on CPU or
GPU runs it as one XLA kernel. Switches come from `options["autofuse_flags"]`: an
AUTOFUSE_FLAGS string or parsed AutofuseFlags (default: AutoFuse on, reduce and concat off).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.graph import Graph, GraphEditor, TensorRef
from core.graph.provenance import Rewrite
from passes.autofuse.flags import AutofuseFlags, as_autofuse_flags
from passes.autofuse.grouping import group_graph
from passes.base import FusionPass, Match, NearMiss, PassResult
from passes.fused import fuse_subgraph
from passes.registry import register

FUSED_OP_TYPE = "AscBackend"


@register
class AutoFusePass(FusionPass):
    id = "AutoFusePass"
    family = "autofuse"
    title = "AutoFuse: vector ops into one kernel"
    description = ("Groups memory-bound ops (elementwise, broadcast; reduce and concat when enabled in "
                   "AUTOFUSE_FLAGS) into kernels of at most max_fusion_size ops and 8 inputs; a reduce ends its "
                   "kernel and takes at most 3 elementwise producers. Each kernel becomes one AscBackend node "
                   "named autofuse_<category>_<n>_<OpType>_..., compiled by XLA on CPU/GPU.")
    default_enabled = True
    order = 10

    @property
    def flags(self) -> AutofuseFlags:
        return as_autofuse_flags(self.options.get("autofuse_flags"))

    def candidates(self, graph: Graph) -> Iterable[Match | NearMiss]:
        grouping = group_graph(graph, self.flags)
        for group in grouping.groups:
            yield Match(
                self.id, group.ops[-1], group.nodes, tuple(ref.node for ref in group.outputs),
                f"{group.name}: {len(group.ops)} ops into one {FUSED_OP_TYPE} kernel",
                details={"kernel": group.name, "category": group.category, "ops": list(group.ops),
                         "op_types": list(group.op_types), "constants": list(group.constants),
                         "inputs": [str(r) for r in group.inputs], "outputs": [str(r) for r in group.outputs]},
            )
        for refusal in grouping.refusals:
            yield NearMiss(self.id, refusal.anchor, refusal.nodes, refusal.reason)

    def apply(self, graph: Graph) -> tuple[Graph, PassResult]:
        self._moved: dict[str, TensorRef] = {}  # tensor of an already fused kernel -> its call node output
        return super().apply(graph)

    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        """One call node; inputs produced by a kernel fused earlier in this pass read its call node."""
        details = match.details
        outputs = [TensorRef.parse(r) for r in details["outputs"]]
        call = fuse_subgraph(
            graph, editor, name=details["kernel"], nodes=match.nodes,
            inputs=[TensorRef.parse(r) for r in details["inputs"]],
            outputs=outputs, pass_id=self.id, op_type=FUSED_OP_TYPE, xla=True,
        )
        for index, text in enumerate(editor.node(call).input):
            moved = self._moved.get(text)
            if moved is not None:
                editor.set_input(call, index, moved)
        self._moved.update({str(out): TensorRef(call, k) for k, out in enumerate(outputs)})
        return Rewrite(self.id, match.index, removed=match.nodes, created=(call,))
