"""A registered GE Python pass as a FuseLens pass: GE's loop for its kind, GE's counting, FuseLens's records.

A PatternFusionPass runs as GE's `RunPatternFusion` does: pattern by pattern, each graph node of the
pattern's output type in graph order (nodes a replacement creates join the end of that list); for each
full match `match_times` += 1, then `meet_requirements`, then the cycle check, then the replacement is
spliced in at once (the next match sees the changed graph) and `effect_times` += 1. FuseLens records:
* every rewrite as a Match with its Rewrite (provenance, the after pane);
* a match refused by `meet_requirements` as a NearMiss with the pass's `set_error_message` text, or
  "meet_requirements returned False" and the line it returned from; one refused by the cycle check too;
  both count in `match_times`, as in GE;
* a walk that failed (an op type, an edge or an input that does not fit) and a match GE's matcher drops
  (an inner node read outside) as NearMisses naming the pattern node; GE does not count those.
A DecomposePass tries every node of its op types; a FusionBasePass's `run` gets a read-only graph.

The user's exceptions never escape: each is a UserCodeError in the result (and one line of
`PassResult.errors`), and the pass goes on with the next match.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

from fuselens.core.graph import Graph, TensorRef
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.base import Culprit, FusionPass, Match, NearMiss, PassResult
from fuselens.passes.ge_python.api.builder import BuiltGraph, Pattern, create_pattern
from fuselens.passes.ge_python.api.hooks import (
    DECOMPOSE,
    FUSION_BASE,
    MatchResult,
    PassContext,
    PassStage,
    PatternMatcherConfig,
)
from fuselens.passes.ge_python.api.missing import take_asked
from fuselens.passes.ge_python.api.views import Node, TargetGraph
from fuselens.passes.ge_python.loader import PassLoad, RegisteredPass, UserCodeError, user_error
from fuselens.passes.ge_python.matcher import Found, Partial, check_pattern, coordinates, match_at
from fuselens.passes.ge_python.optable import node_type
from fuselens.passes.ge_python.scope import ge_importable
from fuselens.passes.ge_python.splice import ReplacementError, Spliced, splice

FAMILY = "ge_python"
# Where each stage runs in FuseLens's pipeline (scope fusion 0, AMCT 1, these 2, AutoFuse 3) and why:
# GE runs BeforeInferShape, AfterInferShape and AfterBuiltinFusionPass before AutoFuse (which comes after
# precision refinement), AfterOriginGraphOptimize after it; AMCT folds offline, before GE starts.
STAGE_POSITIONS: dict[str, tuple[float, int]] = {
    PassStage.BEFORE_INFER_SHAPE.value: (2, 0),
    PassStage.AFTER_INFER_SHAPE.value: (2, 1),
    PassStage.AFTER_BUILTIN_FUSION_PASS.value: (2, 2),
    PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE.value: (3.5, 3),
}
RETURNED_FALSE = "meet_requirements returned False"


@dataclass
class GePassResult(PassResult):
    """A GE Python pass's result: FuseLens's records plus what GE counts and what the user's code did."""

    match_times: int = 0
    effect_times: int = 0
    user_errors: list[UserCodeError] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # `ge` APIs asked for during the run
    output_map: dict[str, str] = field(default_factory=dict)  # replaced tensor -> the tensor that reads it now
    patterns: list[str] = field(default_factory=list)
    structure_only: list[str] = field(default_factory=list)  # GE-only ops written without a TF equivalent

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "match_times": self.match_times, "effect_times": self.effect_times,
                "user_errors": [e.to_json() for e in self.user_errors], "unsupported": self.unsupported,
                "patterns": self.patterns, "structure_only": self.structure_only}


@dataclass
class _Call:
    value: Any = None
    error: UserCodeError | None = None
    returned_at: int = 0  # the line the user's function returned from
    file: str = ""  # the file of that function


