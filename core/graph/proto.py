"""TensorFlow protobuf messages without importing TensorFlow.

tensorboard ships the same GraphDef / NodeDef / FunctionDef messages (same wire format) and
imports in ~0.2 s instead of ~3 s for TensorFlow, so loading, inspecting, fusing and drawing a
model never waits for TensorFlow. `to_tf` / `from_tf` cross the boundary by bytes.
"""

from __future__ import annotations

import math
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

from fuselens.core.errors import FuseLensError
from fuselens.core.tfimport import import_tensorflow

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
    types_pb2.DT_UINT16: np.uint16,
    types_pb2.DT_UINT32: np.uint32,
    types_pb2.DT_UINT64: np.uint64,
    types_pb2.DT_BOOL: np.bool_,
    types_pb2.DT_COMPLEX64: np.complex64,
    types_pb2.DT_COMPLEX128: np.complex128,
}
_DTYPE_BY_NP = {np.dtype(v): k for k, v in _NP_BY_DTYPE.items()}
# The types numpy lacks, by their name in ml_dtypes (also their numpy dtype's name). ml_dtypes is imported
# only when a tensor of one is met: its import takes ~0.9 s, more than the window's whole start-up may.
_ML_DTYPES = {
    types_pb2.DT_BFLOAT16: "bfloat16",
    types_pb2.DT_FLOAT8_E5M2: "float8_e5m2",
    types_pb2.DT_FLOAT8_E4M3FN: "float8_e4m3fn",
    types_pb2.DT_FLOAT4_E2M1FN: "float4_e2m1fn",
    types_pb2.DT_INT4: "int4",
    types_pb2.DT_UINT4: "uint4",
    types_pb2.DT_INT2: "int2",
    types_pb2.DT_UINT2: "uint2",
}
_ML_DTYPE_BY_NAME = {name: dtype for dtype, name in _ML_DTYPES.items()}
# Quantized types decode to their storage integer (TensorFlow wraps it in a one-field record).
_QUANTIZED = {
    types_pb2.DT_QINT8: np.int8,
    types_pb2.DT_QUINT8: np.uint8,
    types_pb2.DT_QINT16: np.int16,
    types_pb2.DT_QUINT16: np.uint16,
    types_pb2.DT_QINT32: np.int32,
}
# Which repeated field holds the values of a dtype when tensor_content is empty (TensorProto's layout).
_VALUE_FIELD = {
    types_pb2.DT_FLOAT: "float_val",
    types_pb2.DT_DOUBLE: "double_val",
    types_pb2.DT_HALF: "half_val",  # uint16 bit patterns in an int32 field
    types_pb2.DT_BFLOAT16: "half_val",
    types_pb2.DT_INT64: "int64_val",
    types_pb2.DT_UINT32: "uint32_val",
    types_pb2.DT_UINT64: "uint64_val",
    types_pb2.DT_BOOL: "bool_val",
    types_pb2.DT_STRING: "string_val",
    types_pb2.DT_COMPLEX64: "scomplex_val",  # (real, imag) pairs
    types_pb2.DT_COMPLEX128: "dcomplex_val",
    types_pb2.DT_FLOAT8_E5M2: "float8_val",  # uint8 bit patterns in a bytes field
    types_pb2.DT_FLOAT8_E4M3FN: "float8_val",
    types_pb2.DT_FLOAT4_E2M1FN: "float8_val",
    **{dt: "int_val" for dt in (types_pb2.DT_INT32, types_pb2.DT_INT16, types_pb2.DT_INT8, types_pb2.DT_UINT8,
                                types_pb2.DT_UINT16, types_pb2.DT_INT4, types_pb2.DT_UINT4, types_pb2.DT_INT2,
                                types_pb2.DT_UINT2, *_QUANTIZED)},
}
_BIT_PATTERN = {"half_val": np.uint16, "float8_val": np.uint8}
# A constant that would expand past this is refused: no real model holds one, a corrupted shape does.
MAX_TENSOR_BYTES = 1 << 32


def dtype_name(dtype: int) -> str:
    """'float32', 'float16', ... for a DataType enum (TF's own spelling of numpy names)."""
    np_type = _NP_BY_DTYPE.get(dtype)
    if np_type is not None:
        return np.dtype(np_type).name
    if dtype in _ML_DTYPES:
        return _ML_DTYPES[dtype]
    if dtype in types_pb2.DataType.values():
        return types_pb2.DataType.Name(dtype).removeprefix("DT_").lower()
    return f"unknown dtype {dtype}"


