"""The OM model as JSON (`atc --mode=1 --om=model.om --json=model.json`): what the toolchain fused, op by op.

GE writes the model's protobuf (ge_ir.proto's ModelDef) as JSON: a `graph` list whose graphs hold an `op`
list; each op's `attr` is a list of `{"key": ..., "value": ...}` entries (a protobuf map). A value is an
AttrDef: a string `{"s": "TbeConvDoubleInFusionPass"}`, a list `{"list": {"s": [...], "val_type": 1}}`
(an empty list keeps only `val_type`), or, in the tools that re-key it by name, `{"type": "LIST_STRING",
"value": [...]}`; newer writers C-escape those strings (protobuf's CEscape: octal escapes for non-ASCII
bytes), which is undone here. A fused op names the passes that made it in `pass_name` (a list: graph fusion
appends) and `pass_name_ub` (a string: UB fusion), and the original ops it stands for in
`_datadump_original_op_names`: the same provenance a GE `Build` dump carries (core/ascend/ge/provenance.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.ascend.ge.provenance import (
    ORIGINAL_NAMES_ATTR,
    ORIGINAL_TYPES_ATTR,
    PASS_NAME_ATTR,
    PASS_NAME_UB_ATTR,
    ToolchainProvenance,
)
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import read_text
from fuselens.core.wording import shown

HEAD_BYTES = 64 * 1024
GRAPH_LIST = re.compile(r'"graph"\s*:\s*\[\s*(?:\{|\])')
# GE's Pb2Json sorts keys, so a model's own `attr` list comes first; when it fills the first 64 KiB, that is
# all there is to see.
ATTR_LIST_FIRST = re.compile(r'^\{\s*"attr"\s*:\s*\[\s*\{\s*"key"\s*:')
# Newer Pb2Json writes a bytes field (AttrDef's `s`) through protobuf's CEscape: octal escapes, \' \" \\ \n ...
C_ESCAPE = re.compile(r"\\([0-7]{1,3}|[\\'\"nrt])")
C_LETTERS = {"n": 10, "r": 13, "t": 9}
WANTED = (PASS_NAME_ATTR, PASS_NAME_UB_ATTR, ORIGINAL_NAMES_ATTR, ORIGINAL_TYPES_ATTR)


@dataclass(frozen=True)
class OmOp:
    """One op of the model with the toolchain's provenance on it."""

    name: str
    op_type: str
    graph: str
    provenance: ToolchainProvenance

    @property
    def fused(self) -> bool:
        """A fusion made it: it stands for other ops, or a fusion pass named itself on it."""
        return self.provenance.fused or bool(self.provenance.passes)

    def to_json(self) -> dict[str, Any]:
        return {"graph": self.graph, "type": self.op_type, **self.provenance.to_json()}


@dataclass
class OmModel:
    """Every op of an OM model's graphs (subgraphs included), in the file's order."""

    source: str
    name: str
    graphs: list[str] = field(default_factory=list)
    ops: list[OmOp] = field(default_factory=list)

    def fused_ops(self) -> list[OmOp]:
        return [op for op in self.ops if op.fused]

    def table(self) -> dict[str, ToolchainProvenance]:
        """The fused ops' provenance by op name, as `provenance_table` gives a dump's."""
        return {op.name: op.provenance for op in self.fused_ops()}

    def op_types(self) -> dict[str, str]:
        """Every op's type by name."""
        return {op.name: op.op_type for op in self.ops}

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name, "graphs": self.graphs, "ops": len(self.ops),
                "fused_ops": [op.to_json() for op in self.fused_ops()]}


def recognises(head: bytes) -> bool:
    """The first bytes (up to 64 KiB) are an OM model as JSON: a JSON object holding a `graph` list of objects."""
    text = head[:HEAD_BYTES].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    return text.startswith("{") and (GRAPH_LIST.search(text) is not None or ATTR_LIST_FIRST.match(text) is not None)


