"""Read one GE graph dump (`ge_proto_*.txt` or `ge_onnx_*.pbtxt`) into a FuseLens `Graph`.

Both files are protobuf text. `ge_proto` holds a `ge.proto.ModelDef`, read with the classes
built at import from `ge_ir.proto` beside this module (root graph first, then its subgraphs);
`ge_onnx` holds a `ge.onnx.ModelProto`, whose field names and numbers are ONNX's, so the `onnx`
package's class reads it (its `_pb2` module only: the rest of onnx is not needed). The ge_proto
form carries more: the onnx form keeps string attributes (`pass_name`, the original-op names)
only with DUMP_GE_GRAPH=1 and no attributes at all with DUMP_GE_GRAPH=3.

Bad input is one FuseLensError naming the file (and the line where there is one). A field this
schema does not know (a newer GE) is skipped with a note, except inside an attribute value,
where it would mean an attribute kind nobody can show.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from fuselens.core.ascend.ge.convert import (
    CONST_TYPES,
    ConvertError,
    NodeParts,
    dtype_label,
    ge_op_parts,
    graph_def,
    onnx_node_parts,
    parse_input,
)
from fuselens.core.ascend.ge.protoparse import message_classes
from fuselens.core.ascend.ge.provenance import ToolchainProvenance, provenance_table
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import read_text
from fuselens.core.graph import Graph, proto
from fuselens.core.package_data import package_file

GE_PROTO = "ge_proto"
GE_ONNX = "ge_onnx"
FORMATS = (GE_PROTO, GE_ONNX)
SCHEMA = package_file(__package__, "ge_ir.proto")
_ATTR_MESSAGES = ("ge.proto.AttrDef", "onnx.AttributeProto")  # an unknown field here = an unknown attribute kind
_UNKNOWN_FIELD = re.compile(r'Message type "([\w.]+)" has no field named "(\w+)"')
_UNKNOWN_ATTR_TYPE = re.compile(r'Enum type "(onnx\.AttributeProto)\.AttributeType" has no value named (\w+)')
_DUMP_NAME = re.compile(r"^ge_(proto|onnx)_\d+_")


@cache
def ge_messages() -> dict[str, Any]:
    """The ge.proto message classes, built from ge_ir.proto once per process."""
    return message_classes(SCHEMA)


def onnx_model_class() -> Any:
    """onnx's ModelProto class (imported on first use: ~0.3 s, only when an onnx dump is read)."""
    from onnx import onnx_ml_pb2

    return onnx_ml_pb2.ModelProto


@dataclass(frozen=True)
class GeDump:
    """One dump file as graphs: the root graph and its subgraphs by name."""

    path: str
    format: str  # ge_proto | ge_onnx
    name: str  # the graph's own name in the dump (ge_default_..., the TF graph name)
    graph: Graph
    subgraphs: dict[str, Graph]
    with_weights: bool  # Const nodes carry their values (DUMP_GE_GRAPH=1)
    notes: tuple[str, ...] = ()

    def provenance(self) -> dict[str, ToolchainProvenance]:
        """Nodes of the root graph that carry pass names or original-op names."""
        return provenance_table(self.graph)

    def summary(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "graph_name": self.name, "nodes": len(self.graph),
                "subgraphs": {name: len(g) for name, g in self.subgraphs.items()},
                "with_weights": self.with_weights, "notes": list(self.notes)}


HEAD_BYTES = 65536  # what a content test reads of a file
# The first field of a ge.proto.ModelDef / ge.onnx.ModelProto in text form (comment lines skipped).
_PROTO_OPENING = re.compile(rb"\A(?:\s*#[^\n]*\n)*\s*(?:name|version|custom_version|graph|attr)\s*[:{]")
_ONNX_OPENING = re.compile(rb"\A(?:\s*#[^\n]*\n)*\s*(?:ir_version|producer_name|producer_version|domain|"
                           rb"model_version|doc_string|graph|opset_import|metadata_props)\s*[:{]")
_PROTO_OP = re.compile(rb"^\s*op\s*\{", re.M)
_PROTO_TYPE = re.compile(rb'^\s*type:\s*"', re.M)


def head_format(head: bytes) -> str | None:
    """ge_proto | ge_onnx when a file's first 64 KiB read as a GE dump's, else None.

    A ge_onnx dump opens like any ONNX text model and names its ops `ge:<type>`; a ge_proto dump opens
    with a ModelDef field (as a rule its `graph { ... }` block, model-level `attr { ... }` blocks after it)
    and holds `op { ... }` blocks with a `type:`. A TF GraphDef in text (`node { op: ... }`) is neither.
    """
    if _ONNX_OPENING.match(head) and b'op_type: "ge:' in head:
        return GE_ONNX
    if _PROTO_OPENING.match(head) and _PROTO_OP.search(head) and _PROTO_TYPE.search(head):
        return GE_PROTO
    return None


