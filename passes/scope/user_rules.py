"""User scope fusion rules: a declarative YAML or JSON file, checked field by field.

    rules:
      - name: ScopeMyNormPass          # a built-in's name replaces the built-in (as in the toolchain)
        op_type: MyNorm
        suffix: mynorm                 # one pattern at rule level, or `patterns: [...]` for several
        census: {Mul: 3, Sub: 1, RealDiv: {num: 0, step: 2}, Identity: -1}
        inputs:  [{node: mynorm/mul_1, input: 0}, {node: mynorm/sub}]
        outputs: [{node: mynorm/add_1}]

Every rule becomes a scope pass of the configuration that loads it (`catalog_with_rules`), so it
shows in that configuration's catalog, is switched on by name through `enable_scope_fusion_passes`
(or always on with `general: true`), and runs in the pipeline like a built-in. A bad file is a
FuseLensError naming the file, the field path (`rules[0].census.Mul.num`) and the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fuselens.core.errors import FuseLensError
from fuselens.core.wording import shown
from fuselens.passes.base import FusionPass
from fuselens.passes.registry import catalog, pass_order
from fuselens.passes.scope.features import Feature, NodeAttrFeature, NodeOpTypeFeature, ScopeFeature, ScopePattern
from fuselens.passes.scope.rule import InputWire, OutputWire, ScopeRule
from fuselens.passes.scope.scope_pass import ScopeRulePass
from fuselens.passes.switch import NO_SWITCH, SCOPE, ToolchainSwitch

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_PATTERN_FIELDS = ("sub_type", "suffix", "census", "attrs", "sub_scopes")
_RULE_FIELDS = ("name", "op_type", "general", "description", "patterns", "pair", "inputs", "outputs",
                "skip_names", "fused_attrs", *_PATTERN_FIELDS)
USER_ORDER = 1000  # user passes run after the built-ins (registration order)
T = TypeVar("T")


@dataclass(frozen=True)
class UserRule:
    rule: ScopeRule
    general: bool | None  # None: as the built-in it replaces, else False
    description: str
    source: str  # the rule file


class _Field:
    """A value in the rule file and its path, so every error names the field."""

    def __init__(self, source: str, path: str, value: Any):
        self.source, self.path, self.value = source, path, value

    def error(self, problem: str) -> FuseLensError:
        return FuseLensError(f"{self.source}: {self.path or 'top level'}: {problem}")

    def child(self, key: str | int) -> _Field:
        value = self.value[key]
        if isinstance(key, int):
            return _Field(self.source, f"{self.path}[{key}]", value)
        return _Field(self.source, f"{self.path}.{shown(key)}" if self.path else shown(key), value)

    def mapping(self, known: Sequence[str] | None = None) -> _Field:
        """Check that the value is a mapping (with only `known` keys, unless None)."""
        if not isinstance(self.value, Mapping):
            raise self.error(f"must be a mapping, not {_kind(self.value)}")
        unknown = [k for k in self.value if known is not None and k not in known]
        if unknown:
            raise self.error(f"unknown field {unknown[0]!r} (known: {', '.join(known)})")
        return self

    def get(self, key: str, read: Callable[[_Field], T], default: T | None = None, *, required: bool = False) -> T:
        if key not in self.value:
            if required:
                raise self.error(f"missing required field {key!r}")
            return default  # type: ignore[return-value]
        return read(self.child(key))

    def items(self, *, non_empty: bool = False) -> list[_Field]:
        if not isinstance(self.value, list):
            raise self.error(f"must be a list, not {_kind(self.value)}")
        if non_empty and not self.value:
            raise self.error("must not be empty")
        return [self.child(i) for i in range(len(self.value))]


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "empty"}.get(type(value), type(value).__name__)


def _text(field: _Field) -> str:
    if not isinstance(field.value, str) or not field.value:
        raise field.error(f"must be a non-empty string, not {_kind(field.value)}")
    return field.value


def _name(field: _Field) -> str:
    text = _text(field)
    if not _NAME.match(text):
        raise field.error(f"{text!r} is not a valid name (letters, digits, _ . -)")
    return text


def _int(field: _Field, *, minimum: int) -> int:
    if isinstance(field.value, bool) or not isinstance(field.value, int):
        raise field.error(f"must be an integer, not {_kind(field.value)}")
    if field.value < minimum:
        raise field.error(f"must be >= {minimum}, not {field.value}")
    return field.value


def _bool(field: _Field) -> bool:
    if not isinstance(field.value, bool):
        raise field.error(f"must be true or false, not {_kind(field.value)}")
    return field.value


def _scalar(field: _Field) -> Any:
    if not isinstance(field.value, (bool, int, float, str)):
        raise field.error(f"must be a number, string or boolean, not {_kind(field.value)}")
    return field.value


def _census(field: _Field) -> list[NodeOpTypeFeature]:
    features = []
    for op_type in field.mapping().value:
        entry = field.child(op_type)
        if isinstance(entry.value, Mapping):
            entry.mapping(("num", "step"))
            num = entry.get("num", lambda f: _int(f, minimum=-1), required=True)
            step = entry.get("step", lambda f: _int(f, minimum=0), 0)
            if step and not 0 <= num < step:
                raise entry.child("num").error(f"with step {step} must be between 0 and {step - 1}, not {num}")
        else:
            num, step = _int(entry, minimum=-1), 0
        features.append(NodeOpTypeFeature(str(op_type), num, step))
    return features


def _attr_feature(field: _Field) -> NodeAttrFeature:
    field.mapping(("op", "attr", "value"))
    return NodeAttrFeature(field.get("op", _text, required=True), field.get("attr", _text, required=True),
                           field.get("value", _scalar, required=True))


def _sub_scope_feature(field: _Field, earlier: Sequence[str]) -> ScopeFeature:
    field.mapping(("sub_type", "num", "mask", "step"))
    sub_type = field.get("sub_type", _text, "")
    if sub_type and sub_type not in earlier:
        raise field.child("sub_type").error(f"{sub_type!r} is not the sub type of an earlier pattern "
                                            f"(earlier: {', '.join(earlier) or 'none'})")
    mask = field.get("mask", _text, "")
    if not sub_type and not mask:
        raise field.error("needs a sub_type or a mask")
    return ScopeFeature(sub_type, field.get("num", lambda f: _int(f, minimum=-1), -1), "", mask,
                        field.get("step", lambda f: _int(f, minimum=0), 0))


def _pattern(field: _Field, default_sub_type: str, earlier: Sequence[str]) -> ScopePattern:
    suffix = field.get("suffix", _text, "")
    sub_type = field.get("sub_type", _name, suffix or default_sub_type)
    features: list[Feature] = [ScopeFeature(suffix=suffix)] if suffix else []
    features += field.get("census", _census, [])
    features += [_attr_feature(f) for f in field.get("attrs", lambda f: f.items(), [])]
    features += [_sub_scope_feature(f, earlier) for f in field.get("sub_scopes", lambda f: f.items(), [])]
    if not features:
        raise field.error("a pattern needs at least a suffix or a census (it would match every scope)")
    return ScopePattern(sub_type, tuple(features))


def _input_wire(field: _Field) -> InputWire:
    field.mapping(("node", "input"))
    return InputWire(field.get("node", _text, required=True), field.get("input", lambda f: _int(f, minimum=0)))


def _output_wire(field: _Field) -> OutputWire:
    field.mapping(("node", "port"))
    return OutputWire(field.get("node", _text, required=True), field.get("port", lambda f: _int(f, minimum=0), 0))


def _rule(field: _Field, source: str) -> UserRule:
    field.mapping(_RULE_FIELDS)
    name = field.get("name", _name, required=True)
    patterns: list[ScopePattern] = []
    if "patterns" in field.value:
        extra = [k for k in _PATTERN_FIELDS if k in field.value]
        if extra:
            raise field.error(f"give either `patterns` or a rule-level pattern ({extra[0]}), not both")
        for item in field.child("patterns").items(non_empty=True):
            item.mapping(_PATTERN_FIELDS)
            patterns.append(_pattern(item, name, [p.sub_type for p in patterns]))
    else:
        patterns.append(_pattern(field, name, []))
    sub_types = list(dict.fromkeys(p.sub_type for p in patterns))
    pair = field.get("pair", lambda f: _pair(f, sub_types))
    rule = ScopeRule(
        name, field.get("op_type", _name, required=True), tuple(patterns),
        inputs=tuple(_input_wire(f) for f in field.get("inputs", lambda f: f.items(), [])),
        outputs=tuple(_output_wire(f) for f in field.get("outputs", lambda f: f.items(non_empty=True),
                                                          required=True)),
        pair=pair,
        skip_names=tuple(_text(f) for f in field.get("skip_names", lambda f: f.items(), [])),
        attrs=field.get("fused_attrs", _fused_attrs, {}),
    )
    return UserRule(rule, field.get("general", _bool), field.get("description", _text, ""), source)


def _fused_attrs(field: _Field) -> dict[str, Any]:
    return {str(key): _scalar(field.child(key)) for key in field.mapping().value}


def _pair(field: _Field, sub_types: Sequence[str]) -> tuple[str, str]:
    items = field.items()
    if len(items) != 2:
        raise field.error(f"must name 2 sub types (the fused scope and its sibling), not {len(items)}")
    first, second = (_text(f) for f in items)
    for item, value in zip(items, (first, second)):
        if value not in sub_types:
            raise item.error(f"{value!r} is not the sub type of a pattern (sub types: {', '.join(sub_types)})")
    if first == second:
        raise field.error("the two sub types must differ")
    return first, second


def parse_rules(data: Any, source: str) -> list[UserRule]:
    """Rules from already-parsed YAML/JSON data (`{"rules": [...]}`)."""
    top = _Field(source, "", data).mapping(("rules",))
    rules = [_rule(f, source) for f in top.get("rules", lambda f: f.items(non_empty=True), required=True)]
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        if rule.rule.name in seen:
            raise top.child("rules").child(i).child("name").error(f"{rule.rule.name!r} is defined twice")
        seen.add(rule.rule.name)
    return rules


def load_rule_file(path: str | Path) -> list[UserRule]:
    """Parse a YAML (.yaml/.yml) or JSON (.json) rule file; any problem is one FuseLensError."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FuseLensError(f"{path}: no such rule file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FuseLensError(f"{path}: cannot read the rule file ({e})") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise FuseLensError(f"{path}: not valid {kind}: {' '.join(str(e).split())}") from None
    return parse_rules(data, str(path))


