"""Pass = pattern + check + rewrite. The engine here owns what every fusion must respect.

A subclass yields `Match` and `NearMiss` records from `candidates()` and edits a copy-on-write
editor in `rewrite()`. The base class applies the safety checks any fusion needs, so no pass
repeats them (and no pass can forget one):

* intermediates: a node the rewrite removes must not be read outside the match;
* shared weights: a constant the rewrite folds must not be read outside the match;
* no cycle after contracting the match into one node;
* overlapping matches: first wins, the later one becomes a NearMiss naming the winner.

Passes return new graphs; the graph they receive is never modified.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fuselens.core.graph import FORWARDING_OPS, Graph, GraphEditor, TensorRef
from fuselens.core.graph.edges import input_edge
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.switch import NO_SWITCH, ToolchainSwitch

# Near misses a printed summary lists per pass (passes.report); the others are counted.
SHOWN_NEAR_MISSES = 5


def interned(names: Iterable[str]) -> tuple[str, ...]:
    """Node names as the graph's own string objects (sys.intern): a name read from a NodeDef is a new
    string each time, and a big graph's matches and near misses hold tens of thousands of names."""
    return tuple(map(sys.intern, names))


@dataclass(slots=True)  # slots: a big graph has thousands of matches (no per-instance dict)
class Match:
    """A structure the pass will rewrite."""

    pass_id: str
    anchor: str  # the node the match is named after (the BN, the scope, the last op of a chain)
    nodes: tuple[str, ...]  # every node the rewrite removes or changes
    outputs: tuple[str, ...]  # nodes of `nodes` whose outputs are read outside the match
    summary: str  # one line: what the rewrite will do
    bindings: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)  # JSON-able: folded values, wiring, ...
    weights: tuple[str, ...] = ()  # constants (or their Identity reads) whose values get folded
    index: int = -1  # position in the pass's match list, set by the engine
    # The match explained with its own numbers (passes/explain.py), set once the pass has run.
    explanation: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.anchor, self.nodes = sys.intern(self.anchor), interned(self.nodes)
        self.outputs, self.weights = interned(self.outputs), interned(self.weights)
        self.bindings = {role: sys.intern(name) for role, name in self.bindings.items()}

    @property
    def id(self) -> str:
        """The stable match id (`PassId:anchor`) that reports, skip lists and bisect use."""
        return match_id(self.pass_id, self.anchor)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "index": self.index, "anchor": self.anchor, "nodes": list(self.nodes),
                "outputs": list(self.outputs), "summary": self.summary, "bindings": self.bindings,
                "details": self.details, "weights": list(self.weights),
                **({"explanation": self.explanation} if self.explanation is not None else {})}


@dataclass(frozen=True, slots=True)
class Culprit:
    """What broke a near miss, on the graph: the nodes at fault and, when the failure is an edge (an
    intermediate read outside the match, a cycle, a non-constant input), that edge as (producer,
    reader). Neither: something is missing (a count of none, an absent sibling scope), so the
    structure as a whole is at fault."""

    nodes: tuple[str, ...] = ()
    edge: tuple[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes), "edge": list(self.edge) if self.edge else None}


class Reason(str):
    """A refusal in words that carries its Culprit, so checks written as `a(...) or b(...)` still
    return one value; a NearMiss built from it keeps the culprit and the plain text."""

    culprit: Culprit

    def __new__(cls, text: str, *nodes: str, edge: tuple[str, str] | None = None) -> Reason:
        reason = super().__new__(cls, text)
        reason.culprit = Culprit(tuple(dict.fromkeys(nodes)), edge)
        return reason


def reading_edge(graph: Graph, node: str, readers: Iterable[str] = ()) -> tuple[str, str] | None:
    """The edge from `node` to its first reader among `readers` (the structure's nodes), else to its first reader."""
    consumers = graph.consumer_nodes(node)
    wanted = set(readers)
    reader = next((c for c in consumers if c in wanted), consumers[0] if consumers else None)
    return None if reader is None else (node, reader)


