"""What changed between two graphs, grouped by the pass that changed it.

Any two graphs: two stages of a GE dump (`PreRunBegin` -> `PreRunAfterAfterPrecisionRefine`),
a model and FuseLens's fused graph, or a model and a stage. Nodes pair by name. A node that is
gone is credited to the node that now stands for it (the toolchain's `_datadump_original_op_names`,
FuseLens's `_fused_nodes`), and every change to the passes that node names and its originals did
not (`pass_name` accumulates, so only the newly added ones did the work between the two graphs).
The same pairing gives each node its counterparts on the other side, for synced selection.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from fuselens.core.ascend.ge.convert import DESC_ATTRS
from fuselens.core.ascend.ge.provenance import PROVENANCE_ATTRS, ToolchainProvenance, provenance_table
from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Provenance, Rewrite

NO_PASS = "(no pass named)"
# Attributes that change at every stage without meaning anything to a fusion (ids, memory offsets).
VOLATILE_ATTRS = frozenset({"id", "stream_id", "input_i", "output_i", "workspace", "workspace_bytes", "src_index",
                            "dst_index", "src_name", "dst_name", "input_name", "is_input_const",
                            "_unconnected_inputs", "_fusion_pass", "_fused_nodes"})
_DESC_KEYS = {key for keys in DESC_ATTRS.values() for key in keys}


@dataclass(frozen=True)
class NodeChange:
    """One node removed, added or changed, with the passes credited and the nodes on the other side."""

    name: str
    op: str
    kind: str  # removed | added | changed
    passes: tuple[str, ...]
    related: tuple[str, ...] = ()  # removed: the nodes that absorbed it; added: the originals it stands for
    details: tuple[str, ...] = ()  # changed: what changed ("op A -> B", "inputs", "shape [..] -> [..]")

    @property
    def group(self) -> str:
        return ", ".join(self.passes) or NO_PASS

    def to_json(self) -> dict[str, Any]:
        return {"node": self.name, "op": self.op, "change": self.kind, "passes": list(self.passes),
                "related": list(self.related), "details": list(self.details)}


@dataclass
class GraphDiff:
    before_label: str
    after_label: str
    before_nodes: int
    after_nodes: int
    changes: list[NodeChange] = field(default_factory=list)
    unchanged: int = 0
    counterparts: dict[str, list[str]] = field(default_factory=dict)  # before node -> after nodes
    origins: dict[str, list[str]] = field(default_factory=dict)  # after node -> before nodes

    def of_kind(self, kind: str) -> list[NodeChange]:
        return [c for c in self.changes if c.kind == kind]

    def by_pass(self) -> dict[str, list[NodeChange]]:
        """Changes grouped by the passes credited, groups in the order they first appear."""
        groups: dict[str, list[NodeChange]] = defaultdict(list)
        for change in self.changes:
            groups[change.group].append(change)
        return dict(groups)

    def provenance(self, before: Graph, after: Graph) -> Provenance:
        """The diff as the mapping the window reads (diff colours, synced selection): each after
        node that stands for other before nodes, each changed node and each node that went away,
        recorded under the passes the toolchain credits."""
        credit = {c.name: c.group for c in self.changes}
        provenance = Provenance(tuple(before.nodes))
        for name in after.nodes:
            absorbed = tuple(o for o in self.origins.get(name, ()) if o != name and o not in after)
            if name not in before:
                provenance.record(Rewrite(credit.get(name, NO_PASS), -1, removed=absorbed, created=(name,)))
            elif absorbed or name in credit:
                provenance.record(Rewrite(credit.get(name, NO_PASS), -1, removed=absorbed, modified=(name,)))
        for change in self.of_kind("removed"):
            if not change.related:
                provenance.record(Rewrite(change.group, -1, removed=(change.name,)))
        return provenance

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before_label, "after": self.after_label, "before_nodes": self.before_nodes,
                "after_nodes": self.after_nodes, "removed": len(self.of_kind("removed")),
                "added": len(self.of_kind("added")), "changed": len(self.of_kind("changed")),
                "unchanged": self.unchanged,
                "by_pass": {group: [c.to_json() for c in changes] for group, changes in self.by_pass().items()}}


def diff_graphs(before: Graph, after: Graph, *, before_label: str = "", after_label: str = "") -> GraphDiff:
    """Nodes removed, added and changed from `before` to `after`, each credited to passes."""
    result = GraphDiff(before_label or before.source, after_label or after.source, len(before), len(after))
    old = provenance_table(before)
    new = provenance_table(after)
    absorbed: dict[str, list[str]] = defaultdict(list)  # before node -> after nodes standing for it
    for name, record in new.items():
        for original in record.original_names:
            if original != name and original in before:
                absorbed[original].append(name)

    def new_passes(name: str) -> tuple[str, ...]:
        record = new.get(name)
        if record is None:
            return ()
        inherited = set(old[name].passes) if name in old else set()
        for original in record.original_names:
            if original in old:
                inherited |= set(old[original].passes)
        return tuple(p for p in record.passes if p not in inherited)

    for node in before:
        if node.name in after:
            continue
        absorbers = tuple(absorbed.get(node.name, ()))
        passes = tuple(dict.fromkeys(p for a in absorbers for p in new_passes(a)))
        result.changes.append(NodeChange(node.name, before.op_type(node.name), "removed", passes, absorbers))
    for node in after:
        if node.name in before:
            details = _differences(before, after, node.name)
            if details:
                result.changes.append(NodeChange(node.name, after.op_type(node.name), "changed",
                                                 new_passes(node.name), (), details))
            else:
                result.unchanged += 1
            continue
        record = new.get(node.name, ToolchainProvenance(node.name))
        originals = tuple(o for o in record.original_names if o in before)
        result.changes.append(NodeChange(node.name, after.op_type(node.name), "added", new_passes(node.name),
                                         originals))
    result.counterparts = {n: [n] if n in after else list(absorbed.get(n, ())) for n in before.nodes}
    result.origins = {n: [n] if n in before else [o for o in new[n].original_names if o in before] if n in new else []
                      for n in after.nodes}
    return result


def _differences(before: Graph, after: Graph, name: str) -> tuple[str, ...]:
    a, b = before.node(name), after.node(name)
    found = []
    if before.op_type(name) != after.op_type(name):
        found.append(f"op {before.op_type(name)} -> {after.op_type(name)}")
    if [str(r) for r in before.inputs(name)] != [str(r) for r in after.inputs(name)]:
        found.append("inputs " + ", ".join(str(r) for r in before.inputs(name)) + " -> "
                     + ", ".join(str(r) for r in after.inputs(name)))
    if sorted(before.control_inputs(name)) != sorted(after.control_inputs(name)):
        found.append("control inputs")
    for key in sorted(_DESC_KEYS):
        if key in a.attr and key in b.attr and a.attr[key] != b.attr[key]:
            found.append(f"{key.strip('_').replace('_', ' ')} {_short(before.attr(name, key))} -> "
                         f"{_short(after.attr(name, key))}")
    if before.attr(name, "pass_name") != after.attr(name, "pass_name"):
        found.append("pass_name " + ", ".join(after.attr(name, "pass_name") or []))
    skip = VOLATILE_ATTRS | _DESC_KEYS | set(PROVENANCE_ATTRS)
    keys = sorted(k for k in set(a.attr) | set(b.attr) if k not in skip and (k not in a.attr or k not in b.attr
                                                                           or a.attr[k] != b.attr[k]))
    if keys:
        found.append("attrs " + ", ".join(keys))
    return tuple(found)


def _short(value: Any) -> str:
    if isinstance(value, list):
        return "(" + "; ".join(_short(v) for v in value) + ")"
    if isinstance(value, tuple):
        return "[" + ",".join("?" if d is None else str(d) for d in value) + "]"
    return "?" if value is None else str(value)


def format_diff(diff: GraphDiff, *, limit: int = 40) -> str:
    """The diff as text: a count line, then per pass group its added, removed and changed nodes."""
    lines = [f"{diff.before_label} ({diff.before_nodes} nodes) -> {diff.after_label} ({diff.after_nodes} nodes): "
             f"{len(diff.of_kind('removed'))} removed, {len(diff.of_kind('added'))} added, "
             f"{len(diff.of_kind('changed'))} changed, {diff.unchanged} unchanged"]
    marks = {"added": "+", "removed": "-", "changed": "~"}
    for group, changes in diff.by_pass().items():
        lines.append(f"{group}:")
        ordered = sorted(changes, key=lambda c: ("added", "removed", "changed").index(c.kind))
        for change in ordered[:limit]:
            text = f"  {marks[change.kind]} {change.name} ({change.op})"
            if change.kind == "added" and change.related:
                text += " <- " + ", ".join(change.related)
            elif change.kind == "removed" and change.related:
                text += " -> " + ", ".join(change.related)
            elif change.details:
                text += ": " + "; ".join(change.details)
            lines.append(text)
        if len(ordered) > limit:
            lines.append(f"  ... {len(ordered) - limit} more (--json for all)")
    return "\n".join(lines)