# ---- user rules as passes of one configuration's catalog ----------------------------------------
def rule_switch(name: str, builtins: Iterable[type[FusionPass]]) -> ToolchainSwitch:
    """A user rule's toolchain switch: none (the toolchain runs C++ scope passes only), unless the rule has
    a name a built-in scope pass registered, which then switches the toolchain's own rule of that name."""
    builtin = next((c.switch for c in builtins if c.switch.kind == SCOPE and name in c.switch.names), None)
    if builtin is None:
        return NO_SWITCH
    return ToolchainSwitch(SCOPE, builtin.names, general=builtin.general, sources=builtin.sources,
                           note="a user rule with a built-in's name: the toolchain runs its own built-in rule "
                                "of that name, not the rule file's")


def rule_pass_class(user: UserRule, replaces: type[FusionPass] | None, position: int,
                    switch: ToolchainSwitch) -> type[ScopeRulePass]:
    """A scope pass class for one user rule; it keeps the slot (order) of the built-in it replaces."""
    rule = user.rule
    general = user.general if user.general is not None else bool(replaces and replaces.general)
    attrs = {
        "id": rule.name, "rule": rule, "general": general, "default_enabled": False,
        "order": replaces.order if replaces else USER_ORDER + position,
        "title": f"{rule.op_type} (user rule)",
        "description": user.description or f"User rule from {user.source}: fuses scopes into {rule.op_type}.",
        "source": user.source, "switch": switch, "__module__": __name__,
        "__doc__": f"User scope rule {rule.name} from {user.source}.",
    }
    return type(f"UserRule_{re.sub(r'[^A-Za-z0-9_]', '_', rule.name)}", (ScopeRulePass,), attrs)


def catalog_with_rules(rules: Iterable[UserRule]) -> list[type[FusionPass]]:
    """The built-in catalog with these user rules as scope passes: a rule with a built-in's name
    replaces it (and keeps its place), the others run after the built-ins. Nothing global changes."""
    builtins = catalog()
    passes = {c.id: c for c in builtins}
    for position, user in enumerate(rules):
        replaced = passes.get(user.rule.name)
        if replaced is not None and replaced.family != "scope":
            raise FuseLensError(f"{user.source}: rule {user.rule.name} has the name of the {replaced.family} "
                                "pass; a scope rule may only replace a scope pass")
        passes[user.rule.name] = rule_pass_class(user, replaced, position, rule_switch(user.rule.name, builtins))
    return sorted(passes.values(), key=pass_order)