def read_om_json(path: str | os.PathLike[str]) -> OmModel:
    """One OM model as JSON; FuseLensError naming the file otherwise."""
    path = Path(path)
    return parse_om_json(read_text(path, "an OM model as JSON"), str(path))


def parse_om_json(text: str, source: str = "<model.json>") -> OmModel:
    """The ops of an OM model's JSON text."""
    try:
        value = json.loads(text.lstrip("\ufeff"))
    except json.JSONDecodeError as e:
        raise FuseLensError(f"{source}, line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise FuseLensError(f"{source}: JSON nested too deep to be an OM model") from None
    graphs = value.get("graph") if isinstance(value, dict) else None
    if not isinstance(graphs, list):
        raise FuseLensError(f"{source}: {_described(value)}: not an OM model as JSON (expected an object with a "
                            "'graph' list of graphs holding 'op' entries, as atc --mode=1 writes)")
    model = OmModel(source, _text(value.get("name")))
    for index, graph in enumerate(graphs):
        if not isinstance(graph, dict):
            raise FuseLensError(f"{source}: graph {index} is {type(graph).__name__}, not a graph object")
        name = _text(graph.get("name")) or f"graph {index}"
        ops = graph.get("op", [])
        if not isinstance(ops, list):
            raise FuseLensError(f"{source}: graph {shown(name)}'s 'op' is {type(ops).__name__}, not a list of ops")
        model.graphs.append(name)
        for op in ops:
            if isinstance(op, dict) and _text(op.get("name")):
                model.ops.append(_op(op, name))
    return model


def _op(op: Mapping[str, Any], graph: str) -> OmOp:
    attrs = _attrs(op.get("attr"))
    name = _text(op.get("name"))
    return OmOp(name, _text(op.get("type")), graph, ToolchainProvenance(
        node=name, pass_names=attrs.get(PASS_NAME_ATTR, ()), ub_pass_names=attrs.get(PASS_NAME_UB_ATTR, ()),
        original_names=attrs.get(ORIGINAL_NAMES_ATTR, ()), original_types=attrs.get(ORIGINAL_TYPES_ATTR, ())))


def _attrs(attr: Any) -> dict[str, tuple[str, ...]]:
    """The provenance attributes of an op's `attr`: a list of key/value entries, or an object keyed by name."""
    if isinstance(attr, Mapping):
        pairs = list(attr.items())
    elif isinstance(attr, list):
        pairs = [(e.get("key"), e.get("value")) for e in attr if isinstance(e, Mapping)]
    else:
        return {}
    return {key: _strings(value) for key, value in pairs if key in WANTED}


def _strings(value: Any, depth: int = 0) -> tuple[str, ...]:
    """An AttrDef's string or string list, in any of the encodings above; () for anything else."""
    if isinstance(value, str):
        return (_unescaped(value),) if value else ()
    if isinstance(value, list):
        return tuple(_unescaped(v) for v in value if isinstance(v, str) and v)
    if not isinstance(value, Mapping) or depth > 2:
        return ()
    for key in ("s", "list", "value"):
        if key in value:
            return _strings(value[key], depth + 1)
    return ()


def _unescaped(text: str) -> str:
    """A CEscape'd string as it was ("a\\'b" -> "a'b", "\\303\\251" -> "é"); others as they are."""
    if "\\" not in text:
        return text
    out, last = bytearray(), 0
    for m in C_ESCAPE.finditer(text):
        code = m[1]
        out += text[last:m.start()].encode("utf-8")
        out.append((int(code, 8) if code[0] in "01234567" else C_LETTERS.get(code, ord(code))) & 0xFF)
        last = m.end()
    out += text[last:].encode("utf-8", "replace")
    return out.decode("utf-8", "replace")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _described(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(shown(k) for k in list(value)[:4])
        return f"a JSON object with keys {keys}" if keys else "an empty JSON object"
    if isinstance(value, list):
        return f"a JSON list of {len(value)} items"
    return f"a JSON {type(value).__name__}" if value is not None else "JSON null"
