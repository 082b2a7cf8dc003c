"""The classes a pass derives from and what its hooks receive: `FusionBasePass`, `PatternFusionPass`,
`DecomposePass`, `@pattern`, `PassStage`, `MatchResult`, `PassContext`, `PatternMatcherConfig`, and the
registration decorators.

As in GE, the hooks are normalised when the class is defined: a `PatternFusionPass` that overrides
`run`, mixes `@pattern` methods with `patterns()`, or gives a hook a signature GE does not accept is a
TypeError there, naming the class. Hooks may take `context` or not (it came after v9.1.0); the engine
(passes/ge_python/engine.py) always calls the normalised form.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fuselens.core.graph import Graph
from fuselens.passes.ge_python.api.builder import (
    BuiltGraph,
    GraphBuilder,
    NodeIo,
    Pattern,
    PatternInputs,
    TensorHolder,
    create_pattern,
)
from fuselens.passes.ge_python.api.missing import missing_attribute
from fuselens.passes.ge_python.api.views import Node


class PassStage(str, Enum):
    """Where GE runs a pass (docs/reference/passes.md has FuseLens's point for each)."""

    BEFORE_INFER_SHAPE = "BeforeInferShape"
    AFTER_INFER_SHAPE = "AfterInferShape"
    AFTER_BUILTIN_FUSION_PASS = "AfterBuiltinFusionPass"
    AFTER_ORIGIN_GRAPH_OPTIMIZE = "AfterOriginGraphOptimize"


class PassContext:
    """The compile options a pass may read, and the message it may leave (`set_error_message`)."""

    def __init__(self, pass_name: str, options: dict[str, str] | None = None):
        self._pass_name, self._options = pass_name, dict(options or {})
        self._message = ""

    def get_pass_name(self) -> str:
        return self._pass_name

    def set_pass_name(self, name: str) -> None:
        self._pass_name = name

    def get_error_message(self) -> str:
        return self._message

    def set_error_message(self, message: str) -> None:
        self._message = str(message)

    def get_option_value(self, key: str) -> str:
        if key not in self._options:
            raise RuntimeError(f"option {key!r} is not set in this FuseLens run")
        return self._options[key]

    def take_message(self) -> str:
        """Not in GE: the message set since the last call (FuseLens reads it after each hook)."""
        message, self._message = self._message, ""
        return message

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


@dataclass(frozen=True)
class PatternMatcherConfig:
    """What matching compares besides topology and op types: constant values, IR attributes."""

    const_value_match: bool = False
    ir_attr_match: bool = False

    def is_enable_const_value_match(self) -> bool:
        return self.const_value_match

    def is_enable_ir_attr_match(self) -> bool:
        return self.ir_attr_match


class PatternMatcherConfigBuilder:
    def __init__(self) -> None:
        self._const_value, self._ir_attr = False, False

    def enable_const_value_match(self) -> PatternMatcherConfigBuilder:
        self._const_value = True
        return self

    def enable_ir_attr_match(self) -> PatternMatcherConfigBuilder:
        self._ir_attr = True
        return self

    def build(self) -> PatternMatcherConfig:
        return PatternMatcherConfig(self._const_value, self._ir_attr)


@dataclass
class MatchResult:
    """One match: the graph nodes bound to the pattern's non-input nodes (graph order), the captured
    tensors (`capture_tensor` order) and the pattern's name."""

    graph: Graph
    pattern_name: str
    matched: list[str]
    captured: list[tuple[str, int]] = field(default_factory=list)

    def get_matched_nodes(self) -> list[Node]:
        return [Node(self.graph, name) for name in self.matched]

    def get_captured_tensor(self, capture_index: int) -> NodeIo:
        if not 0 <= capture_index < len(self.captured):
            raise RuntimeError(f"no captured tensor {capture_index}: the pattern captures {len(self.captured)}")
        name, port = self.captured[capture_index]
        return NodeIo(Node(self.graph, name), port)

    def get_pattern_graph_name(self) -> str:
        return self.pattern_name

    def __str__(self) -> str:
        return f"[PatternName:{self.pattern_name}]{{{', '.join(self.matched)}}}"

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


# ---- hook signatures -------------------------------------------------------------------------
_PATTERN_MARK = "__ge_pattern_method__"


def pattern(method: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a PatternFusionPass method `name(self, inputs)` as one expression-style pattern."""
    setattr(method, _PATTERN_MARK, True)
    return method


def _positional(method: Callable[..., Any]) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(method).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _check_arity(method: Callable[..., Any], low: int, high: int, message: str) -> int:
    params = inspect.signature(method).parameters.values()
    count = len(_positional(method))
    if not low <= count <= high or any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in params):
        raise TypeError(message)
    return count


def _with_optional_context(method: Callable[..., Any], hook: str, value: str) -> Callable[..., Any]:
    """`hook(self, value)` or `hook(self, value, context)` as `hook(self, value, context)`."""
    count = _check_arity(method, 2, 3, f"{hook} takes ({value}) or ({value}, context), as {hook}(self, "
                                       f"{value}[, context])")

    @functools.wraps(method)
    def normalised(self: Any, argument: Any, context: Any = None) -> Any:
        return method(self, argument, context) if count == 3 else method(self, argument)

    return normalised


def _replacement_hook(method: Callable[..., Any]) -> Callable[..., Any]:
    """A replacement as `replacement(self, match_result, context) -> Graph`: the graph-building form as
    it is, the expression form (`replacement(self, inputs[, match_result][, context])`) building its
    Graph from the tensors it returns."""
    params = _positional(method)
    if len(params) < 2 or params[1].name != "inputs":
        return _with_optional_context(method, "replacement", "match_result")
    count = _check_arity(method, 2, 4, "an expression-style replacement takes (inputs), (inputs, match_result), "
                                       "(inputs, context) or (inputs, match_result, context)")
    names = [p.name for p in params[2:]]
    if count == 4 and names[1] != "context":
        raise TypeError("an expression-style replacement with four arguments is "
                        "replacement(self, inputs, match_result, context)")

    @functools.wraps(method)
    def normalised(self: Any, match_result: Any, context: Any = None) -> BuiltGraph:
        builder = GraphBuilder(f"{type(self).__name__}_replacement")
        inputs = PatternInputs(builder)
        extra = {"match_result": match_result, "context": context}
        result = method(self, inputs, *(extra["context" if n == "context" else "match_result"] for n in names))
        if isinstance(result, BuiltGraph):
            return result
        return builder.build_and_reset(_tensors(result, "replacement"))

    return normalised


def _tensors(result: Any, hook: str) -> list[TensorHolder]:
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    if not items or not all(isinstance(item, TensorHolder) for item in items):
        raise TypeError(f"an expression-style {hook} returns a TensorHolder or a non-empty list/tuple of them, "
                        f"not {type(result).__name__}")
    return items


def _expression_patterns(methods: list[Callable[..., Any]]) -> Callable[..., list[Pattern]]:
    """`patterns(self)` from @pattern methods: each builds one pattern whose used inputs (index order)
    and returned outputs are captured."""
    for method in methods:
        _check_arity(method, 2, 2, f"@pattern method {method.__name__} takes (self, inputs)")

    def patterns(self: Any) -> list[Pattern]:
        built = []
        for method in methods:
            builder = GraphBuilder(f"{type(self).__name__}_{method.__name__}_pattern")
            inputs = PatternInputs(builder)
            result = method(self, inputs)
            if isinstance(result, (Pattern, BuiltGraph)):
                built.append(result if isinstance(result, Pattern) else create_pattern(result))
                continue
            outputs = _tensors(result, "@pattern method")
            made = create_pattern(builder.build_and_reset(outputs))
            for tensor in [*inputs.made(), *outputs]:
                made.capture_tensor(tensor)
            built.append(made)
        return built

    patterns.__ge_expression_methods__ = methods  # type: ignore[attr-defined]
    return patterns


# ---- the base classes -----------------------------------------------------------------------
class FusionBasePass:
    """A pass that walks the whole graph itself: `run(self, graph, context)`; None or truthy is success."""

    def run(self, graph: Any, context: PassContext) -> Any:
        raise NotImplementedError("FusionBasePass.run must be implemented")


class PatternFusionPass(FusionBasePass):
    """Patterns, a check, a replacement; GE's engine runs them, never `run`."""

    def __init__(self, matcher_config: PatternMatcherConfig | None = None) -> None:
        self._matcher_config = matcher_config

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "run" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides run(), which the PatternFusionPass engine never calls; "
                            "implement patterns()/replacement() instead")
        methods = [m for m in cls.__dict__.values() if callable(m) and getattr(m, _PATTERN_MARK, False)]
        if methods:
            if "patterns" in cls.__dict__:
                raise TypeError(f"{cls.__name__} mixes @pattern methods with patterns(); use one style")
            cls.patterns = _expression_patterns(methods)  # type: ignore[method-assign]
        if "meet_requirements" in cls.__dict__:
            cls.meet_requirements = _with_optional_context(  # type: ignore[method-assign]
                cls.__dict__["meet_requirements"], "meet_requirements", "match_result")
        if "replacement" in cls.__dict__:
            cls.replacement = _replacement_hook(cls.__dict__["replacement"])  # type: ignore[method-assign]

    @property
    def matcher_config(self) -> PatternMatcherConfig | None:
        return getattr(self, "_matcher_config", None)

    def patterns(self) -> Iterable[Pattern | BuiltGraph]:
        raise NotImplementedError("PatternFusionPass.patterns must be implemented")

    def meet_requirements(self, match_result: MatchResult, context: PassContext | None = None) -> bool:
        return True

    def replacement(self, match_result: MatchResult, context: PassContext | None = None) -> BuiltGraph:
        raise NotImplementedError("PatternFusionPass.replacement must be implemented")


class DecomposePass(FusionBasePass):
    """One node of the registered op types at a time: `meet_requirements(node)`, `replacement(node)`."""

    op_types: list[str] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "run" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides run(), which the DecomposePass engine never calls; "
                            "implement meet_requirements()/replacement() instead")
        for hook in ("meet_requirements", "replacement"):
            if hook in cls.__dict__:
                setattr(cls, hook, _with_optional_context(cls.__dict__[hook], hook, "node"))

    def meet_requirements(self, node: Node, context: PassContext | None = None) -> bool:
        return True

    def replacement(self, node: Node, context: PassContext | None = None) -> BuiltGraph:
        raise NotImplementedError("DecomposePass.replacement must be implemented")