@dataclass(slots=True)
class NearMiss:
    """A structure that looks like the pattern but fails a condition, with the reason in words.

    `reason` may be a `Reason`: its culprit becomes this near miss's (the "why not" drawn on the graph).
    """

    pass_id: str
    anchor: str
    nodes: tuple[str, ...]
    reason: str
    culprit: Culprit = field(default_factory=Culprit)
    bindings: dict[str, str] = field(default_factory=dict)  # role -> node, when the pattern got that far

    def __post_init__(self) -> None:
        self.anchor, self.nodes = sys.intern(self.anchor), interned(self.nodes)
        self.bindings = {role: sys.intern(name) for role, name in self.bindings.items()}
        if isinstance(self.reason, Reason):
            if self.culprit == Culprit():
                self.culprit = self.reason.culprit
            self.reason = str(self.reason)

    def to_json(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "nodes": list(self.nodes), "reason": self.reason,
                "culprit": self.culprit.to_json(), **({"bindings": self.bindings} if self.bindings else {})}


def match_id(pass_id: str, anchor: str) -> str:
    return f"{pass_id}:{anchor}"


@dataclass
class PassResult:
    """What one pass did: matches rewritten, near misses, matches the user skipped, and errors
    (a pass or a match that raised; its input graph went on unchanged, see `FusionPass.apply`)."""

    pass_id: str
    matches: list[Match] = field(default_factory=list)
    near_misses: list[NearMiss] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    skipped: list[Match] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # Once drop_details() ran: how many matches, near misses and skipped matches there were.
    dropped: tuple[int, int, int] | None = None

    @property
    def detailed(self) -> bool:
        return self.dropped is None

    @property
    def match_count(self) -> int:
        return len(self.matches) if self.dropped is None else self.dropped[0]

    @property
    def near_miss_count(self) -> int:
        return len(self.near_misses) if self.dropped is None else self.dropped[1]

    @property
    def skipped_count(self) -> int:
        return len(self.skipped) if self.dropped is None else self.dropped[2]

    def drop_details(self) -> None:
        """Keep what a reader that counts needs (`fuse`'s printed summary and its ledger): the counts,
        the first SHOWN_NEAR_MISSES near misses (anchor and reason) and the errors. The matches, the
        other near misses and the rewrites go: on a 20k-node graph they take megabytes."""
        self.dropped = (len(self.matches), len(self.near_misses), len(self.skipped))
        self.near_misses = [NearMiss(near.pass_id, near.anchor, (), near.reason)
                            for near in self.near_misses[:SHOWN_NEAR_MISSES]]
        self.matches, self.skipped, self.rewrites = [], [], []

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.pass_id, "matches": [m.to_json() for m in self.matches],
                "near_misses": [n.to_json() for n in self.near_misses],
                "skipped": [m.to_json() for m in self.skipped], "errors": list(self.errors),
                "rewrites": [r.to_json() for r in self.rewrites], "seconds": round(self.seconds, 6)}


