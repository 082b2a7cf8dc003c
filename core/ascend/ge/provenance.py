"""What the Ascend toolchain writes on a node it made: which passes touched it, what it replaced.

GE's graph fusion appends each pass to the list attribute `pass_name` (a fused node inherits the
names of the nodes it replaced, then its own pass is added); UB fusion writes one string
`pass_name_ub`; `_datadump_original_op_names` / `_types` list the original (TF) nodes a node
stands for, which is how a fused kernel maps back to the user's model. These attributes are the
toolchain's provenance, as `_fusion_pass` / `_fused_nodes` are FuseLens's own (`core/graph/fused.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuselens.core.graph import Graph
from fuselens.core.graph.fused import FUSED_NODES_ATTR, FUSION_PASS_ATTR

PASS_NAME_ATTR = "pass_name"
PASS_NAME_UB_ATTR = "pass_name_ub"
ORIGINAL_NAMES_ATTR = "_datadump_original_op_names"
ORIGINAL_TYPES_ATTR = "_datadump_original_op_types"
ORIGINAL_FUSION_GRAPH_ATTR = "_original_fusion_graph"
PROVENANCE_ATTRS = (PASS_NAME_ATTR, PASS_NAME_UB_ATTR, ORIGINAL_NAMES_ATTR, ORIGINAL_TYPES_ATTR)


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(str(v) for v in value if v != "")


@dataclass(frozen=True)
class ToolchainProvenance:
    """One node's record of the passes that made it and the original nodes it stands for."""

    node: str
    pass_names: tuple[str, ...] = ()  # graph fusion passes, oldest first
    ub_pass_names: tuple[str, ...] = ()  # the UB fusion pass (one, in practice)
    original_names: tuple[str, ...] = ()
    original_types: tuple[str, ...] = ()

    @property
    def passes(self) -> tuple[str, ...]:
        """Every pass named on the node, graph fusion first."""
        return self.pass_names + tuple(p for p in self.ub_pass_names if p not in self.pass_names)

    @property
    def fused(self) -> bool:
        """The node replaced other nodes (more than one original, or one under another name)."""
        return len(self.original_names) > 1 or any(n != self.node for n in self.original_names)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "pass_name": list(self.pass_names), "pass_name_ub": list(self.ub_pass_names),
                "original_names": list(self.original_names), "original_types": list(self.original_types)}


def toolchain_provenance(graph: Graph, name: str) -> ToolchainProvenance | None:
    """The toolchain's provenance attributes on a node (None when it carries none).

    A FuseLens fused node (`_fusion_pass`, `_fused_nodes`) answers in the same terms, so a GE
    dump stage and a FuseLens prediction can be set side by side.
    """
    node = graph.node(name)
    if not any(key in node.attr for key in (*PROVENANCE_ATTRS, FUSION_PASS_ATTR)):
        return None
    own = _strings(graph.attr(name, FUSION_PASS_ATTR))
    return ToolchainProvenance(
        node=name,
        pass_names=_strings(graph.attr(name, PASS_NAME_ATTR)) + own,
        ub_pass_names=_strings(graph.attr(name, PASS_NAME_UB_ATTR)),
        original_names=_strings(graph.attr(name, ORIGINAL_NAMES_ATTR)) or _strings(graph.attr(name, FUSED_NODES_ATTR)),
        original_types=_strings(graph.attr(name, ORIGINAL_TYPES_ATTR)),
    )


def provenance_table(graph: Graph) -> dict[str, ToolchainProvenance]:
    """Every node that carries provenance, by name, in graph order."""
    found = {}
    for node in graph:
        record = toolchain_provenance(graph, node.name)
        if record is not None:
            found[node.name] = record
    return found