def _np_type(dtype: int) -> type | None:
    """numpy's scalar type for a DataType enum (ml_dtypes' for the types numpy lacks), or None."""
    if dtype in _ML_DTYPES:
        import ml_dtypes

        return getattr(ml_dtypes, _ML_DTYPES[dtype])
    return _NP_BY_DTYPE.get(dtype)


def np_dtype(dtype: int) -> np.dtype:
    np_type = _np_type(dtype)
    if np_type is None:
        raise ValueError(f"no numpy type for {dtype_name(dtype)}")
    return np.dtype(np_type)


def tf_dtype(array_dtype: Any) -> int:
    dtype = np.dtype(array_dtype)  # an ml_dtypes type was imported by whoever made the array
    return _DTYPE_BY_NP[dtype] if dtype in _DTYPE_BY_NP else _ML_DTYPE_BY_NAME[dtype.name]


def _decoded_dtype(dtype: int) -> np.dtype | None:
    if dtype == types_pb2.DT_STRING:
        return np.dtype(object)
    np_type = _np_type(dtype) or _QUANTIZED.get(dtype)
    return None if np_type is None else np.dtype(np_type)


def _value_count(tensor: TensorProto, field: str) -> int:
    count = len(getattr(tensor, field))
    return count // 2 if field in ("scomplex_val", "dcomplex_val") else count


def tensor_problem(tensor: TensorProto) -> str | None:
    """Why TensorFlow would refuse to build this constant (in words), or None; decodes nothing.

    Loaders call it on every constant, so a corrupt file fails when it is opened, naming the
    node, instead of deep inside a pass.
    """
    dtype = _decoded_dtype(tensor.dtype)
    if dtype is None:
        return f"holds {dtype_name(tensor.dtype)} values, which FuseLens cannot decode"
    dims = [d.size for d in tensor.tensor_shape.dim]
    if any(d < 0 for d in dims):
        return f"has a shape with an unknown or negative dimension {dims}"
    count = math.prod(dims)
    if count * dtype.itemsize > MAX_TENSOR_BYTES:
        return f"has shape {dims}, which would take more than {MAX_TENSOR_BYTES >> 30} GiB"
    field = _VALUE_FIELD[tensor.dtype]
    if tensor.tensor_content:
        if dtype.kind == "O":
            return "is a string tensor with tensor_content (strings are kept in string_val)"
        if len(tensor.tensor_content) != count * dtype.itemsize:
            return (f"has {len(tensor.tensor_content)} bytes of tensor_content; shape {dims} of "
                    f"{dtype_name(tensor.dtype)} needs {count * dtype.itemsize}")
        return None
    values = _value_count(tensor, field)
    if values > count:
        return f"has {values} values in {field} for shape {dims} ({count} elements)"
    return None


def tensor_to_ndarray(tensor: TensorProto) -> np.ndarray:
    """A constant's value by TensorFlow's rules: no values means zeros, fewer values than the shape
    repeat the last one, `tensor_content` holds raw little-endian bytes, half and bfloat16 values are
    bit patterns in `half_val`. (tensorboard's copy of make_ndarray fails on the first two.)

    Raises FuseLensError when TensorFlow would refuse the tensor (see tensor_problem).
    """
    problem = tensor_problem(tensor)
    if problem:
        raise FuseLensError(f"a constant {problem}")
    dtype = _decoded_dtype(tensor.dtype)
    assert dtype is not None
    shape = [d.size for d in tensor.tensor_shape.dim]
    if tensor.tensor_content:
        return np.frombuffer(tensor.tensor_content, dtype=dtype).reshape(shape).copy()
    field = _VALUE_FIELD[tensor.dtype]
    raw = getattr(tensor, field)
    if field == "string_val":
        values = np.empty(len(raw), dtype=object)
        values[:] = list(raw)
    elif field in _BIT_PATTERN:
        bits = np.frombuffer(raw, np.uint8) if field == "float8_val" else np.array(raw, dtype=np.int64)
        values = bits.astype(_BIT_PATTERN[field]).view(dtype)  # wraps like TensorFlow's C++ cast
    elif field in ("scomplex_val", "dcomplex_val"):
        pairs = np.array(raw[: 2 * _value_count(tensor, field)], dtype=np.float64).reshape(-1, 2)
        values = (pairs[:, 0] + 1j * pairs[:, 1]).astype(dtype)
    elif field == "int_val":
        values = np.array(raw, dtype=np.int64).astype(dtype)  # an int32 field: narrower types wrap
    else:
        values = np.array(raw, dtype=dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if values.size == 0:
        return np.zeros(shape, dtype) if dtype.kind != "O" else np.full(shape, b"", dtype=object)
    if values.size < count:
        values = np.concatenate([values, np.repeat(values[-1:], count - values.size)])
    return values.reshape(shape)


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