# ---- registration --------------------------------------------------------------------------
PATTERN_FUSION, FUSION_BASE, DECOMPOSE = "pattern_fusion", "fusion_base", "decompose"


@dataclass(frozen=True)
class Registration:
    """One `@register_*` call: the pass's name, stage, kind, class, op types (decompose) and where."""

    name: str
    stage: PassStage
    kind: str
    cls: type
    op_types: tuple[str, ...] = ()
    source: str = ""  # the file the class is defined in
    line: int = 0


_registered: list[Registration] = []  # the loader reads and resets it per load (engine.collect_registrations)


def _register(cls: type, *, name: str, stage: PassStage, kind: str, op_types: Iterable[str] = ()) -> type:
    if not isinstance(name, str) or not name:
        raise TypeError("a pass name must be a non-empty string")
    if not isinstance(stage, PassStage):
        raise TypeError(f"stage must be a PassStage, not {stage!r}")
    if any(r.name == name for r in _registered):
        raise ValueError(f"python pass name already exists: {name}")
    try:
        source, line = inspect.getsourcefile(cls) or "", inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        source, line = "", 0
    registration = Registration(name, stage, kind, cls, tuple(op_types), source, line)
    _registered.append(registration)
    cls.__ge_pass_descriptor__ = registration  # type: ignore[attr-defined]
    return cls


