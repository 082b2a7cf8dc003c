"""Layouts cached by graph structure, in memory and as JSON files in the user cache.

Reopening a model, or expanding a scope again, then costs a dictionary lookup (or a file read in
a new session) instead of a `dot` run. Only `dot` layouts are cached: a fallback is tried again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.graph import Graph
from fuselens.core.graph.fused import FUSED_OP_TYPE_ATTR
from fuselens.core.layout.model import Layout

LAYOUT_VERSION = 3  # bump when the output changes, so stale disk-cache files are not reused
# Per graph: whether its shapes were inferred when hashed, and the hash of its nodes (see structure_key).
SHAPES_KEY, FUSED_KEY = b"_output_shapes", FUSED_OP_TYPE_ATTR.encode()
_graph_digests: WeakKeyDictionary[Graph, tuple[bool, Any]] = WeakKeyDictionary()


def structure_key(graph: Graph, collapsed: Iterable[str] = ()) -> str:
    """What the layout depends on: names, ops, wiring, shapes and collapse state, not weight values.

    Hashes the recorded shape and fused-type attributes as stored, unlike the drawn graph which
    asks `Graph`: a key costs no shape work, and keys stay those of the files already on disk. The
    graph's part is hashed once per graph (and again once its shapes are inferred): every scope
    opened or closed on a 20k-node graph asks for a key, and hashing its nodes took ~45 ms. Names, ops and
    wiring come from the graph's arrays (`Graph.wiring`); only the nodes that hold those attributes are decoded.
    """
    inferred = graph.shapes_ready and not graph.records_shapes  # edge labels from inferred shapes
    known = _graph_digests.get(graph)
    if known is None or known[0] != inferred:
        digest = hashlib.sha1(f"v{LAYOUT_VERSION}\n".encode())
        digest.update(graph.wiring())
        holders = graph.nodes.holding(SHAPES_KEY) | graph.nodes.holding(FUSED_KEY)  # the others are not decoded
        for name in sorted(holders, key=graph.node_id):
            node = graph.nodes[name]
            shapes = node.attr["_output_shapes"].SerializeToString() if "_output_shapes" in node.attr else b""
            fused = node.attr[FUSED_OP_TYPE_ATTR].s if FUSED_OP_TYPE_ATTR in node.attr else b""
            digest.update(f"{name}\0".encode() + shapes + b"\0" + fused + b"\n")
        if inferred:
            digest.update(b"inferred shapes\n")
        known = _graph_digests[graph] = (inferred, digest)
    digest = known[1].copy()
    for scope in sorted(collapsed):
        digest.update(f"collapsed\0{scope}\n".encode())
    return digest.hexdigest()


@dataclass
class LayoutCache:
    """Layouts by structure key: the `limit` most recently used in memory, every one on disk under `directory`.

    Least recently used goes first, so the layouts of the open model's two panes, asked for again
    on every scope toggle, stay in memory while other models come and go.
    """

    directory: Path | None = None
    limit: int = 32
    _memory: OrderedDict[str, Layout] = field(default_factory=OrderedDict)

    def get(self, key: str) -> Layout | None:
        if key in self._memory:
            self._memory.move_to_end(key)
            return self._memory[key]
        if self.directory is None:
            return None
        path = self.directory / f"{key}.json"
        try:
            layout = Layout.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or stale file: lay out again
        self._remember(key, layout)
        return layout

    def put(self, key: str, layout: Layout) -> None:
        self._remember(key, layout)
        if self.directory is not None:
            with contextlib.suppress(FuseLensError, OSError):  # a read-only cache folder only costs speed
                write_bytes_atomic(self.directory / f"{key}.json", json.dumps(layout.to_json()).encode())

    def _remember(self, key: str, layout: Layout) -> None:
        self._memory[key] = layout
        self._memory.move_to_end(key)
        while len(self._memory) > self.limit:
            self._memory.popitem(last=False)


def default_cache() -> LayoutCache:
    """The window's cache: `layouts/` in the user cache folder (~/.cache/fuselens unless overridden)."""
    from fuselens.core.formats.samples import cache_dir

    return LayoutCache(cache_dir() / "layouts")
