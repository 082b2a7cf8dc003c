"""What a layout is: the boxes and edges the view draws, their positions, and a JSON form for the disk cache.

Coordinates are scene pixels, y pointing down, node positions are centres.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TypeVar

from fuselens.core.graph.opclass import Category

SCOPE_PREFIX = "scope:"
FRAME_PREFIX = "open scope:"  # a scope box opened in place: the frame around its content


R = TypeVar("R", "LayoutNode", "LayoutEdge")


def copy_with(record: R, **changes: object) -> R:
    """`dataclasses.replace` for boxes and edges without calling `__init__` again (they have no
    `__post_init__`): opening a box in a 20k-node overview moves thousands of them, and `replace`
    (its field walk) took a third of the layout worker's time, time the GUI thread waits for the lock."""
    copy = object.__new__(type(record))
    copy.__dict__.update(record.__dict__)
    copy.__dict__.update(changes)
    return copy


@dataclass(frozen=True)
class LayoutNode:
    key: str  # the graph node's name, SCOPE_PREFIX + scope for a collapsed scope box, FRAME_PREFIX + scope open
    op: str  # op type shown; a fused node shows its fused op type, a scope box "scope"
    title: str  # short name shown under the op
    category: Category
    members: tuple[str, ...]  # graph nodes drawn by this box (itself, or every node of the scope)
    weights: tuple[str, ...] = ()  # constants (or Identity reads of them) folded into this box
    weight_text: str = ""  # shapes of the folded weights, one line
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0
    open: bool = False  # opened in place: a frame around its content, which are boxes of their own
    parent: str = ""  # key of the open box this box is drawn inside ("" at the top)
    original: str = ""  # a fused node's body box: the original node it is a copy of

    @property
    def is_scope(self) -> bool:
        return self.key.startswith(SCOPE_PREFIX)

    @property
    def scope(self) -> str:
        """The scope a scope box or an open scope's frame draws ("" for any other box)."""
        for prefix in (SCOPE_PREFIX, FRAME_PREFIX):
            if self.key.startswith(prefix):
                return self.key[len(prefix):]
        return ""

    @property
    def rect(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom)."""
        return (self.x - self.width / 2, self.y - self.height / 2, self.x + self.width / 2, self.y + self.height / 2)


@dataclass(frozen=True)
class LayoutEdge:
    source: str  # layout node keys
    target: str
    tensor: str  # the producer tensor, `name` or `name:port`; control edges `^name`
    label: str  # tensor shape, "" when unknown
    control: bool = False
    points: tuple[tuple[float, float], ...] = ()  # B-spline control points (dot) or a polyline (layered)
    spline: bool = True


@dataclass
class Layout:
    nodes: dict[str, LayoutNode]
    edges: list[LayoutEdge]
    owner: dict[str, str]  # every graph node -> key of the box that draws it
    width: float = 0.0
    height: float = 0.0
    engine: str = "dot"  # "dot" or "layered"
    notice: str = ""  # why the fallback was used
    seconds: float = 0.0
    collapsed: frozenset[str] = frozenset()
    scopes: tuple[str, ...] = ()  # scopes that can be collapsed (two or more drawn nodes)
    cached: bool = False
    # boxes opened in place, in order: (key, scopes collapsed inside it); `previous` is this
    # layout before the last of them was opened, so closing it restores that layout exactly
    opened: tuple[tuple[str, frozenset[str]], ...] = ()
    previous: Layout | None = None

    def place(self, positions: dict[str, tuple[float, float]]) -> None:
        """Move every box to its centre in `positions` (boxes are frozen, so they are replaced)."""
        self.nodes = {key: copy_with(node, x=positions[key][0], y=positions[key][1])
                      for key, node in self.nodes.items()}

    def to_json(self) -> dict:
        return {"nodes": [asdict(n) for n in self.nodes.values()], "edges": [asdict(e) for e in self.edges],
                "owner": self.owner, "width": self.width, "height": self.height, "engine": self.engine,
                "notice": self.notice, "seconds": self.seconds, "collapsed": sorted(self.collapsed),
                "scopes": list(self.scopes)}

    @classmethod
    def from_json(cls, data: dict) -> Layout:
        nodes = {}
        for n in data["nodes"]:
            n = dict(n, members=tuple(n["members"]), weights=tuple(n["weights"]))
            nodes[n["key"]] = LayoutNode(**n)
        edges = [LayoutEdge(**dict(e, points=tuple(tuple(p) for p in e["points"]))) for e in data["edges"]]
        return cls(nodes, edges, data["owner"], data["width"], data["height"], data["engine"], data["notice"],
                   data["seconds"], frozenset(data["collapsed"]), tuple(data["scopes"]))