class GePythonPass(FusionPass):
    """Base of the classes made for registered passes (`pass_classes`)."""

    family = FAMILY
    registered: ClassVar[RegisteredPass]
    roots: ClassVar[tuple[str, ...]] = ()
    pipeline_position: ClassVar[float] = 2

    # ---- FusionPass ---------------------------------------------------------------------------
    def dry_run(self, graph: Graph) -> PassResult:
        return self.apply(graph)[1]

    def apply(self, graph: Graph) -> tuple[Graph, PassResult]:
        if self.registered.registration is None:
            raise RuntimeError(f"{self.id} was described by another process and is not loaded in this one: "
                               "run it where its files were loaded")
        start = time.perf_counter()
        result = GePassResult(self.id)
        take_asked()
        with ge_importable():
            kind = self.registered.kind
            if kind == DECOMPOSE:
                graph = self._decompose(graph, result)
            elif kind == FUSION_BASE:
                self._run_whole(graph, result)
            else:
                graph = self._pattern_fusion(graph, result)
        result.unsupported = take_asked()
        result.seconds = time.perf_counter() - start
        return graph, result

    # ---- calling the user's code --------------------------------------------------------------
    def _call(self, result: GePassResult, phase: str, function: Callable[..., Any], *args: Any) -> _Call:
        """Call a hook; its exception becomes a UserCodeError (and an error line) of `result`."""
        code = getattr(inspect.unwrap(function), "__code__", None)
        call = _Call(file=code.co_filename if code is not None else "")

        def watch(frame: FrameType, event: str, arg: Any) -> None:
            if event == "return" and frame.f_code is code:
                call.returned_at = frame.f_lineno

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            call.value = function(*args)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # the user's code
            call.error = user_error(error, phase, self.roots, self.id)
            result.user_errors.append(call.error)
            result.errors.append(f"{self.id}: {call.error.one_line()}")
        finally:
            sys.setprofile(previous)
        return call

    def _instance(self, result: GePassResult) -> Any:
        assert self.registered.registration is not None
        call = self._call(result, "init", self.registered.registration.cls)
        return call.value

    def _context(self) -> PassContext:
        return PassContext(self.id, self.options.get("ge_options"))

    # ---- PatternFusionPass --------------------------------------------------------------------
    def _patterns(self, instance: Any, result: GePassResult) -> list[Pattern]:
        call = self._call(result, "patterns", instance.patterns)
        if call.error is not None:
            return []
        patterns = []
        for item in list(call.value or []):
            pattern = item if isinstance(item, Pattern) else create_pattern(item) if isinstance(item, BuiltGraph) \
                else None
            problem = "patterns() must return Patterns or Graphs" if pattern is None else check_pattern(pattern)
            if problem:
                self._report(result, "patterns", problem)
                continue
            patterns.append(pattern)
        result.patterns = [p.graph.name for p in patterns]
        return patterns

    def _report(self, result: GePassResult, phase: str, problem: str, function: Any = None) -> None:
        """A problem with what the user's code returned (no exception): at the hook's definition."""
        registration = self.registered.registration
        target = inspect.unwrap(function or (registration.cls if registration else None))
        try:
            file, line = inspect.getsourcefile(target) or self.registered.source, inspect.getsourcelines(target)[1]
        except (OSError, TypeError):
            file, line = self.registered.source, self.registered.line
        error = UserCodeError(file, line, phase, problem, problem, self.id, getattr(target, "__name__", ""))
        result.user_errors.append(error)
        result.errors.append(f"{self.id}: {error.one_line()}")

    def _pattern_fusion(self, graph: Graph, result: GePassResult) -> Graph:
        instance = self._instance(result)
        if instance is None:
            return graph
        config = getattr(instance, "matcher_config", None) or PatternMatcherConfig()
        context = self._context()
        for pattern in self._patterns(instance, result):
            sequence = coordinates(graph, pattern)
            listed = set(sequence)
            cursor = 0
            while cursor < len(sequence):
                coordinate = sequence[cursor]
                cursor += 1
                if coordinate not in graph:
                    continue  # replaced by an earlier match
                outcome = match_at(graph, pattern, config, coordinate)
                if isinstance(outcome, Partial):
                    result.near_misses.append(_partial_near_miss(self.id, pattern, outcome))
                    continue
                new_graph = self._one_match(graph, pattern, outcome, instance, context, result)
                if new_graph is not graph:
                    graph = new_graph
                    wanted = pattern.graph.outputs[0].node.op_type
                    fresh = [n for n in graph.nodes if n not in listed and node_type(graph, n) == wanted]
                    sequence += fresh
                    listed.update(fresh)
        return graph

    def _one_match(self, graph: Graph, pattern: Pattern, found: Found, instance: Any, context: PassContext,
                   result: GePassResult) -> Graph:
        """One full match through GE's steps; the new graph when it was replaced, else `graph`."""
        result.match_times += 1
        matched = found.matched(graph)
        bindings = dict(found.nodes)
        match_result = MatchResult(graph, pattern.graph.name, matched, found.captured)
        check = self._call(result, "meet_requirements", instance.meet_requirements, match_result, context)
        message = context.take_message()
        if check.error is not None:
            return graph
        if not check.value:
            result.near_misses.append(NearMiss(self.id, found.coordinate, tuple(matched),
                                               f"{pattern.graph.name}: {_refusal(check, message)}",
                                               Culprit(tuple(matched)),
                                               bindings))
            return graph
        cycle = graph.contraction_cycle(matched) if len(matched) > 1 else None
        if cycle is not None:
            result.near_misses.append(NearMiss(self.id, found.coordinate, tuple(matched),
                                               f"{pattern.graph.name}: fusing would create a cycle through "
                                               f"{cycle[2]}, which is outside the match",
                                               Culprit((cycle[2],), (cycle[0], cycle[1])), bindings))
            return graph
        match = Match(self.id, found.coordinate, tuple(matched), tuple(dict.fromkeys(t.node for t in found.outputs)),
                      "", bindings, {"pattern": pattern.graph.name})
        if match.id in self.options.get("skipped_matches", ()):
            match.summary = f"{pattern.graph.name} at {found.coordinate} (skipped)"
            result.skipped.append(match)
            return graph
        rewritten = self._replace(graph, found, instance, result, match_result, context)
        if rewritten is None:
            return graph
        new_graph, spliced = rewritten
        kinds = [node_type(graph, n) for n in matched if graph.op(n) != "Const"]
        made = [new_graph.op_type(n) for n in spliced.created if new_graph.op(n) != "Const"] or ["its input"]
        match.summary = f"{pattern.graph.name}: {' + '.join(kinds)} -> {' + '.join(made)}"
        match.details.update({"replacement": made, "outputs": spliced.outputs})
        self._record(result, match, spliced)
        return new_graph

    # ---- DecomposePass ------------------------------------------------------------------------
    def _decompose(self, graph: Graph, result: GePassResult) -> Graph:
        instance = self._instance(result)
        if instance is None:
            return graph
        context = self._context()
        wanted = set(self.registered.op_types)
        for name in [n for n in graph.nodes if node_type(graph, n) in wanted]:
            producers = list(dict.fromkeys(graph.inputs(name)))
            outputs = [TensorRef(name, k) for k in range(Node(graph, name).get_outputs_size())]
            found = Found(Pattern(BuiltGraph(name, [], [])), name, {name: name}, dict(enumerate(producers)),
                          outputs, [])
            graph = self._one_node(graph, name, found, instance, context, result)
        return graph

    def _one_node(self, graph: Graph, name: str, found: Found, instance: Any, context: PassContext,
                  result: GePassResult) -> Graph:
        result.match_times += 1
        node = Node(graph, name)
        check = self._call(result, "meet_requirements", instance.meet_requirements, node, context)
        message = context.take_message()
        if check.error is not None:
            return graph
        if not check.value:
            result.near_misses.append(NearMiss(self.id, name, (name,), _refusal(check, message), Culprit((name,))))
            return graph
        rewritten = self._replace(graph, found, instance, result, node, context)
        if rewritten is None:
            return graph
        new_graph, spliced = rewritten
        self._record(result, Match(self.id, name, (name,), (name,), f"{node_type(graph, name)} {name} decomposed",
                                   {"node": name}, {"outputs": spliced.outputs}), spliced)
        return new_graph

    def _replace(self, graph: Graph, found: Found, instance: Any, result: GePassResult,
                 *hook_args: Any) -> tuple[Graph, Spliced] | None:
        """The pass's replacement for `found` spliced in and counted as an effect: (the new graph, what the splice
        made), or None when the pass's code raised or its replacement does not fit (reported on `result`)."""
        built = self._call(result, "replacement", instance.replacement, *hook_args)
        if built.error is not None:
            return None
        editor = graph.editor()
        try:
            spliced = splice(graph, editor, found, built.value, self.id)
            new_graph = editor.build()
        except ReplacementError as error:
            self._report(result, "replacement", str(error), type(instance).replacement)
            return None
        result.effect_times += 1
        return new_graph, spliced

    def _record(self, result: GePassResult, match: Match, spliced: Spliced) -> None:
        """A rewritten match on `result`: its index, its rewrite's provenance, its renamed outputs and the GE-only
        op types it wrote without a TensorFlow equivalent (which make the proof structure only)."""
        match.index = len(result.matches)
        result.matches.append(match)
        result.rewrites.append(_rewrite(self.id, match.index, spliced))
        result.output_map.update(spliced.outputs)
        result.structure_only += [t for t in spliced.structure_only if t not in result.structure_only]

    # ---- FusionBasePass -----------------------------------------------------------------------
    def _run_whole(self, graph: Graph, result: GePassResult) -> None:
        instance = self._instance(result)
        if instance is None:
            return
        context = self._context()
        call = self._call(result, "run", instance.run, TargetGraph(graph), context)
        if call.error is None and call.value is not None and not call.value:
            self._report(result, "run", context.take_message() or f"run returned {call.value!r}", instance.run)


