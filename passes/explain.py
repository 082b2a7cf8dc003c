"""Why a match is what it is, with its own numbers: one JSON-able explanation per match.

A teacher points at a match and wants the arithmetic, not a summary line. The explanation is
computed once, where both graphs a pass saw and produced exist (`run_pipeline`, in whatever
process fuses), and travels in the Match record, so a front end without TensorFlow (the window,
the lesson export) only renders it (passes/explain_render.py).

Each pass explains its own matches (`FusionPass.explain`, in the pass's module; what a family's
passes share is in passes/amct/explain.py and passes/scope/explain.py). Here: attaching the
explanations to a pass's result, and the measures every family uses (kernels, launches, tensor
bytes, intermediates). Per family:
* AMCT folds: the formula, the same formula evaluated for one real output channel (values read
  from the graph the pass saw, the folded weight read back from the Const the pass wrote), and
  what the rewrite saved (nodes, kernels, bytes of weights read per inference).
* Scope fusion: the scope's op census against the rule's features, what the fused op computes,
  and which inner node each fused input and output is wired from.
* AutoFuse: the kernel's ops in order, its category and why, the intermediate tensors it no longer
  writes, bytes moved before and after, launches saved, and how the kernel name was formed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from fuselens.core.graph import FORWARDING_OPS, Graph, TensorRef, proto
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.base import FusionPass, Match, PassResult, describe_error

# Ops that are not kernels: weights, reads of weights and shape arguments.
NOT_KERNELS = FORWARDING_OPS | {"Const", "NoOp", "Placeholder"}


# ---- small readers ------------------------------------------------------------------------
def display_number(value: Any) -> float:
    """A value as a float rounded for display (7 significant digits keep float32 exact enough)."""
    return float(f"{float(value):.7g}")


def dtype_size(graph: Graph, name: str) -> int:
    """Bytes per element of a node's output, from its T / dtype attr (4 when the graph does not say)."""
    node = graph.node(name)
    for key in ("T", "dtype", "out_type"):
        if key in node.attr and node.attr[key].type:
            try:
                return proto.np_dtype(node.attr[key].type).itemsize
            except (KeyError, TypeError, ValueError):
                break
    return 4


def tensor_bytes(graph: Graph, ref: TensorRef) -> int | None:
    """Size of one tensor from its static shape; None when a dimension is unknown."""
    shape = graph.output_shape(ref.node, ref.port)
    if shape is None or any(d is None or d < 0 for d in shape):
        return None
    return int(math.prod(shape)) * dtype_size(graph, ref.node)  # no numpy call per tensor (10k on a 20k graph)


def _kernels(graph: Graph, names: Iterable[str]) -> list[str]:
    return [n for n in names if n in graph and graph.op(n) not in NOT_KERNELS]


def saved_nodes(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
    """Ops (constants aside) and kernel launches the match stood for, before and after the rewrite.

    A BiasAdd that reads a conv or MatMul is no launch of its own: on Ascend the cube op takes the
    bias as an input (and AutoFuse or oneDNN take it on CPU), so Conv2D + BiasAdd is one kernel.
    """
    before_nodes = list(rewrite.before) if rewrite else list(match.nodes)
    after_nodes = [n for n in (rewrite.after if rewrite else ()) if n in after]
    ops_before, ops_after = _kernels(before, before_nodes), _kernels(after, after_nodes)
    launches_before = [n for n in ops_before if not _bias_of_cube(before, n)]
    launches_after = [n for n in ops_after if not _bias_of_cube(after, n)]
    return {"ops_before": ops_before, "ops_after": ops_after, "launches_before": len(launches_before),
            "launches_after": len(launches_after), "launches_saved": len(launches_before) - len(launches_after)}


CUBE_OPS = frozenset({"Conv2D", "DepthwiseConv2dNative", "MatMul", "Conv2DBackpropInput"})


def _bias_of_cube(graph: Graph, name: str) -> bool:
    return graph.op(name) == "BiasAdd" and graph.op(graph.input_node(name, 0)) in CUBE_OPS


def internal_tensors(graph: Graph, ops: list[str], outputs: set[TensorRef]) -> list[dict[str, Any]]:
    """Tensors the ops write and only the ops read: with the group fused, they never reach memory."""
    inside = set(ops)
    found = []
    for op in ops:
        ports = sorted({c.port for c in graph.consumers(op)})
        for port in ports:
            ref = TensorRef(op, port)
            readers = [c.node for c in graph.consumers(op, port)]
            if ref in outputs or not readers or any(r not in inside for r in readers):
                continue
            found.append({"tensor": str(ref), "op": graph.op(op), "shape": _shape_list(graph, ref),
                          "bytes": tensor_bytes(graph, ref), "readers": len(readers)})
    return found


def _shape_list(graph: Graph, ref: TensorRef) -> list[int | None] | None:
    shape = graph.output_shape(ref.node, ref.port)
    return None if shape is None else list(shape)


def sum_known(values: Iterable[int | None]) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


# ---- attaching ----------------------------------------------------------------------------
def attach_explanations(before: Graph, after: Graph, result: PassResult, pass_cls: type[FusionPass]) -> None:
    """Set `match.explanation` on every match of the result, as the pass explains it; one that cannot
    be explained says why (an explanation never fails the fusion)."""
    for _ in explain_each(before, after, result, pass_cls):
        pass


def explain_each(before: Graph, after: Graph, result: PassResult, pass_cls: type[FusionPass]) -> Iterator[None]:
    """`attach_explanations` a match a step (the window explains its matches in slices of its own thread)."""
    rewrites = {r.match_index: r for r in reversed(result.rewrites)}  # the first per match, in one pass
    explain = pass_cls.explainer(before, after)
    for match in result.matches:
        try:
            match.explanation = explain(match, rewrites.get(match.index))
        except Exception as e:  # an odd graph must not stop the pipeline
            match.explanation = {"family": getattr(pass_cls, "family", ""), "kind": "unavailable",
                                 "title": match.summary, "error": f"no explanation: {describe_error(e)}"}
        yield
