"""GroupConvBatchnormFusionPass: Split + N x Conv2D + ConcatV2/Concat (channel axis) + BN, folded per branch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fuselens.core.graph import Graph, GraphEditor, TensorRef
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.amct.explain import BN_FORMULA, bn_statistics, explain_bn_fold
from fuselens.passes.amct.folding import (
    BN_TYPES,
    AmctPass,
    Chain,
    bn_affine,
    bn_checks,
    constant_value,
    find_chain,
    fold_details,
    fold_into_chain,
    fold_refusal,
    non_constant,
    out_channels,
    preview,
    replace_node,
)
from fuselens.passes.amct.sources import AMCT_DOC
from fuselens.passes.base import Culprit, Match, NearMiss, Reason
from fuselens.passes.registry import register
from fuselens.passes.switch import AMCT, ToolchainSwitch

SPLIT_TYPES = frozenset({"Split", "SplitV"})
CONCAT_TYPES = frozenset({"ConcatV2", "Concat"})


@dataclass(frozen=True)
class GroupConv:
    bn: str
    concat: str
    first_value_slot: int  # ConcatV2 lists the values first, Concat (v1) after the axis
    branches: tuple[Chain, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        return (*(n for chain in self.branches for n in chain.nodes), self.concat, self.bn)


def _values_and_axis(graph: Graph, concat: str) -> tuple[list[TensorRef], str, int]:
    inputs = graph.inputs(concat)
    if graph.op(concat) == "ConcatV2":
        return inputs[:-1], inputs[-1].node, 0
    return inputs[1:], inputs[0].node, 1


@register
class GroupConvBatchnormFusionPass(AmctPass):
    id = "GroupConvBatchnormFusionPass"
    title = "Group conv (Split + N x Conv2D + Concat) + BatchNorm -> BN folded per branch"
    description = ("A group convolution written as Split + N x Conv2D (each optionally + BiasAdd) + ConcatV2/Concat "
                   "on the channel axis, followed by an inference FusedBatchNorm/V2/V3. Branch k produces the "
                   "channels [c_k, c_k + n_k) of the concat, so the BatchNorm's per-channel s = gamma / "
                   "sqrt(var + eps) and b' = (b - mean) * s + beta are sliced and folded into each branch's filter "
                   "and a BiasAdd; the concat then reads the BiasAdds and the BatchNorm is deleted.")
    order = 20
    switch = ToolchainSwitch(AMCT, ("Group_conv+BN fusion",), sources=(AMCT_DOC,))

    def candidates(self, graph: Graph) -> Iterable[Match | NearMiss]:
        bn_types = BN_TYPES.split("|")
        for bn in graph.with_op(bn_types):
            if graph.op(graph.input_node(bn, 0)) not in CONCAT_TYPES:
                continue
            concat = graph.input_node(bn, 0)
            values, axis_node, first_slot = _values_and_axis(graph, concat)
            found = [find_chain(graph, v.node, ("Conv2D",)) for v in values]
            if not any(chain for chain, _ in found):
                continue  # a concat of non-convs: not a group conv at all
            bad = next((i for i, (chain, _) in enumerate(found) if chain is None), None)
            if bad is not None:
                branch = values[bad].node
                yield NearMiss(self.id, bn, (concat, bn), f"input {bad} of {concat} is not a Conv2D branch: "
                               f"{found[bad][1]}", Culprit((branch,), (branch, concat)))
                continue
            group = GroupConv(bn, concat, first_slot, tuple(chain for chain, _ in found))
            reason = self._refusal(graph, group, values, axis_node)
            if reason:
                yield NearMiss(self.id, bn, group.nodes, reason)
                continue
            affine = bn_affine(graph, bn)
            if not affine.finite():
                yield NearMiss(self.id, bn, group.nodes, f"folding {bn} gives NaN or Inf (variance + epsilon <= 0)",
                               Culprit((graph.input_node(bn, 4),)))
                continue
            parts, start = [], 0
            for chain in group.branches:
                stop = start + out_channels(graph, chain)
                parts.append((chain, start, stop))
                start = stop
            reason = next(filter(None, (fold_refusal(graph, chain, affine.part(start, stop), bn)
                                        for chain, start, stop in parts)), None)
            if reason:
                yield NearMiss(self.id, bn, group.nodes, reason)
                continue
            branches = [{**fold_details(graph, chain, affine.part(start, stop)), "channel_range": [start, stop]}
                        for chain, start, stop in parts]
            yield Match(self.id, bn, group.nodes, (bn,),
                        f"fold {bn} into the {len(group.branches)} branches of {concat}",
                        bindings={"bn": bn, "concat": concat, "split": graph.input_node(group.branches[0].op, 0)},
                        details={"epsilon": preview(affine.epsilon), "channels": affine.channels(),
                                 "groups": len(group.branches), "branches": branches},
                        weights=tuple(w for chain in group.branches for w in chain.weights))

    @staticmethod
    def _refusal(graph: Graph, group: GroupConv, values: list[TensorRef], axis_node: str) -> Reason | None:
        sources = {graph.input_node(chain.op, 0) for chain in group.branches}
        split = next(iter(sources))
        if len(sources) != 1 or graph.op(split) not in SPLIT_TYPES:
            return Reason(f"the branches of {group.concat} do not all read one Split, so this is not a group conv",
                          *sorted(sources))
        second = next((v for v in values if v.port != 0), None)
        if second is not None:
            return Reason(f"{group.concat} reads a second output of a branch", second.node,
                          edge=(second.node, group.concat))
        formats = {graph.attr(chain.op, "data_format", "NHWC") for chain in group.branches}
        formats.add(graph.attr(group.bn, "data_format", "NHWC"))
        if len(formats) != 1:
            return Reason(f"the branches of {group.concat} and {group.bn} mix data formats",
                          *(chain.op for chain in group.branches), group.bn)
        channel_axis = 3 if formats.pop() == "NHWC" else 1
        axis = constant_value(graph, axis_node)
        if axis is None:
            return Reason(f"the concat axis {axis_node} ({graph.op(axis_node)}) is not a constant", axis_node,
                          edge=(axis_node, group.concat))
        if int(axis) % 4 != channel_axis:
            return Reason(f"{group.concat} concatenates on axis {int(axis)}, not the channel axis {channel_axis}: "
                          f"{group.bn}'s channels do not line up with the branches' output channels", group.concat)
        reason = bn_checks(graph, group.bn)
        for chain in group.branches:
            reason = reason or non_constant(graph, chain.weight_roles(), chain.nodes)
        if reason:
            return reason
        channels = sum(out_channels(graph, chain) for chain in group.branches)
        params = constant_value(graph, graph.input_node(group.bn, 1)).size
        if channels != params:
            return Reason(f"the branches of {group.concat} give {channels} channels but {group.bn} normalises "
                          f"{params}", group.concat, group.bn)
        return None

    def rewrite(self, graph: Graph, editor: GraphEditor, found: Match) -> Rewrite:
        bn, concat = found.anchor, found.bindings["concat"]
        values, _, first_slot = _values_and_axis(graph, concat)
        affine = bn_affine(graph, bn)
        modified, created, start = [], [], 0
        for slot, value in enumerate(values, start=first_slot):
            chain, _ = find_chain(graph, value.node, ("Conv2D",))
            assert chain is not None  # candidates() checked every branch
            stop = start + out_channels(graph, chain)
            done = fold_into_chain(graph, editor, chain, affine.part(start, stop))
            start = stop
            modified += done.modified
            created += done.created
            if done.output != chain.output:
                editor.set_input(concat, slot, TensorRef(done.output))
        removed, kept = replace_node(graph, editor, bn, concat)
        return Rewrite(self.id, found.index, removed=removed, modified=(*modified, concat, *kept),
                       created=tuple(created))

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                channel: int = 0) -> dict[str, Any]:
        """The fold worked out in the branch that produces `channel`."""
        affine, values, channel = bn_statistics(before, match.bindings["bn"], channel)
        branches = match.details["branches"]
        branch = next(b for b in branches if b["channel_range"][0] <= channel < b["channel_range"][1])
        local = channel - branch["channel_range"][0]
        chain = {"op": branch["op"], "filter": branch["filter"],
                 "bias_add": None if branch["bias_add"] == "(new BiasAdd)" else branch["bias_add"]}
        chain["bias"] = before.input_node(chain["bias_add"], 1) if chain["bias_add"] else None
        formula = [*BN_FORMULA, f"branch k owns channels [c_k, c_k + n_k) of the concat: s, μ, β are sliced "
                                f"per branch ({len(branches)} branches)"]
        explained = explain_bn_fold(before, after, match, rewrite, kind="group_conv_bn", formula=formula, chain=chain,
                                    ops=[b["op"] for b in branches], channel=channel, local=local, affine=affine,
                                    values=values)
        explained["example"].update({"branch_op": chain["op"], "branch_channel": local})
        return explained