def _refusal(check: _Call, message: str) -> str:
    """Why meet_requirements refused: the pass's own message, else what it returned and from which line."""
    if message:
        return message
    said = RETURNED_FALSE if check.value is False else f"meet_requirements returned {check.value!r}"
    where = f"line {check.returned_at} of {Path(check.file).name}" if check.file else f"line {check.returned_at}"
    return f"{said} ({where})" if check.returned_at else said


def _rewrite(pass_id: str, index: int, spliced: Spliced) -> Rewrite:
    """A replacement node that took a removed node's name modifies that node; the others are created."""
    return Rewrite(pass_id, index, removed=tuple(n for n in spliced.removed if n not in spliced.created),
                   modified=tuple(n for n in spliced.created if n in spliced.removed),
                   created=tuple(n for n in spliced.created if n not in spliced.removed))


def _partial_near_miss(pass_id: str, pattern: Pattern, partial: Partial) -> NearMiss:
    nodes = tuple(dict.fromkeys([*partial.bound.values(), *([partial.graph_node] if partial.graph_node else [])]))
    culprit = Culprit((partial.graph_node,) if partial.graph_node else (), partial.edge)
    return NearMiss(pass_id, partial.coordinate, nodes, f"{pattern.graph.name}: {partial.reason}", culprit,
                    dict(partial.bound))


