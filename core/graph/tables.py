"""The Graph's node tables: name -> NodeDef over the containers its nodes sit in (a .pb's records, an
edit's arena, the source graph's), and name -> position over an array (`Positions`), without a dict of
objects per node."""

from __future__ import annotations

from array import array
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any

import numpy as np

from fuselens.core.graph import proto


class Positions(Mapping[str, int]):
    """Graph.topological_index(): node name -> position, read from the graph's arrays (no dict per graph)."""

    def __init__(self, ids: dict[str, int], positions: array):
        self._ids, self._positions = ids, positions

    def __getitem__(self, name: str) -> int:
        position = self._positions[self._ids[name]]
        if position < 0:
            raise KeyError(name)
        return position

    def __iter__(self) -> Iterator[str]:
        names = list(self._ids)
        return (names[i] for i in sorted(range(len(names)), key=self._positions.__getitem__)
                if self._positions[i] >= 0)

    def __len__(self) -> int:
        return sum(1 for position in self._positions if position >= 0)


class NodeTable(Mapping[str, proto.NodeDef]):
    """`Graph.nodes`: name -> NodeDef in GraphDef order, read from the containers that hold the nodes (a
    parsed GraphDef's repeated field, the records of a .pb read or of a pass's edit). A NodeDef's Python
    object is made when asked for and lives as long as its user keeps it: one held per node took ~160 B,
    3.2 MB on a 20k-node graph, for every graph a pass built too."""

    __slots__ = ("containers", "ids", "where")

    def __init__(self, ids: dict[str, int], containers: list[Any], where: array):
        # where[i]: node i's container (its index in `containers`) << 32 | its position in that container.
        self.ids, self.containers, self.where = ids, containers, where

    def __getitem__(self, name: str) -> proto.NodeDef:
        where = self.where[self.ids[name]]
        return self.containers[where >> 32][where & 0xFFFFFFFF]

    def get(self, name: str, default: Any = None) -> Any:
        i = self.ids.get(name)
        if i is None:
            return default
        where = self.where[i]
        return self.containers[where >> 32][where & 0xFFFFFFFF]

    def __contains__(self, name: object) -> bool:
        return name in self.ids

    def holding(self, key: bytes) -> frozenset[str]:
        """The nodes that may hold `key` (an attribute's name): every one that does, and perhaps a few that do
        not. A node kept as its bytes is not decoded to say so (core.graph.wire.NodeRecords.holders)."""
        codes = np.frombuffer(self.where, dtype=np.int64)
        container, position = codes >> 32, codes & 0xFFFFFFFF
        held = np.ones(len(codes), dtype=bool)
        for i, records in enumerate(self.containers):
            if hasattr(records, "holders"):
                mine = container == i
                held[mine] = np.isin(position[mine], records.holders(key))
        names = list(self.ids)
        return frozenset(names[i] for i in np.flatnonzero(held).tolist())

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def values(self) -> ValuesView[proto.NodeDef]:
        return _NodeValues(self)

    def items(self) -> ItemsView[str, proto.NodeDef]:
        return _NodeItems(self)


class _NodeValues(ValuesView):  # type: ignore[type-arg]
    """A NodeTable's NodeDefs in order, read from the containers without a name lookup each."""

    def __iter__(self) -> Iterator[proto.NodeDef]:
        containers = self._mapping.containers
        return (containers[where >> 32][where & 0xFFFFFFFF] for where in self._mapping.where)


class _NodeItems(ItemsView):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[tuple[str, proto.NodeDef]]:
        return zip(self._mapping, self._mapping.values())
