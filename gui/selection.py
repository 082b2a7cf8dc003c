"""The one shared selection: a node picked in either pane, the match list or a chart is selected everywhere.

Selection is held in both graphs' names at once (original and fused), translated through the
pipeline's provenance, so each view just reads its side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from fuselens.core.graph.provenance import Provenance
from fuselens.passes.base import Match, NearMiss


@dataclass(frozen=True)
class Selection:
    before: frozenset[str] = frozenset()  # original-graph node names
    after: frozenset[str] = frozenset()  # fused-graph node names
    origin: str = ""  # who selected: "before", "after", "matches", "search", a chart id, ...
    item: Match | NearMiss | None = None  # the match or near miss being shown, if any

    @property
    def empty(self) -> bool:
        return not self.before and not self.after


class SelectionModel(QObject):
    changed = Signal(object)  # Selection

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.provenance: Provenance | None = None
        self.current = Selection()

    def set_provenance(self, provenance: Provenance | None) -> None:
        """A new fusion result: the mapping changes, the selection is re-read through it."""
        self.provenance = provenance
        if not self.current.empty:
            if self.current.item is not None:
                self.select_item(self.current.item, origin=self.current.origin)
            else:
                self.select_original(self.current.before, origin=self.current.origin)

    def to_fused(self, original: Iterable[str]) -> frozenset[str]:
        if self.provenance is None:
            return frozenset(original)
        return frozenset(d for name in original for d in self.provenance.descendants(name))

    def to_original(self, fused: Iterable[str]) -> frozenset[str]:
        if self.provenance is None:
            return frozenset(fused)
        return frozenset(o for name in fused for o in self.provenance.origins(name))

    def select_original(self, names: Iterable[str], *, origin: str = "before") -> None:
        before = frozenset(names)
        self._set(Selection(before, self.to_fused(before), origin))

    def select_fused(self, names: Iterable[str], *, origin: str = "after") -> None:
        after = frozenset(names)
        self._set(Selection(self.to_original(after), after, origin))

    def select_item(self, item: Match | NearMiss, *, origin: str = "matches") -> None:
        """A match lights its nodes before and their replacement after; a near miss its nodes on both sides."""
        before = frozenset(item.nodes)
        self._set(Selection(before, self.to_fused(before), origin, item))

    def clear(self) -> None:
        self._set(Selection())

    def _set(self, selection: Selection) -> None:
        self.current = selection
        self.changed.emit(selection)