def describe_patterns(registered: RegisteredPass) -> tuple[list[str], list[UserCodeError]]:
    """A pattern pass's patterns as expressions from their outputs (`name: Add_0(MatMulV2_0(Data_0, Data_1),
    Data_2)`), or a decompose pass's op types; the user's errors on the way."""
    if registered.kind == DECOMPOSE:
        return [f"op types: {', '.join(registered.op_types)}"], []
    if registered.kind == FUSION_BASE:
        return ["run(graph, context) over the whole graph"], []
    attrs = {"id": registered.name, "registered": registered, "roots": (str(Path(registered.source).resolve()),)}
    cls = type(f"Describe_{registered.class_name}", (GePythonPass,), attrs)
    result = GePassResult(registered.name)
    with ge_importable():
        instance = cls()._instance(result)
        patterns = cls()._patterns(instance, result) if instance is not None else []
    return [f"{p.graph.name}: {', '.join(_expression(t.node) for t in p.graph.outputs)}" for p in patterns], \
        result.user_errors


def _expression(node: Any) -> str:
    if node.is_data:
        return f"input{node.index}"
    if node.is_const:
        return f"Const({' '.join(str(node.value).split())})"
    return f"{node.op_type}({', '.join(_expression(t.node) for t in node.inputs)})"


def pass_classes(load: PassLoad) -> list[type[GePythonPass]]:
    """One FuseLens pass class per registered pass, under its registered name, in its stage's place."""
    classes = []
    for position, registered in enumerate(load.passes):
        where, stage_order = STAGE_POSITIONS[registered.stage]
        attrs = {
            "id": registered.name, "registered": registered, "roots": load.roots, "pipeline_position": where,
            "order": stage_order * 1000 + position, "default_enabled": True,
            "title": f"{registered.name} (GE Python pass, {registered.stage})",
            "description": f"A {registered.kind.replace('_', ' ')} pass from {registered.source}, line "
                           f"{registered.line}, registered for stage {registered.stage}.",
            "__module__": __name__, "__doc__": f"GE Python pass {registered.name} from {registered.source}.",
        }
        classes.append(type(f"GePythonPass_{registered.class_name}", (GePythonPass,), attrs))
    return classes
