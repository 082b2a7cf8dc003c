"""What TensorFlow's op registry says about an op's outputs, statefulness and attribute defaults,
read from resources/op_outputs.json instead of importing TensorFlow.

A fused node's FunctionDef needs exactly this: each output's dtype (from a fixed type, a type
attribute or a type-list attribute), the output argument names a body node's inputs are written
with (`node:output_arg:index`, counted through `number_attr`), whether the function is stateful,
and the default attributes TensorFlow's importer would add. scripts/build_op_outputs.py writes the
table from the installed TensorFlow; an op missing from it is looked up in TensorFlow's registry
(importing TensorFlow), and an op neither knows is refused in words.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import proto
from fuselens.core.package_data import resource
from fuselens.core.tfimport import import_tensorflow

TABLE_PATH = resource("op_outputs.json")
_ARG_FIELDS = ("type", "type_attr", "number_attr", "type_list_attr")


@dataclass(frozen=True)
class OutputArg:
    """One output argument of an op definition (a fixed `type`, or the attributes that give it)."""

    name: str
    type: int = 0
    type_attr: str = ""
    number_attr: str = ""
    type_list_attr: str = ""


@dataclass(frozen=True)
class Output:
    """One output tensor of a node: `name:arg:index` inside a function, and its dtype."""

    arg: str
    index: int
    dtype: int


@dataclass(frozen=True)
class OpInfo:
    outputs: tuple[OutputArg, ...]
    stateful: bool = False
    defaults: Mapping[str, proto.AttrValue] | None = None

    def node_outputs(self, node: proto.NodeDef) -> list[Output]:
        """The node's output tensors in port order (number and type-list attributes expanded)."""
        found: list[Output] = []
        for arg in self.outputs:
            if arg.type_list_attr:
                types = list(self._attr(node, arg.type_list_attr).list.type)
            else:
                dtype = arg.type or self._attr(node, arg.type_attr).type
                types = [dtype] * (self._attr(node, arg.number_attr).i if arg.number_attr else 1)
            found.extend(Output(arg.name, i, dtype) for i, dtype in enumerate(types))
        return found

    def _attr(self, node: proto.NodeDef, key: str) -> proto.AttrValue:
        if key in node.attr:
            return node.attr[key]
        default = (self.defaults or {}).get(key)
        if default is None:
            raise FuseLensError(f"node {node.name!r} ({node.op}) has no attribute {key!r}, which its outputs need")
        return default


def op_entry(op_def: Any) -> dict[str, Any]:
    """An OpDef (TensorFlow's class or ours) as its table entry: outputs, stateful, defaults."""
    entry: dict[str, Any] = {"out": [{"name": arg.name, **{f: getattr(arg, f) for f in _ARG_FIELDS if getattr(arg, f)}}
                                     for arg in op_def.output_arg]}
    if op_def.is_stateful:
        entry["stateful"] = True
    defaults = {a.name: json_format.MessageToDict(a.default_value) for a in op_def.attr if a.HasField("default_value")}
    if defaults:
        entry["defaults"] = defaults
    return entry


@functools.cache
def _table() -> dict[str, str]:
    """Op -> its table entry as JSON text, decoded when the op is first asked for (`_registered`): the
    whole table decoded is ~2 MB of Python objects for 1,910 ops, of which a model uses a few dozen."""
    return {op: json.dumps(entry, separators=(",", ":"))
            for op, entry in json.loads(TABLE_PATH.read_text())["ops"].items()}


def in_table(op: str) -> bool:
    """Whether `op` is described by the table (so asking about it never imports TensorFlow)."""
    return op in _table()


@functools.cache
def _registered(op: str) -> OpInfo | None:
    """An op from the table, else from TensorFlow's own registry (imports TensorFlow); None if unknown there too."""
    text = _table().get(op)
    entry = json.loads(text) if text is not None else None
    if entry is None:
        import_tensorflow()
        from tensorflow.python.framework import op_def_registry

        op_def = op_def_registry.get(op)
        if op_def is None:
            return None
        entry = op_entry(op_def)
    defaults = {k: json_format.ParseDict(v, proto.AttrValue()) for k, v in entry.get("defaults", {}).items()}
    return OpInfo(tuple(OutputArg(**arg) for arg in entry["out"]), entry.get("stateful", False), defaults)


def op_info(op: str, functions: Mapping[str, proto.FunctionDef]) -> OpInfo:
    """The definition of `op`: a function of the graph's library, else a TensorFlow op."""
    function = functions.get(op)
    if function is not None:
        signature = function.signature
        return OpInfo(tuple(OutputArg(a.name, *(getattr(a, f) for f in _ARG_FIELDS)) for a in signature.output_arg),
                      signature.is_stateful)
    info = _registered(op)
    if info is None:
        raise FuseLensError(f"{op!r} is neither a TensorFlow op nor a function of the graph's library")
    return info
