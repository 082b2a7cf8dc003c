"""Every bad input gives one FuseLensError naming the file and the problem, and exit code 2."""

from __future__ import annotations

import contextlib
import os
import zlib

import numpy as np
import pytest

from fuselens.cli import main as cli_main
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import detect_format, load_model
from fuselens.core.formats.samples import sample_path
from fuselens.core.graph import proto
from fuselens.core.graph.nodes import make_node

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(32)


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def graph_bytes(*nodes) -> bytes:
    gd = proto.GraphDef()
    gd.node.extend(nodes)
    return gd.SerializeToString()


def bad_inputs(tmp_path):
    good = sample_path("conv_bn").read_bytes()
    rng = np.random.default_rng(1)
    saved_dir = tmp_path / "not_a_savedmodel"
    saved_dir.mkdir()
    (saved_dir / "readme.txt").write_text("hi")
    return {
        "empty": (write(tmp_path, "empty.pb", b""), "the file is empty"),
        "truncated": (write(tmp_path, "trunc.pb", good[: len(good) // 2 + 7]), "truncated"),
        "random": (write(tmp_path, "random.pb", rng.bytes(4096)), "not a TensorFlow GraphDef"),
        "png": (write(tmp_path, "image.pb", PNG), "is a PNG image, not a TensorFlow model"),
        "pbtxt_syntax": (write(tmp_path, "bad.pbtxt", b'node {\n  name: "a"\n  op: "Relu"\n  input: \n}\n'),
                         "text GraphDef syntax error at line 5, column 1"),
        "not_savedmodel": (saved_dir, "is a directory but not a SavedModel"),
        "dangling": (write(tmp_path, "dangling.pb", graph_bytes(make_node("Relu", "r", ["nowhere:0"]))),
                     "inputs name missing nodes: r -> nowhere"),
        "duplicates": (write(tmp_path, "dup.pb", graph_bytes(make_node("NoOp", "a"), make_node("NoOp", "a"))),
                       "duplicate node names: a"),
        "missing": (tmp_path / "nope.pb", "no such file or directory"),
        "zip_not_keras": (write(tmp_path, "model.keras", b"PK\x03\x04" + bytes(60)), "ZIP archive but not a Keras"),
    }


@pytest.mark.parametrize("case", [
    "empty", "truncated", "random", "png", "pbtxt_syntax", "not_savedmodel", "dangling", "duplicates",
    "missing", "zip_not_keras",
])
def test_bad_input_gives_one_clear_error_and_exit_2(tmp_path, capsys, case):
    path, message = bad_inputs(tmp_path)[case]
    with pytest.raises(FuseLensError) as err:
        load_model(path)
    assert str(path) in str(err.value) and message in str(err.value)
    assert cli_main(["inspect", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err and "Traceback" not in captured.err


def test_every_truncation_point_of_a_pb_is_an_error_or_a_valid_graph(tmp_path):
    good = sample_path("conv_bn").read_bytes()
    for cut in range(1, len(good), max(1, len(good) // 97)):
        path = write(tmp_path, "cut.pb", good[:cut])
        try:
            load_model(path)
        except FuseLensError as e:
            assert str(path) in str(e)


def test_format_is_detected_from_content_not_extension(tmp_path):
    data = sample_path("abs_relu_exp").read_bytes()
    assert detect_format(write(tmp_path, "model.h5", data)) == "graphdef"
    from google.protobuf import text_format

    text = text_format.MessageToString(proto.GraphDef.FromString(data))
    path = write(tmp_path, "model.pb", text.encode())
    assert detect_format(path) == "pbtxt"
    assert len(load_model(path).graph) == 4


def test_random_bytes_never_crash(tmp_path):
    for seed in range(40):
        data = np.random.default_rng(seed).bytes(1 + zlib.crc32(bytes([seed])) % 3000)
        path = write(tmp_path, f"r{seed}.pb", data)
        with contextlib.suppress(FuseLensError):
            load_model(path)


@pytest.mark.slow
def test_savedmodel_and_keras_are_frozen_to_constants(tmp_path):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((8, 8, 3), name="img"), keras.layers.Conv2D(4, 3),
                              keras.layers.BatchNormalization(), keras.layers.ReLU()])
    keras_path = tmp_path / "m.keras"
    model.save(keras_path)
    h5_path = tmp_path / "m.h5"
    model.save(h5_path)
    saved = tmp_path / "saved"
    tf.saved_model.save(model, str(saved))
    for path, fmt in [(keras_path, "keras"), (h5_path, "h5"), (saved, "savedmodel")]:
        loaded = load_model(path)
        assert loaded.format == fmt
        ops = loaded.graph.op_histogram()
        assert "VarHandleOp" not in ops and "ReadVariableOp" not in ops
        assert "Conv2D" in ops and loaded.graph.placeholders()
    os.remove(keras_path)