class FusionPass:
    """Base of every pass. Subclasses set the metadata and implement candidates() and rewrite()."""

    id: ClassVar[str]
    family: ClassVar[str]  # "scope" | "amct" | "autofuse"
    title: ClassVar[str]
    description: ClassVar[str]  # one paragraph with the structure or formula
    general: ClassVar[bool] = False  # general passes are always on and cannot be switched off
    default_enabled: ClassVar[bool] = True
    order: ClassVar[int] = 100  # order inside the family (toolchain registration order)
    # Earlier FuseLens ids of this pass: saved configurations, switch files and scope lists that
    # name it so still load (PassConfig resolves them with a one-line notice).
    aliases: ClassVar[tuple[str, ...]] = ()
    # Ops a weight is seen through (Graph.const_chain): what counts as a constant for this pass.
    constant_through: ClassVar[frozenset[str]] = FORWARDING_OPS
    # What switches this pass in the Ascend toolchain (passes/switch.py). Declared by the class itself,
    # never inherited: a subclass with an id of its own is a pass the toolchain does not know.
    switch: ClassVar[ToolchainSwitch] = NO_SWITCH

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "switch" not in cls.__dict__:
            cls.switch = NO_SWITCH

    def __init__(self, options: Mapping[str, Any] | None = None):
        self.options = dict(options or {})

    # ---- what a subclass writes ------------------------------------------------------------
    def candidates(self, graph: Graph) -> Iterable[Match | NearMiss]:
        """Pattern + check: yield a Match per structure to rewrite, a NearMiss per refusal."""
        raise NotImplementedError

    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        """Edit `editor` for one match; return what was removed, modified and created."""
        raise NotImplementedError

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
        """One match explained with its own numbers (passes/explain.py), from the graph the pass saw
        (`before`), the one it produced and the match's rewrite (None when it was not rewritten)."""
        return {"family": cls.family, "kind": "other", "title": match.summary}

    @classmethod
    def explainer(cls, before: Graph, after: Graph) -> Callable[[Match, Rewrite | None], dict[str, Any]]:
        """`explain` for every match of one run of the pass; a pass whose explanations share work
        between matches (a scope tree of `before`) does it here, once."""
        return lambda match, rewrite: cls.explain(before, after, match, rewrite)

    def is_constant(self, graph: Graph, name: str) -> bool:
        """What counts as a weight here (pruned once unread); a pass widens it with `constant_through`."""
        return graph.is_const(name, through=self.constant_through)

    # ---- the engine ------------------------------------------------------------------------
    def dry_run(self, graph: Graph) -> PassResult:
        """Matches and near misses, after the safety checks; the graph is not changed."""
        start = time.perf_counter()
        result = PassResult(self.id)
        claimed: dict[str, Match] = {}
        for found in self.candidates(graph):
            if isinstance(found, NearMiss):
                result.near_misses.append(found)
                continue
            reason = self._overlap(found, claimed) or self._leaks(graph, found) or self._shared_weight(graph, found)
            if reason is None and len(found.nodes) > 1:
                reason = self._cycle(graph, found)
            if reason is not None:
                result.near_misses.append(NearMiss(self.id, found.anchor, found.nodes, reason, bindings=found.bindings))
                continue
            if found.id in self.options.get("skipped_matches", ()):
                result.skipped.append(found)  # the user keeps it out; its nodes stay as they are
                continue
            found.index = len(result.matches)
            result.matches.append(found)
            claimed.update(dict.fromkeys(found.nodes, found))
        result.seconds = time.perf_counter() - start
        return result

    def apply(self, graph: Graph) -> tuple[Graph, PassResult]:
        """A new graph with every match rewritten, and the result with one Rewrite per match.

        A match whose rewrite raises fails alone: it becomes an error of the result ("X failed on
        node N: ...") and the pass is applied again without it, so its nodes stay as they were.
        """
        result = self.dry_run(graph)
        start = time.perf_counter()
        while result.matches:
            editor, result.rewrites = graph.editor(), []
            culprit: Match | None = None
            try:
                for culprit in result.matches:
                    result.rewrites.append(self.rewrite(graph, editor, culprit))
                culprit = None  # past the matches: a failure now is the whole pass's
                pruned = prune_dead_constants(graph, editor, self.is_constant)
                if pruned:
                    result.rewrites.append(Rewrite(self.id, -1, removed=tuple(pruned)))
                new_graph = editor.build()
            except Exception as e:  # a pass bug must not take the pipeline down
                if culprit is None:
                    raise
                result.errors.append(f"{self.id} failed on {culprit.anchor}: {describe_error(e)}; left as it was")
                result.matches.remove(culprit)
                for index, match in enumerate(result.matches):
                    match.index = index
                continue
            result.seconds += time.perf_counter() - start
            return new_graph, result
        result.seconds += time.perf_counter() - start
        return graph, result

    # ---- safety checks (each returns a reason, or None when safe) ---------------------------
    @staticmethod
    def _overlap(found: Match, claimed: Mapping[str, Match]) -> str | None:
        for node in found.nodes:
            winner = claimed.get(node)
            if winner is not None:
                return Reason(f"overlaps match #{winner.index} ({winner.summary}) on {node}; the first match wins",
                              node)
        return None

    @staticmethod
    def _leaks(graph: Graph, found: Match) -> str | None:
        """An intermediate read outside the match. A control edge on a constant read (a frozen Keras
        graph's NoOp waits on every ReadVariableOp) only orders a read, so it is no reader here."""
        inside = set(found.nodes)
        for node in found.nodes:
            if node in found.outputs:
                continue
            readers = [c.node for c in graph.consumers(node)] if graph.is_const(node) else graph.consumer_nodes(node)
            outside = [c for c in dict.fromkeys(readers) if c not in inside]
            if outside:
                more = f" (+{len(outside) - 1} more)" if len(outside) > 1 else ""
                return Reason(f"{node} ({graph.op(node)}) has {len(outside) + _inside_count(graph, node, inside)} "
                              f"consumers: it is also read by {outside[0]}{more} outside the match",
                              node, edge=(node, outside[0]))
        return None

    def _shared_weight(self, graph: Graph, found: Match) -> str | None:
        inside = set(found.nodes)
        for weight in found.weights:
            chain = graph.const_chain(weight, through=self.constant_through) or [weight]
            allowed = inside | set(chain)
            for node in chain:  # data readers only: a control edge (Keras' frozen NoOp) reads no value
                outside = [c.node for c in graph.consumers(node) if c.node not in allowed]
                if outside:
                    return Reason(f"weight {weight} is shared with {outside[0]} outside the match; "
                                  "folding it would change that node too", weight, edge=(node, outside[0]))
        return None

    @staticmethod
    def _cycle(graph: Graph, found: Match) -> str | None:
        path = graph.contraction_cycle(found.nodes)
        if path is None:
            return None
        return Reason(f"fusing would create a cycle through {path[2]}, which is outside the match",
                      path[2], edge=(path[0], path[1]))


