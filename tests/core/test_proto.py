"""Constants decode by TensorFlow's rules (core.graph.proto.tensor_to_ndarray), checked against tf.make_ndarray.

One test per rule: no values -> zeros, fewer values than the shape -> the last one repeated,
tensor_content as raw bytes, half / bfloat16 as bit patterns in half_val, and every dtype
TensorFlow decodes. A tensor TensorFlow would refuse is one FuseLensError, never a numpy error.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node

types = proto.types_pb2


def tensor(dtype: int, shape: list[int], **fields: object) -> proto.TensorProto:
    message = proto.TensorProto(dtype=dtype, tensor_shape=proto.shape_proto(shape))
    for name, values in fields.items():
        if name == "tensor_content" or name == "float8_val":
            setattr(message, name, values)
        else:
            getattr(message, name).extend(values)
    return message


def tf_make_ndarray(message: proto.TensorProto) -> np.ndarray:
    """TensorFlow's own decoding of the same bytes."""
    from fuselens.core.tfimport import import_tensorflow

    tf = import_tensorflow()
    from tensorflow.core.framework import tensor_pb2

    return tf.make_ndarray(tensor_pb2.TensorProto.FromString(message.SerializeToString()))


def assert_same_as_tensorflow(message: proto.TensorProto) -> np.ndarray:
    ours, theirs = proto.tensor_to_ndarray(message), tf_make_ndarray(message)
    if theirs.dtype.names:  # quantized: TensorFlow wraps the storage integer in a one-field record
        theirs = theirs.view(theirs.dtype[0])
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    return ours


# ---- the rules ------------------------------------------------------------------------------

@pytest.mark.parametrize(("dtype", "shape"), [(types.DT_FLOAT, []), (types.DT_FLOAT, [2, 3]), (types.DT_INT32, [4]),
                                              (types.DT_HALF, [3]), (types.DT_BOOL, [2]), (types.DT_INT64, [1, 2])])
def test_no_values_means_zeros(dtype: int, shape: list[int]) -> None:
    value = assert_same_as_tensorflow(tensor(dtype, shape))
    assert value.shape == tuple(shape) and not value.any()


@pytest.mark.parametrize(("dtype", "field", "values"), [
    (types.DT_FLOAT, "float_val", [1.5, -2.0]),
    (types.DT_DOUBLE, "double_val", [0.25]),
    (types.DT_INT32, "int_val", [7, 8, 9]),
    (types.DT_INT64, "int64_val", [-3]),
    (types.DT_BOOL, "bool_val", [False, True]),
    (types.DT_UINT8, "int_val", [200]),
])
def test_fewer_values_than_the_shape_repeat_the_last(dtype: int, field: str, values: list[object]) -> None:
    value = assert_same_as_tensorflow(tensor(dtype, [2, 3], **{field: values}))
    assert value.reshape(-1)[-1] == values[-1] and value.reshape(-1)[len(values) - 1:].tolist().count(values[-1]) > 1


def test_a_scalar_with_one_value() -> None:
    assert assert_same_as_tensorflow(tensor(types.DT_FLOAT, [], float_val=[3.25])) == np.float32(3.25)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64,
                                   np.complex128, ml_dtypes.bfloat16])
def test_tensor_content_is_raw_bytes(dtype: type) -> None:
    rng = np.random.default_rng(0)
    array = (rng.normal(size=(2, 3, 4)) * 50).astype(dtype) if dtype is not np.bool_ else rng.random((2, 3, 4)) > 0.5
    message = tensor(proto.tf_dtype(array.dtype), [2, 3, 4], tensor_content=array.tobytes())
    value = assert_same_as_tensorflow(message)
    np.testing.assert_array_equal(value, array)
    np.testing.assert_array_equal(proto.tensor_to_ndarray(proto.ndarray_to_tensor(array)), array)


@pytest.mark.parametrize(("dtype", "np_type"), [(types.DT_HALF, np.float16), (types.DT_BFLOAT16, ml_dtypes.bfloat16)])
def test_half_val_holds_bit_patterns(dtype: int, np_type: type) -> None:
    want = np.array([1.0, -2.5, 0.099975586, 65504.0 if np_type is np.float16 else 3.0e38], np_type)
    bits = want.view(np.uint16).tolist()
    value = assert_same_as_tensorflow(tensor(dtype, [4], half_val=bits))
    np.testing.assert_array_equal(value, want)
    assert value.dtype == np.dtype(np_type)
    short = assert_same_as_tensorflow(tensor(dtype, [3], half_val=bits[:1]))  # one value fills the shape
    np.testing.assert_array_equal(short, np.full(3, want[0], np_type))


