"""The name-scope tree of a graph, built from node names as the TF parser's ScopeTree does.

A node `a/b/c` lives directly in scope `a/b`; it is counted in the op census of `a/b`, `a` and
the root (the toolchain increments the count on every ancestor), so a scope's census covers
its sub-scopes too. `_1`-style indices are trimmed from a scope's last name (`InstanceNorm_1`
has the last name `InstanceNorm`), so patterns name scopes without their index.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from core.graph import Graph

_INDEX = re.compile(r"^(.+)_([0-9]+)$")


def trim_scope_index(last_name: str) -> str:
    """`InstanceNorm_1` -> `InstanceNorm`; `layer_0` stays (the toolchain only trims indices > 0)."""
    found = _INDEX.match(last_name)
    return found.group(1) if found and int(found.group(2)) > 0 else last_name


@dataclass(eq=False)
class Scope:
    name: str  # full path without a trailing slash; "" for the root
    parent: Scope | None = None
    children: dict[str, Scope] = field(default_factory=dict)  # by full name, in graph order
    nodes: list[str] = field(default_factory=list)  # nodes directly in this scope
    census: Counter[str] = field(default_factory=Counter)  # op type -> count, sub-scopes included

    @property
    def last_name(self) -> str:
        """The last name part with its index trimmed: what a pattern's suffix is compared with."""
        return trim_scope_index(self.name.rpartition("/")[2])

    def op_count(self, op_type: str) -> int:
        """How many nodes of `op_type` are in the scope or its sub-scopes; -1 when none (toolchain)."""
        return self.census.get(op_type, -1)

    def descendants(self) -> Iterator[Scope]:
        """Every sub-scope, depth first, parents before children."""
        for child in self.children.values():
            yield child
            yield from child.descendants()

    def all_nodes(self) -> list[str]:
        """Nodes in this scope and all its sub-scopes."""
        return self.nodes + [n for sub in self.descendants() for n in sub.nodes]


class ScopeTree:
    def __init__(self, graph: Graph):
        self.root = Scope("")
        self.scopes: dict[str, Scope] = {"": self.root}
        for node in graph:
            parts = node.name.split("/")
            scope = self.root
            scope.census[node.op] += 1
            for depth in range(1, len(parts)):
                name = "/".join(parts[:depth])
                child = self.scopes.get(name)
                if child is None:
                    child = self.scopes[name] = Scope(name, scope)
                    scope.children[name] = child
                scope = child
                scope.census[node.op] += 1
            scope.nodes.append(node.name)

    def __getitem__(self, name: str) -> Scope:
        return self.scopes[name]

    def __contains__(self, name: object) -> bool:
        return name in self.scopes
