"""The name-scope tree of a graph, built from node names as the TF parser's ScopeTree does.

A node `a/b/c` lives directly in scope `a/b`; it is counted in the op census of `a/b`, `a` and
the root (the toolchain increments the count on every ancestor), so a scope's census covers
its sub-scopes too. `_1`-style indices are trimmed from a scope's last name (`InstanceNorm_1`
has the last name `InstanceNorm`), so patterns name scopes without their index.
"""

from __future__ import annotations

import re
import sys
import weakref
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from fuselens.core.graph import Graph

_INDEX = re.compile(r"^(.+)_([0-9]+)$")


def trim_scope_index(last_name: str) -> str:
    """`InstanceNorm_1` -> `InstanceNorm`; `layer_0` stays (the toolchain only trims indices > 0)."""
    found = _INDEX.match(last_name)
    return found.group(1) if found and int(found.group(2)) > 0 else last_name


@dataclass(eq=False, slots=True, weakref_slot=True)
class Scope:
    name: str  # full path without a trailing slash; "" for the root
    # The parent is held weakly: a tree without cycles is freed as soon as it is dropped (on a big graph
    # a tree is ~10 MB, which would otherwise wait for a full garbage collection).
    parent_ref: weakref.ReferenceType[Scope] | None = None
    children: dict[str, Scope] = field(default_factory=dict)  # by full name, in graph order
    nodes: list[str] = field(default_factory=list)  # nodes directly in this scope
    census: Counter[str] = field(default_factory=Counter)  # op type -> count, sub-scopes included

    @property
    def parent(self) -> Scope | None:
        """The enclosing scope (while its tree lives); None for the root."""
        return self.parent_ref() if self.parent_ref is not None else None

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
        for name in graph.nodes:  # each op from the graph's op codes: no node decoded
            op = sys.intern(graph.op(name))  # one string per op type as a census key, not one per scope and node
            scope = self.root
            scope.census[op] += 1
            end = name.find("/")
            while end >= 0:  # each enclosing scope's path: the name up to each "/"
                path = name[:end]
                end = name.find("/", end + 1)
                child = self.scopes.get(path)
                if child is None:
                    child = self.scopes[path] = Scope(path, weakref.ref(scope))
                    scope.children[path] = child
                scope = child
                scope.census[op] += 1
            scope.nodes.append(name)

    def __getitem__(self, name: str) -> Scope:
        return self.scopes[name]

    def __contains__(self, name: object) -> bool:
        return name in self.scopes