@pytest.mark.parametrize(("dtype", "field", "values"), [
    (types.DT_INT8, "int_val", [-128, 5, 127]),
    (types.DT_INT16, "int_val", [-300, 0, 300]),
    (types.DT_UINT8, "int_val", [0, 128, 255]),
    (types.DT_UINT16, "int_val", [0, 40000, 65535]),
    (types.DT_UINT32, "uint32_val", [0, 7, 4294967295]),
    (types.DT_UINT64, "uint64_val", [0, 7, 18446744073709551615]),
    (types.DT_INT64, "int64_val", [-(2**62), 0, 2**62]),
    (types.DT_QINT8, "int_val", [-5, 0, 5]),
    (types.DT_QUINT8, "int_val", [1, 2, 3]),
    (types.DT_QINT32, "int_val", [-70000, 0, 70000]),
    (types.DT_INT4, "int_val", [-8, 0, 7]),
    (types.DT_UINT4, "int_val", [0, 9, 15]),
    (types.DT_BOOL, "bool_val", [True, False, True]),
    (types.DT_FLOAT, "float_val", [0.5, -1e30, 3.0]),
    (types.DT_DOUBLE, "double_val", [0.1, -1e300, 3.0]),
    (types.DT_COMPLEX64, "scomplex_val", [1.0, 2.0, -3.0, 0.5, 0.0, -1.0]),
    (types.DT_COMPLEX128, "dcomplex_val", [1.0, 2.0, -3.0, 0.5, 0.0, -1.0]),
])
def test_every_dtype_from_its_value_field(dtype: int, field: str, values: list[object]) -> None:
    assert_same_as_tensorflow(tensor(dtype, [3], **{field: values}))
    assert_same_as_tensorflow(tensor(dtype, [2, 4], **{field: values}))  # and padded


@pytest.mark.parametrize("dtype", [types.DT_FLOAT8_E5M2, types.DT_FLOAT8_E4M3FN])
def test_float8_val_holds_bit_patterns(dtype: int) -> None:
    assert_same_as_tensorflow(tensor(dtype, [5], float8_val=bytes([0, 0x38, 0xB8, 0x40])))


def test_strings_are_bytes_and_repeat_the_last() -> None:
    value = assert_same_as_tensorflow(tensor(types.DT_STRING, [2, 2], string_val=[b"a", b"\xff\x00"]))
    assert value.dtype == object and value.tolist() == [[b"a", b"\xff\x00"], [b"\xff\x00", b"\xff\x00"]]


def test_an_empty_string_tensor_holds_empty_byte_strings() -> None:
    # TensorFlow's Python decoder pads with str "" here; its runtime (and FuseLens) with b"".
    value = proto.tensor_to_ndarray(tensor(types.DT_STRING, [2]))
    assert value.tolist() == [b"", b""]
    assert tf_make_ndarray(tensor(types.DT_STRING, [2])).tolist() == ["", ""]


# ---- what TensorFlow refuses -------------------------------------------------------------------

@pytest.mark.parametrize(("message", "words"), [
    (tensor(types.DT_FLOAT, [2], float_val=[1.0, 2.0, 3.0]), "3 values in float_val for shape [2]"),
    (tensor(types.DT_FLOAT, [2, 2], tensor_content=b"\0" * 7), "7 bytes of tensor_content"),
    (tensor(types.DT_FLOAT, [-1, 2]), "unknown or negative dimension"),
    (tensor(types.DT_FLOAT, [1 << 20, 1 << 20], float_val=[0.0]), "more than 4 GiB"),
    (tensor(types.DT_STRING, [1], tensor_content=b"abc"), "strings are kept in string_val"),
    (tensor(types.DT_RESOURCE, [1]), "holds resource values"),
    (tensor(999, [1]), "unknown dtype 999"),
])
def test_a_tensor_tensorflow_refuses_is_one_error(message: proto.TensorProto, words: str) -> None:
    assert words in (proto.tensor_problem(message) or "")
    with pytest.raises(FuseLensError, match="a constant"):
        proto.tensor_to_ndarray(message)


# ---- through the graph ----------------------------------------------------------------------

def test_const_value_of_an_empty_scalar_is_zero() -> None:
    """EfficientNetB0's crash: `cannot reshape array of size 0 into shape ()` from Graph.const_value."""
    const = make_node("Const", "zero", attrs={"dtype": proto.AttrValue(type=types.DT_FLOAT),
                                             "value": proto.AttrValue(tensor=tensor(types.DT_FLOAT, []))})
    read = make_node("Identity", "zero/read", ["zero"], {"T": proto.AttrValue(type=types.DT_FLOAT)})
    graph = Graph.from_nodes([const, read], source="toy")
    value = graph.const_value("zero/read")
    assert value.shape == () and value == 0.0
    assert graph.attr("zero", "value").shape == ()


def test_a_file_with_a_corrupt_constant_is_refused_when_opened(tmp_path) -> None:
    from fuselens.core.formats.loaders import load_model

    bad = make_node("Const", "w", attrs={"dtype": proto.AttrValue(type=types.DT_FLOAT),
                                        "value": proto.AttrValue(tensor=tensor(types.DT_FLOAT, [2, 2],
                                                                              tensor_content=b"\0" * 7))})
    path = tmp_path / "bad_const.pb"
    path.write_bytes(proto.GraphDef(node=[bad]).SerializeToString())
    with pytest.raises(FuseLensError) as err:
        load_model(path)
    assert str(err.value) == (f"{path}: node w (Const): attribute value has 7 bytes of tensor_content; "
                              "shape [2, 2] of float32 needs 16")


def test_a_const_without_a_value_is_refused_when_opened(tmp_path) -> None:
    """TensorFlow refuses such a graph; reading it as a default (invalid) tensor only moved the problem into a pass."""
    from fuselens.core.formats.loaders import load_model

    const = make_node("Const", "w", attrs={"dtype": proto.AttrValue(type=types.DT_FLOAT)})
    path = tmp_path / "no_value.pb"
    path.write_bytes(proto.GraphDef(node=[const]).SerializeToString())
    with pytest.raises(FuseLensError, match=r"node w \(Const\) has no value attribute$"):
        load_model(path)
