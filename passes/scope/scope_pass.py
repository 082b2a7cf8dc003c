"""Scope fusion as the TF parser does it: patterns pick scopes, a pass pairs them and wires one op.

A `ScopeRule` is the declarative part (what the toolchain's DefinePatterns, LastMatchScopesAndOPs
and GenerateFusionResult say); `ScopeRulePass` runs any rule, so the built-in passes and the
user's rule files share one engine:

1. For each sub type, in order, scopes are tested top down (a matching scope is taken and its
   sub-scopes are not searched further); a scope whose last name is the pattern's suffix but
   which fails a check is a near miss with every failed check in words.
2. Scopes of the rule's last sub type are fused one by one, or, with `pair`, together with a
   sibling scope of the partner sub type (LayerNorm: `X/batchnorm` + `X/moments`).
3. The fused op's inputs and outputs come from named inner nodes (InsertInputs / InsertOutputs);
   every other value read from outside must be one of those inputs, or the scope is refused.

The fused node is the one of docs/architecture.md: a call of a library function whose body is every node under
the fused scopes, so TensorFlow still runs the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from fuselens.core.graph import Graph, GraphEditor, TensorRef
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.base import Culprit, FusionPass, Match, NearMiss, Reason
from fuselens.passes.fused import fuse_subgraph
from fuselens.passes.registry import catalog
from fuselens.passes.scope import scope_tree
from fuselens.passes.scope.explain import explain_scope
from fuselens.passes.scope.features import ScopeContext, ScopePattern
from fuselens.passes.scope.rule import InputWire, OutputWire, ScopeRule
from fuselens.passes.scope.scope_tree import Scope, ScopeTree


class _Refused(Exception):
    """A group of scopes that matched but cannot be wired; the message is the near-miss reason (a
    Reason when a node or edge is at fault)."""


class ScopeRulePass(FusionPass):
    """Runs `rule`. Subclasses set the catalog metadata and may add attrs (`fused_attrs`)."""

    family = "scope"
    rule: ClassVar[ScopeRule]
    # What the fused op computes, one line each (its explanation); a rule without one borrows that of a
    # built-in pass fusing into the same op type.
    fused_formula: ClassVar[tuple[str, ...]] = ()

    # ---- matching --------------------------------------------------------------------------
    def candidates(self, graph: Graph) -> Iterator[Match | NearMiss]:
        return self.candidates_in(graph, ScopeTree(graph))

    def candidates_in(self, graph: Graph, tree: ScopeTree) -> Iterator[Match | NearMiss]:
        """candidates() over a scope tree of the graph already built."""
        read = self.variable_read(tree)
        if read is not None:
            yield from self._refused_as_tf2(tree, *read)
            return
        context = ScopeContext(graph, {})
        matched: dict[str, list[Scope]] = {}
        for sub_type in self.rule.sub_types:
            matched[sub_type] = []
            variants = [p for p in self.rule.patterns if p.sub_type == sub_type]
            yield from self._match_top_down(tree, sub_type, variants, context, matched[sub_type])
        for group in self._groups(matched):
            if isinstance(group, NearMiss):
                yield group
                continue
            try:
                yield self._match_group(graph, group)
            except _Refused as refused:
                yield NearMiss(self.id, _fused_name(group), _nodes_of(graph, group), refused.args[0])

    def variable_read(self, tree: ScopeTree) -> tuple[Scope, str] | None:
        """The first scope and node that mark a TF 2.x graph for the rule (see ScopeRule.variable_read_scope)."""
        marker = self.rule.variable_read_scope
        if marker is None:
            return None
        read = f"{marker.rpartition('/')[2]}/ReadVariableOp"
        for scope in tree.scopes.values():
            if marker in scope.name:
                node = next((n for n in scope.all_nodes() if read in n), None)
                if node is not None:
                    return scope, node
        return None

    def _refused_as_tf2(self, tree: ScopeTree, scope: Scope, node: str) -> Iterator[NearMiss]:
        """The toolchain's pass returns FAILED on the first such scope: no scope of the graph is fused."""
        reason = Reason(f"a TF 2.x graph: {node} reads a weight through a ReadVariableOp inside {scope.name}, and "
                        f"the toolchain's {self.id} then fuses no scope of the whole graph (its source: \"tf2.x can "
                        f"not do scope fusion\")", node)
        for candidate in tree.scopes.values():
            if candidate.last_name == self.rule.fused_sub_type:
                yield NearMiss(self.id, candidate.name, tuple(candidate.all_nodes()), reason)

    def _match_top_down(self, tree: ScopeTree, sub_type: str, variants: Sequence[ScopePattern],
                        context: ScopeContext, found: list[Scope]) -> Iterator[NearMiss]:
        stack = list(reversed(tree.root.children.values()))
        while stack:
            scope = stack.pop()
            # A pattern with a suffix fails every scope of another last name and says nothing about it:
            # checking only the others keeps a big graph's scopes from collecting reasons nobody reads.
            failures = [(p, p.failures(scope, context)) for p in variants if not p.suffix or p.names_scope(scope)]
            if any(not reasons for _, reasons in failures):
                context.sub_types[scope.name] = sub_type
                found.append(scope)
                continue
            named = [reasons for p, reasons in failures if p.names_scope(scope)]
            if named:
                closest = min(named, key=len)
                at_fault = (n for r in closest if isinstance(r, Reason) for n in r.culprit.nodes)
                yield NearMiss(self.id, scope.name, tuple(scope.all_nodes()),
                               f"{sub_type} scope does not match the pattern: {'; '.join(closest)}",
                               Culprit(tuple(dict.fromkeys(at_fault))))
            stack.extend(reversed(scope.children.values()))

    def _groups(self, matched: Mapping[str, list[Scope]]) -> Iterator[tuple[Scope, ...] | NearMiss]:
        if self.rule.pair is None:
            yield from ((s,) for s in matched[self.rule.fused_sub_type])
            return
        first, second = self.rule.pair
        partners = list(matched[second])
        for scope in matched[first]:
            partner = next((p for p in partners if p.parent is scope.parent), None)
            if partner is None:
                yield NearMiss(self.id, scope.name, tuple(scope.all_nodes()), self._unpaired(scope, first, second))
                continue
            partners.remove(partner)
            yield scope, partner

    def _unpaired(self, scope: Scope, first: str, second: str) -> Reason:
        """The sibling that did not match is at fault; with no sibling at all, the structure is."""
        suffixes = {p.suffix for p in self.rule.patterns if p.sub_type == second}
        siblings = [s for s in (scope.parent.children.values() if scope.parent else ()) if s.last_name in suffixes]
        if siblings:
            return Reason(f"its sibling {siblings[0].name} does not match the {second} pattern (see its near miss)",
                          *siblings[0].all_nodes())
        return Reason(f"a {first} scope without a sibling {second} scope{self.rule.unpaired_hint}")

    def _match_group(self, graph: Graph, group: tuple[Scope, ...]) -> Match:
        for scope in group:
            for word in self.rule.skip_names:
                if word in scope.name:
                    raise _Refused(f"the name {scope.name} contains {word!r}; {self.id} never fuses such a scope")
        name = _fused_name(group)
        nodes = _nodes_of(graph, group)
        inside = set(nodes)
        inputs = [self._wire_input(graph, name, nodes, inside, wire) for wire in self.rule.inputs]
        outputs = [_wire_output(graph, name, nodes, wire) for wire in self.rule.outputs]
        _check_all_inputs_wired(graph, nodes, inside, inputs)
        attrs = {**self.rule.attrs, **self.fused_attrs(graph, group, inputs)}
        summary = (f"{', '.join(s.name for s in group)} ({len(nodes)} nodes) -> {self.rule.op_type} {name} "
                   f"({len(inputs)} inputs, {len(outputs)} outputs)")
        return Match(
            self.id, name, tuple(nodes), tuple(dict.fromkeys(o.node for o in outputs)), summary,
            bindings=dict(zip(self.rule.pair or (self.rule.fused_sub_type,), (s.name for s in group))),
            details={"op_type": self.rule.op_type, "fused_name": name, "scopes": [s.name for s in group],
                     "inputs": [str(r) for r in inputs], "outputs": [str(r) for r in outputs], "attrs": attrs},
        )

    @staticmethod
    def _wire_input(graph: Graph, name: str, nodes: Sequence[str], inside: set[str], wire: InputWire) -> TensorRef:
        node = _resolve(wire.node, name, nodes)
        refs = graph.inputs(node)
        if wire.input is None:
            outside = [r for r in refs if r.node not in inside]
            if len(outside) != 1:
                raise _Refused(Reason(f"{node} has {len(outside)} inputs from outside the scope; the wiring needs "
                                      "exactly 1", node))
            return outside[0]
        if wire.input >= len(refs):
            raise _Refused(Reason(f"{node} has {len(refs)} inputs; the wiring reads input {wire.input}", node))
        ref = refs[wire.input]
        if ref.node in inside:
            raise _Refused(Reason(f"input {wire.input} of {node} comes from {ref.node} inside the scope; "
                                  "a fused input must come from outside", ref.node, edge=(ref.node, node)))
        return ref

    def fused_attrs(self, graph: Graph, group: tuple[Scope, ...], inputs: Sequence[TensorRef]) -> dict[str, Any]:
        """Attrs computed from the matched graph (LayerNorm: begin_norm_axis); none by default."""
        return {}

    # ---- rewriting -------------------------------------------------------------------------
    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        details = match.details
        call = fuse_subgraph(
            graph, editor, name=details["fused_name"], nodes=match.nodes,
            inputs=[TensorRef.parse(r) for r in details["inputs"]],
            outputs=[TensorRef.parse(r) for r in details["outputs"]],
            pass_id=self.id, op_type=self.rule.op_type, attrs=op_attrs(details["attrs"]),
        )
        return Rewrite(self.id, match.index, removed=match.nodes, created=(call,))


    # ---- explaining --------------------------------------------------------------------------
    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
        return cls.explainer(before, after)(match, rewrite)

    @classmethod
    def explainer(cls, before: Graph, after: Graph) -> Callable[[Match, Rewrite | None], dict[str, Any]]:
        """Every match of a run is explained from one scope tree of `before`, built for the first."""
        formula = cls.fused_op_formula()
        trees: list[ScopeTree] = []

        def explain(match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
            if not trees:
                trees.append(scope_tree.ScopeTree(before))
            return explain_scope(before, after, match, rewrite, cls.rule, formula, trees[0])

        return explain

    @classmethod
    def fused_op_formula(cls) -> tuple[str, ...]:
        """This pass's `fused_formula`, else that of a built-in scope pass fusing into the same op type (a
        user rule fusing Keras 3's LayerNorm layout into LayerNorm explains it as LayerNorm)."""
        if cls.fused_formula:
            return cls.fused_formula
        return next((c.fused_formula for c in catalog() if issubclass(c, ScopeRulePass) and c.fused_formula
                     and c.rule.op_type == cls.rule.op_type), ())


def op_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The fused op's attrs as stored on the call node: `_`-prefixed, since TensorFlow refuses
    (and logs an error for) unknown attrs on a function call, but ignores `_` ones."""
    return {f"_{key}": value for key, value in attrs.items()}


def _fused_name(group: tuple[Scope, ...]) -> str:
    """The toolchain's fused op name: the scope itself, or for a pair the prefix they share."""
    parent = group[0].parent
    return parent.name if len(group) > 1 and parent is not None and parent.name else group[0].name


def _nodes_of(graph: Graph, group: Iterable[Scope]) -> tuple[str, ...]:
    """Every node under the scopes, in graph order (the fused function's body)."""
    inside = {n for scope in group for n in scope.all_nodes()}
    return tuple(n for n in graph.nodes if n in inside)


def _resolve(wire_node: str, fused_name: str, nodes: Sequence[str]) -> str:
    """The inner node a wiring entry names: `<fused name>/<wire>`, else the one node ending in `/<wire>`."""
    exact = f"{fused_name}/{wire_node}" if fused_name else wire_node
    if exact in nodes:
        return exact
    found = [n for n in nodes if n.endswith("/" + wire_node)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise _Refused(f"no inner node {wire_node} to wire (looked for {exact})")
    raise _Refused(f"the wiring name {wire_node} fits {len(found)} inner nodes ({', '.join(found[:3])})")


def _wire_output(graph: Graph, fused_name: str, nodes: Sequence[str], wire: OutputWire) -> TensorRef:
    node = _resolve(wire.node, fused_name, nodes)
    known = graph.node(node).attr["_output_shapes"].list.shape if "_output_shapes" in graph.node(node).attr else None
    if known is not None and wire.port >= len(known):
        raise _Refused(Reason(f"{node} has {len(known)} outputs; the wiring reads output {wire.port}", node))
    return TensorRef(node, wire.port)


def _check_all_inputs_wired(graph: Graph, nodes: Sequence[str], inside: set[str],
                            inputs: Sequence[TensorRef]) -> None:
    wired = set(inputs)
    if len(wired) < len(inputs):
        twice = next(r for r in inputs if inputs.count(r) > 1)
        raise _Refused(Reason(f"{twice} is wired to more than one fused input", twice.node))
    for node in nodes:
        for ref in graph.inputs(node):
            if ref.node not in inside and ref not in wired:
                raise _Refused(Reason(f"{node} reads {ref} from outside the scope, and no fused input is wired to it",
                                      ref.node, edge=(ref.node, node)))
