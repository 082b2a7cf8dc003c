"""Op-type tree patterns over a Graph, read like the graph they match.

    BN = Op("FusedBatchNorm|FusedBatchNormV2|FusedBatchNormV3", "bn", [
            Op("BiasAdd", "bias", [Op("Conv2D", "conv", [ANY, Const("filter")]), Const("b")], optional=True),
            Const("gamma"), Const("beta"), Const("mean"), Const("var")])

A pattern is matched from its root (the last op of the structure) towards the inputs. The
result is either bindings (name -> node) or a failure that says, in words, which node did
not fit and why; failures are data, so a pass can turn the best one into a NearMiss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fuselens.core.graph import Graph
from fuselens.passes.base import Reason


class Pattern:
    name: str | None

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Op(Pattern):
    """A node whose op is one of `types` ('A|B', '*' for any); its first data inputs match `inputs`.

    `optional=True`: when the node does not have one of `types`, the pattern is skipped and its
    first input pattern is tried on the same node (an optional BiasAdd between conv and BN).
    """

    types: str
    name: str | None = None
    inputs: Sequence[Pattern] | None = None
    optional: bool = False

    @property
    def op_set(self) -> frozenset[str]:
        return frozenset(self.types.split("|"))

    def accepts(self, op: str) -> bool:
        return self.types == "*" or op in self.op_set

    def describe(self) -> str:
        return self.types.replace("|", " or ") if self.types != "*" else "any op"


@dataclass(frozen=True)
class Const(Pattern):
    """A constant, possibly behind Identity (a frozen ReadVariableOp)."""

    name: str | None = None

    def describe(self) -> str:
        return "a constant"


ANY = Op("*")


@dataclass
class MatchResult:
    """Bindings when `ok`; otherwise `reason` and the `nodes` at fault (the failure is data)."""

    bindings: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    nodes: list[str] = field(default_factory=list)
    edge: tuple[str, str] | None = None  # (the node at fault, the pattern node that reads it)
    depth: int = 0  # how far the match got before failing: the deepest failure is the best near miss

    @property
    def ok(self) -> bool:
        return not self.reason

    @property
    def refusal(self) -> Reason:
        """The failure as a Reason with its culprit (empty when the match is ok)."""
        return Reason(self.reason, *self.nodes, edge=self.edge)

    def fail(self, reason: str, *nodes: str) -> MatchResult:
        self.reason = reason
        self.nodes = list(nodes)
        return self


def match(graph: Graph, pattern: Pattern, node: str) -> MatchResult:
    """Match `pattern` with its root at `node`."""
    result = MatchResult()
    _match(graph, pattern, node, result)
    return result


def _match(graph: Graph, pattern: Pattern, node: str, result: MatchResult) -> bool:
    if isinstance(pattern, Const):
        if not graph.is_const(node):
            result.fail(f"{node} ({graph.op(node)}) is not a constant", node)
            return False
        return _bind(pattern, node, result)
    assert isinstance(pattern, Op)
    op = graph.op(node)
    if not pattern.accepts(op):
        if pattern.optional and pattern.inputs:
            return _match(graph, pattern.inputs[0], node, result)
        result.fail(f"{node} is {op}, the pattern needs {pattern.describe()}", node)
        return False
    if not _bind(pattern, node, result):
        return False
    result.depth += 1
    if pattern.inputs is None:
        return True
    inputs = graph.input_nodes(node)
    if len(inputs) < len(pattern.inputs):
        result.fail(f"{node} has {len(inputs)} inputs, the pattern needs {len(pattern.inputs)}", node)
        return False
    for sub, producer in zip(pattern.inputs, inputs):
        if sub is ANY:
            continue
        if not _match(graph, sub, producer, result):
            if result.edge is None and producer in result.nodes:  # the input that did not fit, and where it goes
                result.edge = (producer, node)
            return False
    return True


def _bind(pattern: Pattern, node: str, result: MatchResult) -> bool:
    if pattern.name is None:
        return True
    bound = result.bindings.get(pattern.name)
    if bound is not None and bound != node:
        result.fail(f"{pattern.name} would be both {bound} and {node}", bound, node)
        return False
    result.bindings[pattern.name] = node
    return True
