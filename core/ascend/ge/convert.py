"""GE graph messages (ge_proto's OpDef, ge_onnx's NodeProto) -> FuseLens's TF-style GraphDef.

Everything else in FuseLens (layout, diff colours, inspect, properties) reads `core.graph.Graph`,
so a dump becomes one: the op is GE's type (`Conv2D`, `AscBackend`, `Data`, `NetOutput`), inputs
are `name`, `name:port` and `^name` (GE's `name:-1`), and tensor descriptions become
`_output_shapes` (which the layout draws on edges, and which keeps TensorFlow's shape inference
from ever being asked about GE ops), `_output_dtypes` / `_output_layouts` and the same three
for inputs. Dtypes stay in GE's spelling (`DT_FLOAT16`): some (`DT_HIFLOAT8`) have no TF twin.
Other attributes keep their names; provenance ones (`pass_name`, ...) are untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tensorboard.compat.proto import types_pb2

from fuselens.core.graph import TensorRef, proto

GE_TYPE_PREFIX = "ge:"  # ge_onnx writes every op type as "ge:" + type (so Netron shows control inputs)
OUTPUT_SHAPES_ATTR = "_output_shapes"
DESC_ATTRS = {  # the attributes a tensor description turns into, per direction
    "input": ("_input_shapes", "_input_dtypes", "_input_layouts"),
    "output": (OUTPUT_SHAPES_ATTR, "_output_dtypes", "_output_layouts"),
}
CONST_TYPES = frozenset({"Const", "Constant"})
UNCONNECTED_ATTR = "_unconnected_inputs"  # slots GE left empty (""), which a TF input list cannot hold
_ONNX_DESC = re.compile(r"^(input|output)_desc_(.+?):(\d+)$")
_ONNX_DESC_JSON = re.compile(r"^(input|output)_desc_(\d+)$")
_ONNX_DESC_COUNT = re.compile(r"^(input|output)_desc_nums$")
MAX_DESC_GAP = 64  # tensor indexes past a node's own count that a dump may still skip to
_TF_NAMES = {"DT_FLOAT16": "DT_HALF", "DT_BF16": "DT_BFLOAT16"}  # GE -> TF where the spelling differs
# OpDef fields that the ge_onnx form writes as attributes: both forms expose them the same way.
OPDEF_FIELDS = ("id", "stream_id", "input_name", "src_name", "src_index", "dst_name", "dst_index", "input_i",
                "output_i", "workspace", "workspace_bytes", "is_input_const", "subgraph_name")


class ConvertError(ValueError):
    """A message that is well-formed protobuf but not a usable graph; `node` names where."""

    def __init__(self, message: str, node: str = ""):
        super().__init__(message)
        self.node = node


@dataclass
class TensorDesc:
    """A GE tensor description reduced to what FuseLens shows."""

    dtype: str = "DT_UNDEFINED"
    shape: tuple[int, ...] | None = None  # GE dims; None when not recorded
    layout: str = ""


@dataclass
class NodeParts:
    """One node in a form both dump formats reduce to before it becomes a NodeDef."""

    name: str
    op: str
    inputs: list[str]
    attrs: dict[str, proto.AttrValue] = field(default_factory=dict)
    inputs_desc: list[TensorDesc] = field(default_factory=list)
    outputs_desc: list[TensorDesc] = field(default_factory=list)


def tf_dtype(ge_name: str) -> int:
    """The TF DataType enum of a GE dtype name (`DT_FLOAT16` -> DT_HALF), DT_INVALID if TF has none."""
    try:
        return types_pb2.DataType.Value(_TF_NAMES.get(ge_name, ge_name))
    except ValueError:
        return types_pb2.DT_INVALID


def dtype_label(ge_name: str) -> str:
    """`DT_FLOAT16` -> `float16` (TF's numpy-style name where there is one, else GE's name in lower case)."""
    tf = tf_dtype(ge_name)
    return proto.dtype_name(tf) if tf != types_pb2.DT_INVALID else ge_name.removeprefix("DT_").lower()


def shape_proto(dims: Iterable[int] | None) -> proto.TensorShapeProto:
    """GE dims as a TF shape: -1 is an unknown dimension, [-2] an unknown rank."""
    if dims is None:
        return proto.TensorShapeProto(unknown_rank=True)
    dims = list(dims)
    if dims == [-2]:
        return proto.TensorShapeProto(unknown_rank=True)
    return proto.shape_proto([None if d < 0 else d for d in dims])


def tensor_proto(dtype_name: str, dims: Iterable[int], data: bytes) -> proto.TensorProto:
    """A GE weight as a TF tensor that numpy can always read.

    Bytes that fit the dtype and shape give the real tensor; bytes of a dtype numpy lacks (hifloat8)
    stay as raw uint8; a weight the dump does not carry (DUMP_GE_GRAPH=2, or skipped) is an empty
    tensor, so whoever shows constants shows "no values" rather than failing or inventing zeros.
    """
    dims = list(dims)
    tensor = proto.TensorProto(dtype=tf_dtype(dtype_name))
    try:
        itemsize = proto.np_dtype(tensor.dtype).itemsize
    except ValueError:
        tensor.dtype, itemsize = types_pb2.DT_UINT8, 0
    count = 1
    for d in dims:
        count *= max(d, 0)
    if data and itemsize and count * itemsize == len(data):
        tensor.tensor_shape.CopyFrom(shape_proto(dims))
        tensor.tensor_content = data
    elif data:
        tensor.dtype = types_pb2.DT_UINT8
        tensor.tensor_shape.CopyFrom(proto.shape_proto([len(data)]))
        tensor.tensor_content = data
    else:
        tensor.tensor_shape.CopyFrom(proto.shape_proto([0]))
    return tensor


def parse_input(text: str, node: str) -> tuple[str, int] | None:
    """GE's `producer:port` (port -1: control); None for "" (an unconnected optional input)."""
    if text == "":
        return None
    name, sep, port = text.rpartition(":")
    if not sep:
        return text, 0
    try:
        return name, int(port)
    except ValueError:
        raise ConvertError(f"node {node}: input {text!r} is not 'producer:port'", node) from None


