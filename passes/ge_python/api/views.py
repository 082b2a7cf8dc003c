"""What a pass reads of the graph it runs on: `Node`, `TensorDesc`, `Tensor`, `DataType`, `Format`, and
`TargetGraph` (the graph `FusionBasePass.run` receives), as read-only views of a FuseLens graph.

A node shows what GE's TF parser made of it (passes/ge_python/optable.py): its GE op type and GE
attribute names (`get_attr("transpose_x1")` on a TensorFlow MatMul reads transpose_a), and GE's data
types. A view never edits the graph: a pass changes the graph through its replacement, and the editing
calls of GE's Node and Graph are reported as not provided.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, attr_value, proto
from fuselens.passes.ge_python.api.missing import missing_attribute, unsupported
from fuselens.passes.ge_python.optable import CONST_TYPES, node_attr_name, node_type


class DataType(IntEnum):
    """GE's data types, with GE's numbers."""

    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_INT8 = 2
    DT_INT32 = 3
    DT_UINT8 = 4
    DT_INT16 = 6
    DT_UINT16 = 7
    DT_UINT32 = 8
    DT_INT64 = 9
    DT_UINT64 = 10
    DT_DOUBLE = 11
    DT_BOOL = 12
    DT_STRING = 13
    DT_COMPLEX64 = 16
    DT_COMPLEX128 = 17
    DT_RESOURCE = 23
    DT_VARIANT = 26
    DT_BF16 = 27
    DT_UNDEFINED = 28


class Format(IntEnum):
    """The layouts a TensorFlow graph carries (GE's numbers); device layouts come later in GE."""

    FORMAT_NCHW = 0
    FORMAT_NHWC = 1
    FORMAT_ND = 2
    FORMAT_HWCN = 16


_GE_DTYPE = {proto.DT_FLOAT: DataType.DT_FLOAT, proto.DT_HALF: DataType.DT_FLOAT16, proto.DT_INT32: DataType.DT_INT32,
             proto.DT_INT64: DataType.DT_INT64, proto.DT_BOOL: DataType.DT_BOOL}
for _tf_name, _ge in (("DT_INT8", "DT_INT8"), ("DT_UINT8", "DT_UINT8"), ("DT_INT16", "DT_INT16"),
                      ("DT_UINT16", "DT_UINT16"), ("DT_UINT32", "DT_UINT32"), ("DT_UINT64", "DT_UINT64"),
                      ("DT_DOUBLE", "DT_DOUBLE"), ("DT_STRING", "DT_STRING"), ("DT_COMPLEX64", "DT_COMPLEX64"),
                      ("DT_COMPLEX128", "DT_COMPLEX128"), ("DT_RESOURCE", "DT_RESOURCE"),
                      ("DT_VARIANT", "DT_VARIANT"), ("DT_BFLOAT16", "DT_BF16")):
    _GE_DTYPE[proto.types_pb2.DataType.Value(_tf_name)] = DataType[_ge]
_FORMATS = {"NHWC": Format.FORMAT_NHWC, "NCHW": Format.FORMAT_NCHW}


def ge_data_type(tf_dtype: int) -> DataType:
    return _GE_DTYPE.get(tf_dtype, DataType.DT_UNDEFINED)


class Shape(list):
    """A shape as a list of dims (-1 for unknown)."""

    def get_shape_size(self) -> int:
        return int(np.prod(self)) if all(d >= 0 for d in self) else -1

    def is_unknown_shape(self) -> bool:
        return any(d < 0 for d in self)


class TensorDesc:
    """Shape, layout and data type of one tensor."""

    def __init__(self, shape: list[int] | None = None, data_format: Format = Format.FORMAT_ND,
                 data_type: DataType = DataType.DT_FLOAT):
        self._shape = Shape(shape or [])
        self._format, self._data_type = Format(data_format), DataType(data_type)
        self._origin_format = self._format

    @property
    def shape(self) -> Shape:
        return Shape(self._shape)

    origin_shape = shape

    @property
    def format(self) -> Format:
        return self._format

    @property
    def origin_format(self) -> Format:
        return self._origin_format

    @property
    def data_type(self) -> DataType:
        return self._data_type

    def get_shape(self) -> Shape:
        return self.shape

    get_origin_shape = get_shape

    def get_format(self) -> Format:
        return self._format

    def get_origin_format(self) -> Format:
        return self._origin_format

    def get_data_type(self) -> DataType:
        return self._data_type

    def set_shape(self, shape: list[int]) -> TensorDesc:
        self._shape = Shape(shape)
        return self

    set_origin_shape = set_shape

    def set_format(self, data_format: Format) -> TensorDesc:
        self._format = Format(data_format)
        return self

    def set_origin_format(self, data_format: Format) -> TensorDesc:
        self._origin_format = Format(data_format)
        return self

    def set_data_type(self, data_type: DataType) -> TensorDesc:
        self._data_type = DataType(data_type)
        return self

    def __repr__(self) -> str:
        return f"TensorDesc(shape={list(self._shape)}, format={self._format.name}, data_type={self._data_type.name})"

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


class Tensor:
    """A constant's value, as `Node.get_attr("value")` gives it."""

    def __init__(self, value: np.ndarray):
        self._value = np.asarray(value)

    @property
    def data(self) -> Any:
        return self._value.tolist()

    @property
    def data_type(self) -> DataType:
        return ge_data_type(proto.tf_dtype(self._value.dtype))

    @property
    def shape(self) -> Shape:
        return Shape(self._value.shape)

    @property
    def format(self) -> Format:
        return Format.FORMAT_ND

    def get_data(self) -> Any:
        return self.data

    def get_data_type(self) -> DataType:
        return self.data_type

    def get_shape(self) -> Shape:
        return self.shape

    def get_format(self) -> Format:
        return self.format

    def get_tensor_desc(self) -> TensorDesc:
        return TensorDesc(list(self._value.shape), Format.FORMAT_ND, self.data_type)

    def numpy(self) -> np.ndarray:
        """Not in GE's Tensor: the value as numpy, for FuseLens's own use."""
        return self._value.copy()

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


def tensor_desc(graph: Graph, node: str, port: int) -> TensorDesc:
    """The desc of one output of a graph node: its recorded shape (-1 for unknown dims), data type, layout."""
    shape = graph.output_shape(node, port) if node in graph else None
    dims = [-1 if d is None else int(d) for d in shape] if shape is not None else [-2]
    try:
        dtype = ge_data_type(graph.output_dtype(node, port))
    except (KeyError, ValueError, IndexError, FuseLensError):  # a GE op of a dump has no TensorFlow definition
        dtype = _dump_dtype(graph, node, port)
    data_format = _FORMATS.get(str(graph.attr(node, "data_format", "")), Format.FORMAT_ND)
    return TensorDesc(dims, data_format, dtype)


def _dump_dtype(graph: Graph, node: str, port: int) -> DataType:
    """A dump's data type, from the `_output_dtypes` GE wrote (in GE's spelling: DT_FLOAT, DT_FLOAT16)."""
    names = graph.attr(node, "_output_dtypes", []) if node in graph else []
    name = names[port] if isinstance(names, list) and port < len(names) else ""
    return DataType.__members__.get(str(name), DataType.DT_UNDEFINED)


class Node:
    """A node of the graph a pass runs on, as GE's TF parser names it."""

    def __init__(self, graph: Graph, name: str):
        self._graph, self._name = graph, name

    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        op = self._graph.op_type(self._name)
        return "Const" if op in CONST_TYPES else node_type(self._graph, self._name)

    def _tf_attr(self, key: str) -> str:
        return node_attr_name(self._graph, self.type, key)

    def has_attr(self, attr_name: str) -> bool:
        return self._tf_attr(attr_name) in self._graph.node(self._name).attr

    def get_attr(self, key: str) -> Any:
        if not isinstance(key, str):
            raise TypeError("Attribute key must be a string")
        attrs = self._graph.node(self._name).attr
        tf_key = self._tf_attr(key)
        if tf_key not in attrs:
            raise RuntimeError(f"Failed to get attribute '{key}' from Node")
        value = attr_value(attrs[tf_key])
        return Tensor(value) if isinstance(value, np.ndarray) else value

    def get_inputs_size(self) -> int:
        return len(self._graph.inputs(self._name))

    def get_outputs_size(self) -> int:
        try:
            return max(1, len(self._graph.node_outputs(self._name)))
        except FuseLensError:  # a GE op of a dump: as many outputs as GE described
            return max(1, len(self._graph.recorded_shapes(self._name) or []))

    def get_input_desc(self, index: int) -> TensorDesc:
        inputs = self._graph.inputs(self._name)
        if not 0 <= index < len(inputs):
            raise RuntimeError(f"Failed to get input desc for index {index}")
        return tensor_desc(self._graph, inputs[index].node, inputs[index].port)

    def get_output_desc(self, index: int) -> TensorDesc:
        if not 0 <= index < self.get_outputs_size():
            raise RuntimeError(f"Failed to get output desc for index {index}")
        return tensor_desc(self._graph, self._name, index)

    def get_in_data_nodes_and_port_indexes(self, in_index: int) -> tuple[Node, int]:
        inputs = self._graph.inputs(self._name)
        if not 0 <= in_index < len(inputs):
            raise RuntimeError(f"Node {self._name} has no input {in_index}")
        return Node(self._graph, inputs[in_index].node), inputs[in_index].port

    def get_out_data_nodes_and_port_indexes(self, out_index: int) -> list[tuple[Node, int]]:
        return [(Node(self._graph, c.node), c.index) for c in self._graph.consumers(self._name, out_index)]

    def get_in_control_nodes(self) -> list[Node]:
        return [Node(self._graph, n) for n in self._graph.control_inputs(self._name)]

    def get_out_control_nodes(self) -> list[Node]:
        return [Node(self._graph, n) for n in self._graph.control_consumers(self._name)]

    def set_attr(self, key: str, value: Any) -> None:
        unsupported("Node.set_attr", "a pass changes the graph through its replacement")

    def update_input_desc(self, index: int, desc: TensorDesc) -> None:
        unsupported("Node.update_input_desc", "a pass changes the graph through its replacement")

    def update_output_desc(self, index: int, desc: TensorDesc) -> None:
        unsupported("Node.update_output_desc", "a pass changes the graph through its replacement")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other._graph is self._graph and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"<Node {self._name} ({self.type})>"

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)


class TargetGraph:
    """The graph `FusionBasePass.run(graph, context)` receives: read-only (its editing calls are reported
    as not provided)."""

    def __init__(self, graph: Graph):
        self._graph = graph

    @property
    def name(self) -> str:
        return self._graph.source

    def get_all_nodes(self) -> list[Node]:
        return [Node(self._graph, name) for name in self._graph.nodes]

    get_direct_nodes = get_all_nodes

    def find_node_by_name(self, name: str) -> Node:
        if name not in self._graph:
            raise RuntimeError(f"Failed to find node {name}")
        return Node(self._graph, name)

    def __getattr__(self, name: str) -> Any:
        missing_attribute(self, name)
