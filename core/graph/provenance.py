"""Provenance: which original nodes became which new nodes, across every pass of a pipeline.

The before/after view, the diff colours, the match stepper and the kernel-to-node links all
read this one mapping.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["unchanged", "modified", "new", "removed"]


@dataclass(frozen=True)
class Rewrite:
    """What one applied match did to the graph the pass saw."""

    pass_id: str
    match_index: int
    removed: tuple[str, ...]  # nodes of that graph that are gone
    modified: tuple[str, ...] = ()  # nodes kept by name whose weights or inputs changed
    created: tuple[str, ...] = ()  # new nodes

    @property
    def before(self) -> tuple[str, ...]:
        return self.removed + self.modified

    @property
    def after(self) -> tuple[str, ...]:
        return self.modified + self.created

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.pass_id, "match": self.match_index, "removed": list(self.removed),
                "modified": list(self.modified), "created": list(self.created)}


@dataclass
class Provenance:
    """Composes rewrites in order into original <-> final node mappings."""

    original_nodes: tuple[str, ...]
    rewrites: list[Rewrite] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._original_set = frozenset(self.original_nodes)
        # The origins of each node a rewrite touched; an original node no rewrite touched or removed is its own
        # origin, without an entry (a frozenset per node was 0.16 s and ~20 MB on the 100k-node graph).
        self._origin: dict[str, frozenset[str]] = {}
        self._removed: set[str] = set()  # original nodes removed and not made again under their name
        self._touched: set[str] = set()
        self._by_rewrite: dict[str, Rewrite] = {}
        self._touched_from: dict[str, list[str]] | None = None  # original -> touched final nodes, when asked

    def record(self, rewrite: Rewrite) -> None:
        self.rewrites.append(rewrite)
        sources = self._sources(rewrite) if rewrite.after else frozenset()
        for name in rewrite.removed:
            self._origin.pop(name, None)
            self._removed.add(name)
        for name in rewrite.after:
            self._origin[name] = sources | self.origins(name)
            self._removed.discard(name)
            self._touched.add(name)
            self._by_rewrite[name] = rewrite
        self._touched_from = None

    def _sources(self, rewrite: Rewrite) -> frozenset[str]:
        """The original nodes a rewrite's nodes came from; for a removal alone (a pass's dead constants, thousands
        of them on a big graph) none is asked: a set of one per name was most of the 100k graph's provenance."""
        sources: set[str] = set()
        for name in rewrite.before:
            found = self._origin.get(name)
            if found is None:
                sources.add(name)
            else:
                sources.update(found)
        return frozenset(sources)

    # final graph -> original graph
    def origins(self, final_name: str) -> frozenset[str]:
        found = self._origin.get(final_name)
        if found is not None:
            return found
        return frozenset((final_name,)) if self._untouched(final_name) else frozenset()

    def _untouched(self, original_name: str) -> bool:
        """Whether an original node is in the final graph as it was."""
        return (original_name in self._original_set and original_name not in self._removed
                and original_name not in self._touched)

    # original graph -> final graph
    def descendants(self, original_name: str) -> list[str]:
        """Final nodes made from `original_name`: itself if no pass touched it, and the touched nodes
        whose origins hold it (indexed on first use: a selection asks per node, and a walk of every
        final node per call took 0.2 ms each on a 20k-node graph)."""
        found = list(self.touched_from().get(original_name, ()))
        if self._untouched(original_name):
            found.append(original_name)
        return sorted(found)

    def touched_from(self) -> dict[str, list[str]]:
        """Original node -> the touched final nodes made from it, indexed once per set of rewrites (a window's
        fusion worker asks first: 30 ms on the 100k graph, else in the GUI thread at the first selection)."""
        if self._touched_from is None:
            touched_from, origin = defaultdict(list), self._origin
            for name in self._touched:  # a touched node has its origins recorded, or none left (removed later)
                for source in origin.get(name, ()):
                    touched_from[source].append(name)
            self._touched_from = touched_from
        return self._touched_from

    def status(self, final_name: str) -> Status:
        if final_name not in self._touched:
            return "unchanged"
        return "modified" if final_name in self._original_set else "new"

    def original_status(self, original_name: str) -> Status:
        if self._untouched(original_name):
            return "unchanged"
        if original_name in self._origin:
            return "modified"
        return "removed"

    def rewrite_of(self, final_name: str) -> Rewrite | None:
        return self._by_rewrite.get(final_name)

    def original_to_final(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for final, sources in self._origin.items():
            for src in sources:
                out[src].append(final)
        for name in self.original_nodes:
            if self._untouched(name):
                out[name].append(name)
        return {k: sorted(v) for k, v in out.items()}

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rewrites]