def node_def(parts: NodeParts) -> proto.NodeDef:
    """The NodeDef of one node: data inputs in slot order, then control inputs."""
    node = proto.NodeDef(name=parts.name, op=parts.op)
    data, control, unconnected = [], [], []
    for slot, text in enumerate(parts.inputs):
        parsed = parse_input(text, parts.name)
        if parsed is None:
            unconnected.append(slot)
        elif parsed[1] < 0:
            control.append(f"^{parsed[0]}")
        else:
            data.append(parsed[0] if parsed[1] == 0 else f"{parsed[0]}:{parsed[1]}")
    node.input.extend(data + list(dict.fromkeys(control)))
    for key, value in parts.attrs.items():
        node.attr[key].CopyFrom(value)
    if parts.op in CONST_TYPES and "value" not in node.attr:  # weights-free dumps: an empty, readable value
        dtype = parts.outputs_desc[0].dtype if parts.outputs_desc else "DT_FLOAT"
        node.attr["value"].tensor.CopyFrom(tensor_proto(dtype, (), b""))
    if unconnected:
        node.attr[UNCONNECTED_ATTR].list.i.extend(unconnected)
    for direction, descs in (("input", parts.inputs_desc), ("output", parts.outputs_desc)):
        shapes, dtypes, layouts = DESC_ATTRS[direction]
        if direction == "output" or descs:
            node.attr[shapes].list.shape.extend(shape_proto(d.shape) for d in descs)
            node.attr[shapes].list.SetInParent()  # present even with no outputs (NetOutput)
        if descs:
            node.attr[dtypes].list.s.extend(d.dtype.encode() for d in descs)
            node.attr[layouts].list.s.extend(d.layout.encode() for d in descs)
    return node


def fill_missing_output_shapes(nodes: list[proto.NodeDef]) -> None:
    """A dump without tensor descriptions (DUMP_GE_GRAPH=3) still needs one shape per output read,
    unknown, so nothing ever asks TensorFlow to infer shapes of GE ops."""
    ports: dict[str, int] = {}
    for node in nodes:
        for ref in map(TensorRef.parse, node.input):
            if not ref.control:
                ports[ref.node] = max(ports.get(ref.node, 0), ref.port + 1)
    for node in nodes:
        shapes = node.attr[OUTPUT_SHAPES_ATTR].list
        missing = ports.get(node.name, 0) - len(shapes.shape)
        shapes.shape.extend(proto.TensorShapeProto(unknown_rank=True) for _ in range(max(missing, 0)))


# ---- ge_proto: ge.proto.OpDef ---------------------------------------------------------------
def _ge_desc(desc: Any) -> TensorDesc:
    dtype = desc.DESCRIPTOR.fields_by_name["dtype"].enum_type.values_by_number.get(desc.dtype)
    return TensorDesc(dtype.name if dtype else f"DT_{desc.dtype}",
                      tuple(desc.shape.dim) if desc.HasField("shape") else (), desc.layout)


def _ge_dtype_name(number: int, enum: Any) -> str:
    value = enum.values_by_number.get(number)
    return value.name if value else f"DT_{number}"


