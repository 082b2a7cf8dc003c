"""Big graphs, one scope level at a time: the first view collapses name scopes, a click opens one.

A 20k-node graph drawn node by node takes `dot` seconds to minutes and the scene is unreadable.
Above BIG_GRAPH_NODES drawn nodes the first view shows the scopes under the graph's common root
as boxes (a Keras model's layers, a synthetic graph's blocks); expanding a box opens only that
scope, and a scope that is itself big opens with its own sub-scopes collapsed. Fused nodes are
drawn in the scope of the nodes they replaced (`drawn_name`), so the after pane's scopes are the
before pane's.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable

from fuselens.core.graph import Graph

BIG_GRAPH_NODES = 1500  # above this many drawn nodes, the first view is collapsed
OPEN_SCOPE_NODES = 400  # a scope with more nodes than this opens with its sub-scopes collapsed


def drawn_name(graph: Graph, name: str) -> str:
    """The name a node is drawn (and collapsed) under: a fused node sits in the common scope of the
    nodes it replaced (`autofuse_pointwise_3_...` of block7's ops is drawn in `block7`)."""
    info = graph.fused_info(name)
    if info is None or not info.nodes or "/" in name:
        return name
    scope = posixpath.commonpath(info.nodes) if len(info.nodes) > 1 else posixpath.dirname(info.nodes[0])
    if scope in info.nodes:  # the common path is one of the nodes itself: its scope is one level up
        scope = posixpath.dirname(scope)
    return f"{scope}/{name}" if scope else name


def _children(names: Iterable[str], scope: str) -> dict[str, int]:
    """Sub-scopes one level under `scope` ("" = the top) that hold two or more of `names`, with counts."""
    prefix = f"{scope}/" if scope else ""
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        if name.startswith(prefix):
            rest = name[len(prefix):]
            if "/" in rest:
                counts[prefix + rest.split("/", 1)[0]] += 1
    return {s: c for s, c in counts.items() if c >= 2}


def overview_scopes(names: list[str], limit: int = BIG_GRAPH_NODES) -> frozenset[str]:
    """The scopes to collapse for a first view of these drawn names (none when they are few): the
    children of the deepest scope that holds nearly everything."""
    if len(names) <= limit:
        return frozenset()
    root = ""
    while True:
        children = _children(names, root)
        if len(children) != 1:
            return frozenset(children)
        (only, count), = children.items()
        if count < len(names) * 0.9:
            return frozenset(children)
        root = only  # one scope holds (nearly) everything, e.g. a Keras model's `resnet50_1`: go inside


def expand_scope(names: list[str], collapsed: frozenset[str], scope: str,
                 limit: int = OPEN_SCOPE_NODES) -> frozenset[str]:
    """`collapsed` with `scope` opened; a big scope shows its own sub-scopes as boxes."""
    inside = [n for n in names if n.startswith(scope + "/")]
    sub = frozenset(_children(inside, scope)) if len(inside) > limit else frozenset()
    return (collapsed - {scope}) | sub


def hidden_in(collapsed: frozenset[str], names: Iterable[str]) -> frozenset[str]:
    """The collapsed scopes that hide any of `names` (drawn names)."""
    found = set()
    for name in names:
        end = name.find("/")
        while end != -1:
            if name[:end] in collapsed:
                found.add(name[:end])
                break
            end = name.find("/", end + 1)
    return frozenset(found)