def recognises(head: bytes) -> bool:
    """Whether a file whose first 64 KiB are `head` is a GE graph dump (ge_proto or ge_onnx), by content alone."""
    return head_format(head) is not None


def sniff_format(path: str | os.PathLike[str]) -> str | None:
    """ge_proto | ge_onnx by the file's first 64 KiB (any name: users rename dumps, and a dump's name can
    say ge_proto over ge_onnx text); by its name (`ge_onnx_*` / `ge_proto_*`) only when the content does
    not tell (an empty or cut file, which the reader then refuses in words); else None."""
    path = Path(path)
    if path.is_file():
        try:
            with open(path, "rb") as f:
                kind = head_format(f.read(HEAD_BYTES))
        except OSError:
            kind = None
        if kind is not None:
            return kind
    named = _DUMP_NAME.match(path.name)
    if named:
        return GE_ONNX if named.group(1) == "onnx" else GE_PROTO
    return None


def load_dump(path: str | os.PathLike[str], format: str | None = None, *, weights: bool = False) -> GeDump:
    """One dump file as a GeDump; FuseLensError naming the file (and line) when it cannot be.

    Weight payloads (DUMP_GE_GRAPH=1) are skipped unless `weights`: they make up nearly all of such
    a file (290 MB of escaped text for ResNet50) and protobuf's pure-Python text parser takes about
    half a minute over them, while nothing about fusion needs them.
    """
    path = Path(path)
    kind = format or sniff_format(path) or (GE_ONNX if path.suffix == ".pbtxt" else GE_PROTO)
    text = _read_text(path)
    notes: list[str] = []
    dropped = 0
    if not weights:
        text, dropped, size = drop_weight_payloads(text, kind)
        if dropped:
            notes.append(f"the values of {dropped} weights ({size / 1e6:.1f} MB of text) were not read")
    if kind == GE_ONNX:
        model = _parse(text, onnx_model_class()(), path, notes)
        name = model.graph.name
        parts = [_parts(onnx_node_parts, n, path, "") for n in model.graph.node]
        graphs = {name: _graph(parts, text, path, "")}
    else:
        model = _parse(text, ge_messages()["ModelDef"](), path, notes)
        if not model.graph:
            raise FuseLensError(f"{path}: holds no graph (a ge.proto.ModelDef with no graph in it)")
        name = model.graph[0].name
        graphs = {}
        for i, graph in enumerate(model.graph):
            where = "" if i == 0 else f"subgraph {graph.name}: "
            graphs[graph.name if i else name] = _graph([_parts(ge_op_parts, op, path, where) for op in graph.op],
                                                       text, path, where)
    root = graphs.pop(name) if name in graphs else next(iter(graphs.values()))
    return GeDump(str(path), kind, name, root, graphs, bool(dropped) or _with_weights(root), tuple(notes))


def drop_weight_payloads(text: str, kind: str, *, longer_than: int = 1024) -> tuple[str, int, int]:
    """The text with long weight strings emptied: ge_proto's TensorDef `data:` / AttrDef `bt:` lines, and
    ge_onnx's `s:` line of an attribute named `*_data`. Text format escapes newlines, so a payload is one
    line and the line count (and every error's line number) stays the same.
    Returns (text, payloads emptied, characters dropped)."""
    keys = ("data", "bt") if kind == GE_PROTO else ("s",)
    spans = []
    for key in keys:  # str.find, not a regex: ten times faster over hundreds of MB
        marker = f'{key}: "'
        at = text.find(marker)
        while at >= 0:
            line_start = text.rfind("\n", 0, at) + 1
            value = at + len(marker)
            end = text.find("\n", value)
            end = len(text) if end < 0 else end
            if end - value > longer_than and not text[line_start:at].strip(" \t"):
                spans.append((value, end))
            at = text.find(marker, end)
    pieces, dropped, size, pos = [], 0, 0, 0
    for value, end in sorted(spans):
        if kind == GE_ONNX and not re.search(r'name: "[^"\n]*_data[^"\n]*"\s*$', text[max(0, value - 300):value - 4]):
            continue
        pieces += [text[pos:value], '"']
        dropped, size, pos = dropped + 1, size + end - value, end
    pieces.append(text[pos:])
    return "".join(pieces), dropped, size


def _parts(convert: Any, message: Any, path: Path, where: str) -> NodeParts:
    try:
        return convert(message)
    except ConvertError as e:
        raise FuseLensError(f"{path}: {where}{e}") from None


def _read_text(path: Path) -> str:
    text = read_text(path, "a GE graph dump", as_directory="a dump file (`fuselens stages` reads a folder)")
    if not text.strip(" \t\n\r\x0b\x0c"):  # the ASCII white space bytes.strip() drops
        raise FuseLensError(f"{path}: the file is empty")
    return text