def ge_attr(value: Any, name: str = "") -> proto.AttrValue:
    """One ge.proto.AttrDef as a TF AttrValue (kinds without a TF twin become readable strings)."""
    kind = value.WhichOneof("value")
    dtype_enum = value.DESCRIPTOR.file.enum_types_by_name["DataType"]
    out = proto.AttrValue()
    if kind in ("s", "bt", "expression"):
        out.s = getattr(value, kind)
    elif kind in ("i", "f", "b"):
        setattr(out, kind, getattr(value, kind))
    elif kind == "dt":
        type_name = _ge_dtype_name(value.dt, dtype_enum)
        if tf_dtype(type_name) != types_pb2.DT_INVALID:
            out.type = tf_dtype(type_name)
        else:
            out.s = type_name.encode()
    elif kind == "list":
        _ge_list(value.list, out, dtype_enum)
    elif kind == "func":
        out.func.name = value.func.name
        for key, inner in value.func.attr.items():
            out.func.attr[key].CopyFrom(ge_attr(inner, key))
    elif kind == "td":
        out.s = _desc_text(_ge_desc(value.td)).encode()
    elif kind == "t":
        desc = _ge_desc(value.t.desc)
        out.tensor.CopyFrom(tensor_proto(desc.dtype, desc.shape or (), value.t.data))
    elif kind == "g":
        out.s = f"<graph {value.g.name}: {len(value.g.op)} ops>".encode()
    elif kind in ("list_list_int", "list_list_float"):
        rows = value.list_list_int.list_list_i if kind == "list_list_int" else value.list_list_float.list_list_f
        cells = [list(row.list_i) if kind == "list_list_int" else list(row.list_f) for row in rows]
        out.s = json.dumps(cells).encode()
    elif kind is not None:
        raise ConvertError(f"attribute {name!r} has a kind FuseLens does not read ({kind})")
    return out


def _ge_list(values: Any, out: proto.AttrValue, dtype_enum: Any) -> None:
    out.list.SetInParent()
    out.list.s.extend(values.s)
    out.list.s.extend(values.bt)
    out.list.i.extend(values.i)
    out.list.f.extend(values.f)
    out.list.b.extend(values.b)
    for number in values.dt:
        out.list.type.append(tf_dtype(_ge_dtype_name(number, dtype_enum)))
    out.list.s.extend(_desc_text(_ge_desc(d)).encode() for d in values.td)
    for tensor in values.t:
        desc = _ge_desc(tensor.desc)
        out.list.tensor.append(tensor_proto(desc.dtype, desc.shape or (), tensor.data))
    out.list.s.extend(f"<graph {g.name}: {len(g.op)} ops>".encode() for g in values.g)
    for named in values.na:
        func = out.list.func.add(name=named.name)
        for key, inner in named.attr.items():
            func.attr[key].CopyFrom(ge_attr(inner, key))


def _desc_text(desc: TensorDesc) -> str:
    shape = "?" if desc.shape is None else "[" + ",".join(str(d) for d in desc.shape) + "]"
    return f"{desc.dtype} {shape} {desc.layout}".strip()


def ge_op_parts(op: Any) -> NodeParts:
    """A ge.proto.OpDef's name, type, inputs, attributes, OpDef fields and tensor descriptions."""
    attrs: dict[str, proto.AttrValue] = {}
    for key in sorted(op.attr):
        try:
            attrs[key] = ge_attr(op.attr[key], key)
        except ConvertError as e:
            raise ConvertError(f"node {op.name}: {e}", op.name) from None
    for name in OPDEF_FIELDS:
        value = getattr(op, name)
        if isinstance(value, int):
            if value:
                attrs[name] = proto.AttrValue(i=value)
        elif len(value):
            attrs[name] = _list_attr(list(value))
    return NodeParts(op.name, op.type, list(op.input), attrs,
                     [_ge_desc(d) for d in op.input_desc], [_ge_desc(d) for d in op.output_desc])


def _list_attr(values: list[Any]) -> proto.AttrValue:
    out = proto.AttrValue()
    out.list.SetInParent()
    if all(isinstance(v, str) for v in values):
        out.list.s.extend(v.encode() for v in values)
    elif all(isinstance(v, bool) for v in values):
        out.list.b.extend(values)
    else:
        out.list.i.extend(int(v) for v in values)
    return out


