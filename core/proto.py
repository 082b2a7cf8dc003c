"""TensorFlow protobuf messages without importing TensorFlow.

tensorboard ships the same GraphDef / NodeDef / FunctionDef messages (same wire format) and
imports in ~0.2 s instead of ~3 s for TensorFlow, so loading, inspecting, fusing and drawing a
model never waits for TensorFlow. `to_tf` / `from_tf` cross the boundary by bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tensorboard.compat.proto import (
    attr_value_pb2,
    function_pb2,
    graph_pb2,
    node_def_pb2,
    op_def_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)
from tensorboard.util import tensor_util

from core.tfimport import import_tensorflow

GraphDef = graph_pb2.GraphDef
NodeDef = node_def_pb2.NodeDef
FunctionDef = function_pb2.FunctionDef
FunctionDefLibrary = function_pb2.FunctionDefLibrary
AttrValue = attr_value_pb2.AttrValue
TensorProto = tensor_pb2.TensorProto
TensorShapeProto = tensor_shape_pb2.TensorShapeProto
OpDefArg = op_def_pb2.OpDef.ArgDef

DT_FLOAT = types_pb2.DT_FLOAT
DT_HALF = types_pb2.DT_HALF
DT_INT32 = types_pb2.DT_INT32
DT_INT64 = types_pb2.DT_INT64
DT_BOOL = types_pb2.DT_BOOL

_NP_BY_DTYPE = {
    types_pb2.DT_FLOAT: np.float32,
    types_pb2.DT_HALF: np.float16,
    types_pb2.DT_DOUBLE: np.float64,
    types_pb2.DT_INT32: np.int32,
    types_pb2.DT_INT64: np.int64,
    types_pb2.DT_INT8: np.int8,
    types_pb2.DT_UINT8: np.uint8,
    types_pb2.DT_INT16: np.int16,
    types_pb2.DT_BOOL: np.bool_,
}
_DTYPE_BY_NP = {np.dtype(v): k for k, v in _NP_BY_DTYPE.items()}


def dtype_name(dtype: int) -> str:
    """'float32', 'float16', ... for a DataType enum (TF's own spelling of numpy names)."""
    np_type = _NP_BY_DTYPE.get(dtype)
    if np_type is not None:
        return np.dtype(np_type).name
    return types_pb2.DataType.Name(dtype).removeprefix("DT_").lower()


def np_dtype(dtype: int) -> np.dtype:
    if dtype not in _NP_BY_DTYPE:
        raise ValueError(f"no numpy type for {types_pb2.DataType.Name(dtype)}")
    return np.dtype(_NP_BY_DTYPE[dtype])


def tf_dtype(array_dtype: Any) -> int:
    return _DTYPE_BY_NP[np.dtype(array_dtype)]


def tensor_to_ndarray(tensor: TensorProto) -> np.ndarray:
    return tensor_util.make_ndarray(tensor)


def ndarray_to_tensor(array: np.ndarray) -> TensorProto:
    array = np.asarray(array)
    proto = TensorProto(dtype=tf_dtype(array.dtype))
    proto.tensor_shape.CopyFrom(shape_proto(array.shape))
    proto.tensor_content = np.ascontiguousarray(array).tobytes()
    return proto


def shape_proto(shape: tuple[int | None, ...] | list[int | None] | None) -> TensorShapeProto:
    if shape is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in shape])


def shape_tuple(shape: TensorShapeProto) -> tuple[int | None, ...] | None:
    """Shape as a tuple with None for unknown dims; None for unknown rank."""
    if shape.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in shape.dim)


def to_tf(message: Any) -> Any:
    """The same message as TensorFlow's own class (imports TensorFlow)."""
    import_tensorflow()
    from tensorflow.core.framework import function_pb2 as tf_function_pb2
    from tensorflow.core.framework import graph_pb2 as tf_graph_pb2

    cls = {GraphDef: tf_graph_pb2.GraphDef, FunctionDef: tf_function_pb2.FunctionDef}[type(message)]
    return cls.FromString(message.SerializeToString())


def from_tf(message: Any) -> GraphDef:
    """A TensorFlow GraphDef as our GraphDef class."""
    return GraphDef.FromString(message.SerializeToString())
