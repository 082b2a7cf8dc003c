"""AutoFusePass: elementwise, broadcast, reduce and concat chains into one XLA-compiled kernel.

The grouping (grouping.py) decides the kernels; each becomes one `AscBackend` call node
named like the toolchain's kernel (`autofuse_pointwise_0_Abs_Relu_Exp`), whose library
function holds the original ops and carries `_XlaMustCompile=true`, so TensorFlow on CPU or
GPU runs it as one XLA kernel. Switches come from `options["autofuse_flags"]`: an
AUTOFUSE_FLAGS string or parsed AutofuseFlags (default: AutoFuse on, reduce and concat off).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fuselens.core.graph import Graph, GraphEditor, TensorRef
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.autofuse.flags import AutofuseFlags, as_autofuse_flags
from fuselens.passes.autofuse.grouping import group_graph
from fuselens.passes.autofuse.op_classes import classify
from fuselens.passes.base import FusionPass, Match, NearMiss, PassResult
from fuselens.passes.explain import internal_tensors, sum_known, tensor_bytes
from fuselens.passes.fused import fuse_subgraph
from fuselens.passes.registry import register
from fuselens.passes.switch import AUTOFUSE, ToolchainSwitch

FUSED_OP_TYPE = "AscBackend"
_AUTOFUSE_CONFIG = ("hicann/ge compiler/graph/optimize/autofuse/autofuse/utils/auto_fuse_config.h (AUTOFUSE_FLAGS "
                    "--enable_autofuse, --autofuse_enable_pass/--autofuse_disable_pass for concat, reduce, slice, "
                    "split, transpose, gather, matmul, conv; AUTOFUSE_DFX_FLAGS --skip_node_names_cfg, [ByNodeName])")
CATEGORY_WHY = {
    "pointwise": "every op is elementwise (or a broadcast of one shape onto another): the kernel is one loop "
                 "over the output, each element computed from the same element of its inputs",
    "reduce": "the kernel ends in a reduce (a reduce is always the tail of its kernel; at most 3 elementwise "
              "producers fuse into it); switched on by --autofuse_enable_pass=reduce",
    "concat": "the kernel holds a concat, which writes each input into its slice of the output; switched on "
              "by --autofuse_enable_pass=concat",
}


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
    switch = ToolchainSwitch(
        AUTOFUSE, ("--enable_autofuse", "--autofuse_enable_pass", "--max_fusion_size"),
        note="pointwise and broadcast fuse whenever AutoFuse is on; only the opt-in kinds can be disabled",
        sources=(_AUTOFUSE_CONFIG,))

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

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
        """The kernel's ops, category, the tensors it keeps out of memory, bytes moved and its name."""
        d = match.details
        ops = [{"node": op, "op": before.op(op), "ascend_op": t, "class": classify(before, op)}
               for op, t in zip(d["ops"], d["op_types"])]
        outputs = {TensorRef.parse(t) for t in d["outputs"]}
        intermediates = internal_tensors(before, list(d["ops"]), outputs)
        moved_before = sum_known(_op_traffic(before, op) for op in d["ops"])
        external = [TensorRef.parse(t) for t in d["inputs"]]
        moved_after = sum_known(tensor_bytes(before, r) for r in [*external, *outputs])
        after_nodes = [n for n in (rewrite.after if rewrite else ()) if n in after]
        saved = {"ops_before": list(d["ops"]), "ops_after": after_nodes,
                 "launches_before": len(ops), "launches_after": 1, "launches_saved": len(ops) - 1}
        _, _, rest = d["kernel"].partition(f"autofuse_{d['category']}_")
        counter = rest.split("_", 1)[0]
        return {"family": "autofuse", "kind": "autofuse", "title": f"{len(ops)} ops -> one kernel {d['kernel']}",
                "ops": ops, "category": d["category"], "why": CATEGORY_WHY.get(d["category"], ""),
                "intermediates": intermediates,
                "intermediate_bytes": sum_known(i["bytes"] for i in intermediates),
                "bytes_moved_before": moved_before, "bytes_moved_after": moved_after,
                "name": {"kernel": d["kernel"], "parts": ["autofuse", d["category"], counter, *d["op_types"]],
                         "rule": "\"autofuse_\" + category + \"_\" + n + (\"_\" + OpType)* in kernel order, "
                                 "Ascend op spelling (AddV2 -> Add, Sum -> ReduceSumD), cut to 140 characters; "
                                 f"n = {counter}: this is kernel #{counter} of its category in the graph"},
                "saved": saved}


def _op_traffic(graph: Graph, op: str) -> int | None:
    """Bytes one op moves when it runs alone: every data input read, every output read by someone written."""
    refs = [r for r in graph.inputs(op) if not r.control]
    reads = [tensor_bytes(graph, r) for r in refs if not graph.is_const(r.node) or _is_tensor_input(graph, r)]
    ports = sorted({c.port for c in graph.consumers(op)}) or [0]
    writes = [tensor_bytes(graph, TensorRef(op, p)) for p in ports]
    return sum_known([*reads, *writes])


def _is_tensor_input(graph: Graph, ref: TensorRef) -> bool:
    """A constant operand larger than a scalar is still read from memory."""
    value = graph.const_value(ref.node)
    return value is not None and value.size > 1