def register_fusion_pass(*, name: str, stage: PassStage, kind: str | None = None) -> Callable[[type], type]:
    """Register a FusionBasePass or PatternFusionPass under `name` at `stage`."""

    def decorate(cls: type) -> type:
        if not inspect.isclass(cls) or not issubclass(cls, FusionBasePass):
            raise TypeError("register_fusion_pass expects a FusionBasePass subclass")
        found = kind or (PATTERN_FUSION if issubclass(cls, PatternFusionPass) else FUSION_BASE)
        return _register(cls, name=name, stage=stage, kind=found)

    return decorate


def register_decompose_pass(*, name: str, stage: PassStage, op_types: Iterable[str]) -> Callable[[type], type]:
    """Register a DecomposePass for nodes of `op_types`."""
    if isinstance(op_types, (str, bytes)) or not isinstance(op_types, Iterable):
        raise TypeError("register_decompose_pass op_types must be an iterable of strings")
    types = list(op_types)
    if not types:
        raise ValueError("register_decompose_pass requires at least one op type")
    if not all(isinstance(t, str) and t for t in types):
        raise TypeError("register_decompose_pass op_types must contain non-empty strings")

    def decorate(cls: type) -> type:
        if not inspect.isclass(cls) or not issubclass(cls, DecomposePass):
            raise TypeError("register_decompose_pass expects a DecomposePass subclass")
        cls.op_types = list(types)  # type: ignore[attr-defined]
        return _register(cls, name=name, stage=stage, kind=DECOMPOSE, op_types=types)

    return decorate


def take_registrations() -> list[Registration]:
    """The registrations since the last call; the record starts again empty."""
    found = list(_registered)
    _registered.clear()
    return found


def clear_registered_passes() -> None:
    _registered.clear()


def get_registered_passes() -> list[Registration]:
    return list(_registered)