def _parse(text: str, message: Any, path: Path, notes: list[str]) -> Any:
    """Strict text-format parse; unknown fields outside attribute values are skipped with a note."""
    try:
        return text_format.Parse(text, message)
    except text_format.ParseError as e:
        unknown = _UNKNOWN_FIELD.search(str(e))
        where = f"line {e.GetLine()}, column {e.GetColumn()}" if e.GetLine() else "unknown position"
        kind = unknown or _UNKNOWN_ATTR_TYPE.search(str(e))
        if kind and kind.group(1) in _ATTR_MESSAGES:
            raise FuseLensError(f"{path}, {where}: unknown attribute kind {kind.group(2)!r}") from None
        if not unknown:
            detail = re.sub(r"^'[^']*': ", "", str(e).split(" : ", 1)[-1])  # drop the echo of the line
            raise FuseLensError(f"{path}, {where}: not a readable {type(message).DESCRIPTOR.full_name} "
                                f"text dump ({detail})") from None
        notes.append(f"fields this FuseLens does not know were skipped (first at {where}: "
                     f"{unknown.group(1)}.{unknown.group(2)})")
    message.Clear()
    try:
        return text_format.Parse(text, message, allow_unknown_field=True)
    except text_format.ParseError as e:
        raise FuseLensError(f"{path}, line {e.GetLine()}: {str(e).split(' : ', 1)[-1]}") from None


def _graph(parts: list[NodeParts], text: str, path: Path, where: str) -> Graph:
    """The Graph of converted nodes, after the checks whose errors can name a line."""
    names = {p.name for p in parts}
    for p in parts:
        for raw in p.inputs:
            try:
                parsed = parse_input(raw, p.name)
            except ConvertError as e:
                raise FuseLensError(f"{path}{_line_of(text, raw, p.name)}: {where}{e}") from None
            if parsed is not None and parsed[0] not in names:
                raise FuseLensError(f"{path}{_line_of(text, raw, p.name)}: {where}node {p.name} reads {raw!r}, "
                                    "but no node of that name is in the graph (a dangling input)")
    if not parts:
        raise FuseLensError(f"{path}: {where}the graph has no nodes")
    return Graph(graph_def(parts), source=str(path))


def _line_of(text: str, quoted: str, node: str) -> str:
    """`, line N` of the first `"quoted"` after the node's name (the text names nodes `name: "..."`)."""
    start = max(text.find(f'name: "{node}"'), 0)
    index = text.find(f'"{quoted}"', start)
    return f", line {text.count(chr(10), 0, index) + 1}" if index >= 0 else ""


def _with_weights(graph: Graph) -> bool:
    def has_value(node: proto.NodeDef) -> bool:
        return "value" in node.attr and bool(node.attr["value"].tensor.tensor_content)

    return any(has_value(node) for node in graph if node.op in CONST_TYPES)


def is_dump(path: str | os.PathLike[str]) -> bool:
    """A file FuseLens would read as a GE dump (used where a model path may also be a dump)."""
    return Path(path).is_file() and sniff_format(path) is not None



def dump_summary(dump: GeDump) -> dict[str, Any]:
    """`fuselens inspect` of a dump: the model summary, GE's Data nodes as inputs, the dump's own facts and
    the nodes the toolchain fused."""
    from fuselens.core.graph.inspect import summarize

    summary = summarize(dump.graph)
    graph = dump.graph
    summary["inputs"] = [{"name": n.name, "dtype": dtype_label((graph.attr(n.name, "_output_dtypes") or ["?"])[0]),
                          "shape": _listed(graph.output_shape(n.name))} for n in graph if n.op == "Data"]
    summary["dump"] = {k: v for k, v in dump.summary().items() if k != "path"}
    summary["toolchain_fusions"] = [r.to_json() for r in dump.provenance().values() if r.fused]
    return summary


def _listed(shape: tuple[int | None, ...] | None) -> list[int | None] | None:
    return None if shape is None else list(shape)


def format_dump_summary(summary: dict[str, Any]) -> str:
    from fuselens.core.graph.inspect import format_summary

    facts = summary["dump"]
    lines = [format_summary(summary),
             f"dump: {facts['format']}, graph {facts['graph_name'] or '(unnamed)'}, "
             f"{'with' if facts['with_weights'] else 'without'} weights"]
    if facts["subgraphs"]:
        lines.append("subgraphs: " + ", ".join(f"{name} ({n} nodes)" for name, n in facts["subgraphs"].items()))
    fusions = summary["toolchain_fusions"]
    if fusions:
        lines.append(f"toolchain fusions ({len(fusions)}):")
        for record in fusions[:20]:
            by = ", ".join(record["pass_name"] + record["pass_name_ub"]) or "no pass named"
            lines.append(f"  {record['node']} <- {', '.join(record['original_names'])} [{by}]")
        if len(fusions) > 20:
            lines.append(f"  ... {len(fusions) - 20} more (--json for all)")
    lines += [f"note: {n}" for n in facts["notes"]]
    return "\n".join(lines)