def describe_error(error: Exception) -> str:
    """An exception as one line for a report: its type and its first line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def _inside_count(graph: Graph, node: str, inside: set[str]) -> int:
    return sum(1 for c in graph.consumer_nodes(node) if c in inside)


def prune_dead_constants(graph: Graph, editor: GraphEditor,
                         is_constant: Callable[[Graph, str], bool] = Graph.is_const) -> list[str]:
    """Remove Const / Identity(Const) nodes whose value nothing reads any more after this edit.

    A control edge to such a node (a frozen Keras graph's NoOp waits on every ReadVariableOp)
    only ordered a read that no longer happens, so it goes with the node.

    The readers of the nodes the edit left alone are counted from the source graph's edge index; only the
    nodes it changed or added are decoded (decoding every node and parsing every input made this a second
    at each AMCT pass on a 100k-node graph).
    """
    edited = editor.edited()
    unchanged_reads = graph.data_read_counts(skipped_readers=[*edited, *editor.removed()])
    all_reads = graph.data_read_counts()
    refs: dict[str, list[tuple[str, bool]]] = {}  # (producer, control) of each input

    def inputs(name: str) -> list[tuple[str, bool]]:
        found = refs.get(name)
        if found is None:
            if name in edited_set:
                found = [input_edge(text) for text in editor.node(name).input]
            else:
                found = graph.input_edges(name)
            refs[name] = found
        return found

    edited_set = set(edited)
    edited_reads: dict[str, int] = defaultdict(int)  # reads by the edited nodes, on top of unchanged_reads
    for name in edited:
        for producer, control in inputs(name):
            edited_reads[producer] += not control

    def unread_weight(name: str) -> bool:
        i = graph.node_id(name)
        return i is not None and name in editor and not unchanged_reads[i] + edited_reads[name] \
            and bool(all_reads[i]) and is_constant(graph, name)

    dead: set[str] = set()
    names = graph.node_names(np.flatnonzero((unchanged_reads[:len(graph)] == 0) & (all_reads[:len(graph)] > 0)))
    stack = [name for name in names if unread_weight(name)]
    while stack:  # a dead Identity may leave its Const unread in turn
        name = stack.pop()
        if name in dead:
            continue
        dead.add(name)
        for producer, control in inputs(name):
            edited_reads[producer] -= not control
            if unread_weight(producer):
                stack.append(producer)
    waiting = {reader for name in dead for reader in graph.control_consumers(name) if reader not in edited_set}
    waiting.update(name for name in edited if any(control and producer in dead for producer, control in inputs(name)))
    for name in editor.in_edit_order(waiting - dead):
        kept = [str(ref) for ref in map(TensorRef.parse, editor.node(name).input)
                if not (ref.control and ref.node in dead)]
        del editor.mutable(name).input[:]
        editor.mutable(name).input.extend(kept)
    pruned = editor.in_edit_order(dead)
    editor.remove(*dead)
    return pruned
