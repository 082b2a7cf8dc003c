"""How a scope match is explained, for every scope pass (built-in or a user rule): the census of each
fused scope against the rule, what the fused op computes, and the wiring (passes/explain.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fuselens.core.graph import Graph, TensorRef
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.base import Match
from fuselens.passes.explain import NOT_KERNELS, display_number, internal_tensors, saved_nodes, sum_known
from fuselens.passes.scope.features import NodeOpTypeFeature, ScopeContext
from fuselens.passes.scope.rule import InputWire, OutputWire, ScopeRule
from fuselens.passes.scope.scope_tree import ScopeTree


def explain_scope(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None, rule: ScopeRule,
                  fused_formula: Sequence[str], tree: ScopeTree) -> dict[str, Any]:
    """The census of each fused scope against the rule's features, the fused op's formula and wiring.

    `tree` is `before`'s scope tree (one per graph, not one per match); `fused_formula` what the fused
    op computes (empty: the rule's op type names it)."""
    context = ScopeContext(before, {})
    census = []
    for sub_type, scope_name in match.bindings.items():
        if scope_name not in tree:
            continue
        scope = tree[scope_name]
        variants = [p for p in rule.patterns if p.sub_type == sub_type]
        pattern = next((p for p in variants if not p.failures(scope, context)), variants[0] if variants else None)
        rows = []
        for feature in pattern.features if pattern else ():
            if isinstance(feature, NodeOpTypeFeature):
                found = scope.op_count(feature.op_type)
                rows.append({"op": feature.op_type, "found": found, "needs": feature.wanted(),
                             "rule": f"NodeOpTypeFeature({feature.op_type!r}, {feature.num}"
                                     + (f", step={feature.step})" if feature.step else ")"),
                             "ok": feature.check(scope, context) is None})
            else:
                what, found, needs = feature.census_row(scope, context)
                rows.append({"op": "", "found": found, "needs": needs, "rule": what,
                             "ok": feature.check(scope, context) is None})
        census.append({"scope": scope_name, "sub_type": sub_type, "features": rows,
                       "all_ops": dict(sorted(scope.census.items()))})
    wiring = {"inputs": [], "outputs": []}
    inside = set(match.nodes)
    for i, text in enumerate(match.details["inputs"]):
        ref = TensorRef.parse(text)
        readers = [c.node for c in before.consumers(ref.node, ref.port) if c.node in inside]
        wiring["inputs"].append({"index": i, "tensor": text, "inner": readers[:3],
                                 "rule": _wire_name(rule.inputs, i)})
    for k, text in enumerate(match.details["outputs"]):
        wiring["outputs"].append({"index": k, "tensor": text, "rule": _wire_name(rule.outputs, k)})
    attrs = match.details.get("attrs", {})
    formula = list(fused_formula) or [f"{rule.op_type}: the scope's ops as one op"]
    epsilon = _scope_epsilon(before, match.nodes)
    if "begin_norm_axis" in attrs:
        formula.append(f"axes = [begin_norm_axis = {attrs['begin_norm_axis']} ..]: the statistics run over the "
                       f"last axes; γ, β cover axes from begin_params_axis = {attrs.get('begin_params_axis')}")
    saved = saved_nodes(before, after, match, rewrite)
    outputs = {TensorRef.parse(t) for t in match.details["outputs"]}
    intermediates = internal_tensors(before, [n for n in match.nodes if before.op(n) not in NOT_KERNELS], outputs)
    scopes = ", ".join(match.bindings.values())
    return {"family": "scope", "kind": "scope", "title": f"{len(match.nodes)} nodes of {scopes} -> one {rule.op_type}",
            "op_type": rule.op_type, "formula": formula, "attrs": attrs,
            "epsilon": epsilon, "census": census, "wiring": wiring,
            "saved": {**saved, "intermediates": intermediates,
                      "intermediate_bytes": sum_known(i["bytes"] for i in intermediates)}}


def _wire_name(wires: tuple[InputWire, ...] | tuple[OutputWire, ...], index: int) -> str:
    if index >= len(wires):
        return ""
    wire = wires[index]
    port = getattr(wire, "input", None)
    return f"{wire.node}" + (f" input {port}" if port is not None else "") + \
        (f" output {wire.port}" if getattr(wire, "port", 0) else "")


def _scope_epsilon(graph: Graph, nodes: Iterable[str]) -> float | None:
    """The ε a norm scope adds to the variance: the scalar constant of its `add` before the Rsqrt."""
    for name in nodes:
        if graph.op(name) == "Rsqrt":
            add = graph.input_node(name, 0)
            for ref in graph.inputs(add):
                value = graph.const_value(ref.node)
                if value is not None and value.size == 1:
                    return display_number(value.reshape(()))
    return None
