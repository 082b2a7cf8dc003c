"""Topological order: Kahn's loop, shared by `topological_sort` (any keys) and the Graph's own order over
its edge arrays (core.graph.queries)."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Hashable, Iterable, MutableSequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def topological_sort(keys: Iterable[K], edges: Iterable[tuple[K, K]]) -> list[K]:
    """Kahn's order of `keys` along `edges` (source before target), the one topological sort of FuseLens.

    Among ready keys the one listed first goes first, so the order follows the order the model
    was written in (kernel names and counters depend on it). Keys on a cycle, and keys after
    one, are left out: a result shorter than `keys` means a cycle. Edges naming a key not in
    `keys` are ignored.
    """
    position = {key: i for i, key in enumerate(keys)}
    listed = list(position)
    count = len(listed)
    waiting = [0] * count
    # Edge s -> t as the int s * count + t, sorted: the successors of a key sit together, and no
    # per-key list is allocated (a big graph would otherwise leave the garbage collector busy).
    codes: list[int] = []
    for source, target in edges:
        s, t = position.get(source), position.get(target)
        if s is not None and t is not None:
            codes.append(s * count + t)
            waiting[t] += 1
    codes.sort()
    first = [bisect.bisect_left(codes, i * count) for i in range(count + 1)]
    order: list[int] = []
    kahn(waiting, lambda i: (code % count for code in codes[first[i]:first[i + 1]]), order)
    return [listed[i] for i in order]


def kahn(waiting: list[int], successors: Callable[[int], Iterable[int]], order: MutableSequence[int]) -> None:
    """Kahn's loop over ids 0..len(waiting)-1, appending to `order`: `waiting[i]` counts i's predecessors
    not yet ordered (it is used up); among ready ids the smallest goes first (the order the model was
    written in). Shared by topological_sort() and the Graph's own order over its edge arrays."""
    ready = [i for i, deg in enumerate(waiting) if deg == 0]  # ascending, so already a heap
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for t in successors(i):
            waiting[t] -= 1
            if waiting[t] == 0:
                heapq.heappush(ready, t)

