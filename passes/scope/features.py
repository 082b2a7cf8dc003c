"""The toolchain's scope pattern features (ScopeBasePass API), each evaluated on ONE scope.

A feature returns None when the scope has it, else the reason in words, so a scope that
looks right but fails a count becomes a near miss that says which count
("Mul: found 2, pattern needs 3").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from fuselens.core.graph import Graph
from fuselens.passes.base import Reason
from fuselens.passes.scope.scope_tree import Scope

RETVAL = "_Retval"


@dataclass(frozen=True)
class ScopeContext:
    """What a feature may look at besides the scope: the graph and the sub types assigned so far."""

    graph: Graph
    sub_types: dict[str, str]  # scope name -> sub type of the pattern that matched it (filled as patterns match)


def _count_text(count: int) -> str:
    return "none" if count == -1 else str(count)


@dataclass(frozen=True)
class NodeOpTypeFeature:
    """Count of `op_type` nodes in the scope (sub-scopes included; absent = -1).

    step 0: count == num (num -1 = "must not contain"); step != 0: count != -1 and count % step == num.
    """

    op_type: str
    num: int
    step: int = 0

    def wanted(self) -> str:
        if self.step == 0:
            return _count_text(self.num)
        if self.num == 0:
            return f"a multiple of {self.step}"
        return f"a count with count % {self.step} == {self.num}"

    def check(self, scope: Scope, context: ScopeContext) -> str | None:
        found = scope.op_count(self.op_type)
        ok = found == self.num if self.step == 0 else found != -1 and found % self.step == self.num
        if ok:
            return None
        counted = [n for n in scope.all_nodes() if context.graph.op(n) == self.op_type]  # none: the whole is at fault
        return Reason(f"{self.op_type}: found {_count_text(found)}, pattern needs {self.wanted()}", *counted)


@dataclass(frozen=True)
class NodeAttrFeature:
    """Some node of `op_type` directly in the scope has `attr` equal to `value` (floats compared closely)."""

    op_type: str
    attr: str
    value: Any

    def _equal(self, actual: Any) -> bool:
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (actual, self.value))
        if numbers:
            return math.isclose(actual, self.value, rel_tol=1e-6, abs_tol=1e-12)
        return type(actual) is type(self.value) and actual == self.value

    def check(self, scope: Scope, context: ScopeContext) -> str | None:
        seen = []
        for name in scope.nodes:
            if context.graph.op(name) != self.op_type:
                continue
            actual = context.graph.attr(name, self.attr)
            if self._equal(actual):
                return None
            seen.append(f"{name.rpartition('/')[2]} has {actual!r}")
        found = "; ".join(seen) if seen else f"no {self.op_type} node directly in the scope"
        return Reason(f"{self.op_type}.{self.attr}: pattern needs {self.value!r}, {found}",
                      *(n for n in scope.nodes if context.graph.op(n) == self.op_type))

    def census_row(self, scope: Scope, context: ScopeContext) -> tuple[str, str, str]:
        """(what is checked, what the scope has, what the rule needs), for an explanation's table."""
        values = [context.graph.attr(n, self.attr) for n in scope.nodes if context.graph.op(n) == self.op_type]
        return f"{self.op_type}.{self.attr}", ", ".join(map(repr, values)) or "none", repr(self.value)


@dataclass(frozen=True)
class ScopeFeature:
    """The scope's last name equals `suffix`; `num` sub-scopes have sub type `sub_type`; a sub-scope's
    last name contains `sub_scope_mask`. Empty strings switch a part off (as in the toolchain)."""

    sub_type: str = ""
    num: int = -1
    suffix: str = ""
    sub_scope_mask: str = ""
    step: int = 0

    def check(self, scope: Scope, context: ScopeContext) -> str | None:
        if self.suffix and scope.last_name != self.suffix:
            return f"last name is {scope.last_name!r}, pattern needs {self.suffix!r}"
        subs = list(scope.descendants())
        if self.sub_type:
            count = sum(1 for s in subs if context.sub_types.get(s.name) == self.sub_type)
            ok = count == self.num if self.step == 0 else count % self.step == self.num
            if not ok:
                needed = self.num if self.step == 0 else f"count % {self.step} == {self.num}"
                return f"sub-scopes of type {self.sub_type}: found {count}, pattern needs {needed}"
        if self.sub_scope_mask and not any(self.sub_scope_mask in s.last_name for s in subs):
            return f"no sub-scope whose name contains {self.sub_scope_mask!r}"
        return None

    def census_row(self, scope: Scope, context: ScopeContext) -> tuple[str, str, str]:
        """(what is checked, what the scope has, what the rule needs), for an explanation's table."""
        if self.suffix:
            return "scope name", scope.last_name, self.suffix
        subs = list(scope.descendants())
        if self.sub_type:
            count = sum(1 for s in subs if context.sub_types.get(s.name) == self.sub_type)
            needed = str(self.num) if self.step == 0 else f"count % {self.step} == {self.num}"
            return f"{self.sub_type} sub-scopes", str(count), needed
        masked = [s.last_name for s in subs if self.sub_scope_mask in s.last_name]
        return "sub-scope name", ", ".join(masked) or "none", f"contains {self.sub_scope_mask!r}"


Feature = NodeOpTypeFeature | NodeAttrFeature | ScopeFeature


@dataclass(frozen=True)
class ScopePattern:
    """One scope pattern: every feature must hold, and the scope must not hold a `_Retval`.

    Patterns sharing a `sub_type` are variants (e.g. LayerNorm's Add / AddV2 batchnorm).
    """

    sub_type: str
    features: tuple[Feature, ...]

    @cached_property
    def suffix(self) -> str:
        """Kept once read: a big graph's scopes ask it of every pattern (75k times on 20k nodes)."""
        return next((f.suffix for f in self.features if isinstance(f, ScopeFeature) and f.suffix), "")

    def names_scope(self, scope: Scope) -> bool:
        """The scope's name says it should be this pattern: a failed check on it is a near miss."""
        return bool(self.suffix) and scope.last_name == self.suffix

    def failures(self, scope: Scope, context: ScopeContext) -> list[str]:
        """Every reason the scope does not match (empty: it matches)."""
        reasons = [r for r in (f.check(scope, context) for f in self.features) if r]
        if scope.op_count(RETVAL) != -1:
            retvals = [n for n in scope.all_nodes() if context.graph.op(n) == RETVAL]
            reasons.append(Reason(f"the scope holds a {RETVAL} node ({retvals[0]}); a scope with a {RETVAL} is never "
                                  "fused", retvals[0]))
        return reasons
