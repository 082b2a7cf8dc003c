"""GE's pattern matcher, on a FuseLens graph, with its failures as data.

GE matches a pattern from its outputs: every graph node of output 0's op type is a start (a
"coordinate"), in graph order; from it the pattern is walked towards its inputs, pairing each pattern
node with the graph node at the same place. A pattern node matches when:
* it is a graph input (Data): any tensor (the same graph node each time the input is used);
* it is a constant: the graph node is a Const, and with `enable_const_value_match` the values are
  equal (shape, data type and bytes);
* otherwise: the op types are equal (the graph's as GE's TF parser names them), and with
  `enable_ir_attr_match` every IR attribute is equal (unset ones at their defaults);
  and it has exactly as many data inputs as the pattern node, each from the same output index
  (an input from a Data pattern node may come from any output).
A full match is then refused by GE's matcher (it is no match) when an inner node (not one of the
pattern's outputs) is read outside the match: the boundary must be self-contained.

Where the walk fails, `Partial` names the pattern node that did not bind, the graph node it met and
why: the answer to "why does my pattern not match here".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuselens.core.graph import Graph, TensorRef
from fuselens.passes.ge_python.api.builder import Pattern, PatternNode
from fuselens.passes.ge_python.api.hooks import PatternMatcherConfig
from fuselens.passes.ge_python.optable import CONST_TYPES, node_attr_name, node_type


@dataclass
class Found:
    """A full match: the graph node of each non-input pattern node, the tensor of each pattern input (by
    input index), the tensor of each pattern output (in order) and the captured tensors."""

    pattern: Pattern
    coordinate: str
    nodes: dict[str, str]  # pattern label -> graph node, non-input pattern nodes
    inputs: dict[int, TensorRef]
    outputs: list[TensorRef]
    captured: list[tuple[str, int]]

    def matched(self, graph: Graph) -> list[str]:
        """The graph nodes of the match, inputs excluded, in graph order (GE's get_matched_nodes)."""
        return graph.in_graph_order(dict.fromkeys(self.nodes.values()))


@dataclass
class Partial:
    """A walk from a coordinate that failed: the pattern node that did not bind, the graph node it met
    (None when an input is missing), why, the pattern nodes bound so far and the edge at fault."""

    coordinate: str
    pattern_node: str
    graph_node: str | None
    reason: str
    bound: dict[str, str] = field(default_factory=dict)
    edge: tuple[str, str] | None = None


class _Walk:
    """One attempt: pattern node -> graph node bindings, and the failure if any."""

    def __init__(self, graph: Graph, config: PatternMatcherConfig):
        self.graph, self.config = graph, config
        self.bound: dict[int, tuple[PatternNode, str, int]] = {}  # id(pattern node) -> (node, graph node, port)
        self.failure: Partial | None = None

    def copy(self) -> _Walk:
        walk = _Walk(self.graph, self.config)
        walk.bound = dict(self.bound)
        return walk

    def fail(self, coordinate: str, node: PatternNode, graph_node: str | None, reason: str,
             reader: str | None = None) -> bool:
        edge = (graph_node, reader) if graph_node is not None and reader is not None else None
        self.failure = Partial(coordinate, node.label, graph_node, reason, self.labels(), edge)
        return False

    def labels(self) -> dict[str, str]:
        return {p.label: name for p, name, _ in self.bound.values()}

    def branch(self, coordinate: str, out: PatternNode, out_port: int, start: str) -> bool:
        """Walk from the pattern tensor (out, out_port) paired with graph tensor (start, out_port)."""
        queue: deque[tuple[PatternNode, str, int, str | None, str | None]] = deque(
            [(out, start, out_port, None, None)])
        while queue:
            p_node, t_node, t_port, reader, reader_label = queue.popleft()
            earlier = self.bound.get(id(p_node))
            if earlier is not None and earlier[1] != t_node:
                return self.fail(coordinate, p_node, t_node, f"{p_node.label} is already bound to {earlier[1]}; "
                                 f"here it would be {t_node}", reader)
            reason = self.node_mismatch(p_node, t_node)
            if reason:
                where = f" (input of {reader_label})" if reader_label else ""
                return self.fail(coordinate, p_node, t_node, f"pattern node {p_node.label}{where}: {reason}", reader)
            self.bound[id(p_node)] = (p_node, t_node, t_port)
            if p_node.is_data:
                continue
            t_inputs = [ref for ref in self.graph.inputs(t_node) if not ref.control]
            if len(t_inputs) != len(p_node.inputs):
                return self.fail(coordinate, p_node, t_node,
                                 f"pattern node {p_node.label}: {t_node} has {len(t_inputs)} data inputs, the pattern "
                                 f"node has {len(p_node.inputs)}", reader)
            for slot, (p_in, t_in) in enumerate(zip(p_node.inputs, t_inputs)):
                if not p_in.node.is_data and p_in.index != t_in.port:
                    return self.fail(coordinate, p_in.node, t_in.node,
                                     f"pattern node {p_in.node.label} (input {slot} of {p_node.label}): {t_node} reads "
                                     f"output {t_in.port} of {t_in.node}, the pattern reads output {p_in.index}",
                                     t_node)
                queue.append((p_in.node, t_in.node, t_in.port, t_node, f"{p_node.label}, slot {slot}"))
        return True

    def node_mismatch(self, p_node: PatternNode, t_node: str) -> str:
        """Why `t_node` cannot be `p_node` ("" when it can)."""
        graph = self.graph
        op = graph.op_type(t_node)
        if p_node.is_data:
            return ""
        if p_node.is_const:
            if op not in CONST_TYPES:
                return f"{t_node} is {node_type(graph, t_node)}, the pattern needs a Const"
            if self.config.const_value_match and p_node.value is not None:
                return _value_mismatch(p_node.value, graph.const_value(t_node), t_node)
            return ""
        found = "Const" if op in CONST_TYPES else node_type(graph, t_node)
        if found != p_node.op_type:
            renamed = f" (TensorFlow's {op})" if op != found else ""
            return f"{t_node} is {found}{renamed}, the pattern needs {p_node.op_type}"
        if self.config.ir_attr_match:
            for key, wanted in p_node.ir_attrs().items():
                if key.startswith("_"):
                    continue
                have = graph.attr(t_node, node_attr_name(graph, p_node.op_type, key), _default(p_node, key))
                if not _same_attr(have, wanted):
                    return f"{t_node}'s {key} is {have!r}, the pattern needs {wanted!r} (IR attribute match is on)"
        return ""


def _default(p_node: PatternNode, key: str) -> Any:
    return p_node.spec.attrs.get(key) if p_node.spec else None


def _same_attr(have: Any, wanted: Any) -> bool:
    if isinstance(have, (list, tuple)) or isinstance(wanted, (list, tuple)):
        return list(have or []) == list(wanted or [])
    if isinstance(wanted, bool) or isinstance(have, bool):
        return bool(have) == bool(wanted)
    return have == wanted


def _value_mismatch(wanted: np.ndarray, have: np.ndarray | None, t_node: str) -> str:
    if have is None:
        return f"{t_node} has no readable value (constant value match is on)"
    if have.shape != wanted.shape or have.dtype != wanted.dtype or have.tobytes() != wanted.tobytes():
        return (f"{t_node} holds {_shown(have)}, the pattern's constant is {_shown(wanted)} (constant value match "
                f"compares shape, data type and bytes)")
    return ""


def _shown(value: np.ndarray) -> str:
    text = " ".join(np.array2string(value, threshold=6).split())
    return f"{text} ({value.dtype}, shape {list(value.shape)})"


def pattern_outputs(pattern: Pattern) -> list[tuple[PatternNode, int]]:
    return [(t.node, t.index) for t in pattern.graph.outputs]


def check_pattern(pattern: Pattern) -> str:
    """Why GE would refuse this pattern ("" when it is valid)."""
    outputs = pattern_outputs(pattern)
    if not outputs:
        return f"pattern {pattern.graph.name} has no output"
    if outputs[0][0].is_data or outputs[0][0].is_const:
        return f"pattern {pattern.graph.name}: its first output is a {outputs[0][0].op_type}, not an op"
    return ""


def coordinates(graph: Graph, pattern: Pattern) -> list[str]:
    """Graph nodes of the op type of the pattern's first output, in graph order."""
    wanted = pattern_outputs(pattern)[0][0].op_type
    return [name for name in graph.nodes if node_type(graph, name) == wanted]


def match_at(graph: Graph, pattern: Pattern, config: PatternMatcherConfig, coordinate: str) -> Found | Partial:
    """The pattern matched with its first output at `coordinate`: a Found, or the Partial that says why not."""
    outputs = pattern_outputs(pattern)
    walk = _Walk(graph, config)
    if not walk.branch(coordinate, outputs[0][0], outputs[0][1], coordinate):
        assert walk.failure is not None
        return walk.failure
    done = _remaining(graph, walk, outputs, 1, coordinate)
    if isinstance(done, Partial):
        return done
    found = _found(graph, pattern, coordinate, done)
    leak = _leak(graph, found, {t.node for t in found.outputs})
    return leak or found


def _remaining(graph: Graph, walk: _Walk, outputs: list[tuple[PatternNode, int]], index: int,
               coordinate: str) -> _Walk | Partial:
    """Outputs 1.. of a multi-output pattern: each tried at every graph node of its type, backtracking."""
    if index == len(outputs):
        return walk
    node, port = outputs[index]
    last: Partial | None = None
    for candidate in (n for n in graph.nodes if node_type(graph, n) == node.op_type):
        trial = walk.copy()
        if trial.branch(coordinate, node, port, candidate):
            done = _remaining(graph, trial, outputs, index + 1, coordinate)
            if isinstance(done, _Walk):
                return done
            last = done
        else:
            last = trial.failure
    return last or Partial(coordinate, node.label, None, f"no graph node of type {node.op_type} for pattern output "
                           f"{index} ({node.label})", walk.labels())


def _found(graph: Graph, pattern: Pattern, coordinate: str, walk: _Walk) -> Found:
    by_id = walk.bound
    nodes = {p.label: name for p, name, _ in by_id.values() if not p.is_data}
    inputs = {p.index: TensorRef(name, port) for p, name, port in by_id.values() if p.is_data}
    outputs = [TensorRef(by_id[id(node)][1], port) for node, port in pattern_outputs(pattern)]
    captured = []
    for node, port in pattern.captured:
        bound = by_id.get(id(node))
        if bound is not None:
            captured.append((bound[1], bound[2] if node.is_data else port))
    return Found(pattern, coordinate, nodes, inputs, outputs, captured)


def _leak(graph: Graph, found: Found, output_nodes: set[str]) -> Partial | None:
    """An inner node read outside the match makes GE's matcher drop it (the boundary is not self-contained)."""
    inside = set(found.nodes.values())
    for label, name in found.nodes.items():
        if name in output_nodes:
            continue
        outside = [c for c in dict.fromkeys(graph.consumer_nodes(name)) if c not in inside]
        if outside:
            return Partial(found.coordinate, label, name,
                           f"{name} (pattern node {label}) is also read by {outside[0]} outside the match; only the "
                           "pattern's outputs may be read outside, so GE's matcher skips it",
                           {**found.nodes}, (name, outside[0]))
    return None


def iter_partials(graph: Graph, pattern: Pattern, config: PatternMatcherConfig) -> Iterator[Found | Partial]:
    """Every coordinate's outcome on a graph that does not change (a dry look, `py-pass check`)."""
    for coordinate in coordinates(graph, pattern):
        yield match_at(graph, pattern, config, coordinate)