# ---- ge_onnx: onnx NodeProto ----------------------------------------------------------------
def onnx_attr(attribute: Any, node: str) -> proto.AttrValue:
    """One onnx AttributeProto as a TF AttrValue; GE writes only the six scalar and list kinds."""
    out = proto.AttrValue()
    kind = type(attribute).AttributeType.Name(attribute.type)
    if kind == "UNDEFINED":  # IR before the type field: guess from the value set
        kind = next((k for k, f in (("FLOAT", "f"), ("INT", "i"), ("STRING", "s")) if attribute.HasField(f)), "")
        kind = kind or next((k for k, f in (("FLOATS", "floats"), ("INTS", "ints"), ("STRINGS", "strings"))
                             if len(getattr(attribute, f))), "STRINGS")
    if kind == "FLOAT":
        out.f = attribute.f
    elif kind == "INT":
        out.i = attribute.i
    elif kind == "STRING":
        out.s = attribute.s
    elif kind in ("FLOATS", "INTS", "STRINGS"):
        out.list.SetInParent()
        {"FLOATS": out.list.f, "INTS": out.list.i, "STRINGS": out.list.s}[kind].extend(
            getattr(attribute, kind.lower()))
    elif kind == "TENSOR":
        t = attribute.t
        out.s = f"<tensor {list(t.dims)}>".encode()
    elif kind == "GRAPH":
        out.s = f"<graph {attribute.g.name}: {len(attribute.g.node)} nodes>".encode()
    else:
        raise ConvertError(f"node {node}: attribute {attribute.name!r} has a kind FuseLens does not read "
                           f"({kind})", node)
    return out


def onnx_node_parts(node: Any) -> NodeParts:
    """A ge_onnx NodeProto: `ge:` type prefix dropped, `input_desc_*:i` / `output_desc_*:i` folded into
    tensor descriptions (the JSON form GE uses for 20 or more tensors too)."""
    op = node.op_type.removeprefix(GE_TYPE_PREFIX)
    attrs: dict[str, proto.AttrValue] = {}
    descs: dict[str, dict[int, TensorDesc]] = {"input": {}, "output": {}}
    counts = {"input": 0, "output": 0}
    for attribute in node.attribute:
        name = attribute.name
        if found := _ONNX_DESC_COUNT.match(name):
            counts[found.group(1)] = attribute.i
        elif found := _ONNX_DESC.match(name):
            direction, key, index = found.group(1), found.group(2), int(found.group(3))
            desc = descs[direction].setdefault(index, TensorDesc(shape=()))
            if key == "dtype":
                desc.dtype = attribute.s.decode("utf-8", "replace")
            elif key == "shape":
                desc.shape = tuple(attribute.ints)
            elif key == "layout":
                desc.layout = attribute.s.decode("utf-8", "replace")
        elif found := _ONNX_DESC_JSON.match(name):
            descs[found.group(1)][int(found.group(2))] = _json_desc(attribute.s, node.name, name)
        else:
            attrs[name] = onnx_attr(attribute, node.name)
    for key in [k for k in attrs if k.endswith("_data") and f"{k[:-5]}_desc_dtype" in attrs]:
        base = key[:-5]  # a weight at DUMP_GE_GRAPH=1: value_desc_dtype, value_desc_shape, value_data
        shape = list(attrs[f"{base}_desc_shape"].list.i) if f"{base}_desc_shape" in attrs else []
        attrs[base] = proto.AttrValue(tensor=tensor_proto(attrs[f"{base}_desc_dtype"].s.decode(), shape,
                                                          attrs.pop(key).s))
    for direction, found in descs.items():  # an index far past the tensors the node has is a broken dump
        limit = max(counts[direction], len(found)) + MAX_DESC_GAP
        if found and max(found) >= limit:
            raise ConvertError(f"node {node.name}: {direction}_desc index {max(found)} is far beyond its "
                               f"{max(counts[direction], len(found))} {direction} tensors", node.name)
    ordered = {d: [descs[d].get(i, TensorDesc()) for i in range(max(counts[d], max(descs[d], default=-1) + 1))]
               for d in descs}
    return NodeParts(node.name, op, list(node.input), attrs, ordered["input"], ordered["output"])


def _json_desc(text: bytes, node: str, attr: str) -> TensorDesc:
    try:
        data = json.loads(text)
        shape = data.get("shape")
        return TensorDesc(str(data.get("dtype", "DT_UNDEFINED")),
                          tuple(int(d) for d in shape) if isinstance(shape, list) else None,
                          str(data.get("layout", "")))
    except (ValueError, TypeError, AttributeError):
        raise ConvertError(f"node {node}: attribute {attr!r} is not a JSON tensor description", node) from None


def graph_def(parts: Iterable[NodeParts]) -> proto.GraphDef:
    """A GraphDef of converted nodes, each with one `_output_shapes` entry per output it is read at."""
    nodes = [node_def(p) for p in parts]
    fill_missing_output_shapes(nodes)
    out = proto.GraphDef()
    out.node.extend(nodes)
    return out
