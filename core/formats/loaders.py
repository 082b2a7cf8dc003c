"""Model loaders: frozen GraphDef .pb, text .pbtxt, SavedModel, Keras .keras/.h5, built-in samples.

The format is detected from the content (magic bytes, directory layout), not the extension.
Every failure is one FuseLensError naming the file and the problem. GraphDef and pbtxt load
without importing TensorFlow; SavedModel and Keras need it to freeze variables.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import message as pb_message
from google.protobuf import text_format

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.samples import SAMPLES, sample_path
from fuselens.core.graph import Graph, SerializedGraphDef, proto
from fuselens.core.tfimport import import_tensorflow
from fuselens.core.wording import shown

MAGIC = {
    b"\x89PNG\r\n\x1a\n": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"%PDF": "a PDF document",
    b"\x1f\x8b": "a gzip archive",
    b"\x7fELF": "an executable (ELF)",
}
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class LoadedModel:
    graph: Graph
    name: str  # sample name or file name, for titles
    path: str  # the file or directory read
    format: str  # graphdef | pbtxt | savedmodel | keras | h5 (and ge_dump: core.ascend.ge.open.load_as_model)


def load_model(spec: str | os.PathLike[str]) -> LoadedModel:
    """A model from a path, or a built-in sample by name."""
    text = os.fspath(spec)
    path = Path(text)
    if not path.exists():
        if text in SAMPLES:
            sample_file = sample_path(text)
            graph = _parse_graphdef(sample_file.read_bytes(), str(sample_file))
            return LoadedModel(graph, text, str(sample_file), "graphdef")
        raise FuseLensError(
            f"{text}: no such file or directory (and no built-in sample of that name; "
            f"`fuselens samples` lists them)"
        )
    kind = detect_format(path)
    loader = {
        "graphdef": lambda: _parse_graphdef(path.read_bytes(), text),
        "pbtxt": lambda: _parse_pbtxt(path, text),
        "savedmodel": lambda: _load_savedmodel(path.parent if path.is_file() else path, text),
        "keras": lambda: _load_keras(path, text),
        "h5": lambda: _load_keras(path, text),
    }[kind]
    return LoadedModel(loader(), path.name or text, text, kind)


def detect_format(path: Path) -> str:
    """graphdef | pbtxt | savedmodel | keras | h5, from content; FuseLensError for anything else."""
    if path.is_dir():
        if (path / "saved_model.pb").exists() or (path / "saved_model.pbtxt").exists():
            return "savedmodel"
        raise FuseLensError(f"{path}: is a directory but not a SavedModel (no saved_model.pb inside)")
    if path.name in ("saved_model.pb", "saved_model.pbtxt"):
        return "savedmodel"
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
    if not head:
        raise FuseLensError(f"{path}: the file is empty (0 bytes)")
    if head.startswith(HDF5_MAGIC):
        return "h5"
    if head.startswith(ZIP_MAGIC):
        if _is_keras_zip(path):
            return "keras"
        raise FuseLensError(f"{path}: is a ZIP archive but not a Keras .keras model (no config.json inside)")
    for magic, what in MAGIC.items():
        if head.startswith(magic):
            raise FuseLensError(f"{path}: is {what}, not a TensorFlow model")
    if _looks_like_text(head):
        return "pbtxt"
    return "graphdef"


def _is_keras_zip(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return "config.json" in z.namelist()
    except zipfile.BadZipFile:
        return False


def _looks_like_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        # a 4 KiB cut can split a multi-byte character; accept if only the tail is bad
        try:
            text = head[:-4].decode("utf-8")
        except UnicodeDecodeError:
            return False
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
    return printable >= 0.97 * len(text)


def _parse_graphdef(data: bytes, source: str) -> Graph:
    """The graph of a .pb, kept as its bytes (SerializedGraphDef: parsed, a GraphDef takes ~7.5x them); the
    checks decode every node once, so a corrupt one is found here too."""
    try:
        return _checked_graph(SerializedGraphDef.read(data), source)
    except pb_message.DecodeError as e:
        raise FuseLensError(
            f"{source}: not a TensorFlow GraphDef, or truncated (protobuf parse failed: {e})"
        ) from None


def _checked_graph(graph_def: proto.GraphDef | SerializedGraphDef, source: str) -> Graph:
    """The Graph of a parsed GraphDef, refused with one line if it has no nodes or a corrupt constant."""
    if not graph_def.node:
        raise FuseLensError(f"{source}: contains no graph nodes (an empty graph, or not a GraphDef)")
    _check_tensors(graph_def, source)
    return Graph(graph_def, source=source)


def _check_tensors(graph_def: proto.GraphDef | SerializedGraphDef, source: str) -> None:
    """Every Const has a value, and every tensor attribute (in the graph and its functions) is one TensorFlow
    accepts."""
    bodies = [("", graph_def.node)]
    bodies += [(f"function {shown(f.signature.name)}: ", f.node_def) for f in graph_def.library.function]
    for where, nodes in bodies:
        for node in nodes:
            if node.op == "Const" and ("value" not in node.attr or node.attr["value"].WhichOneof("value") != "tensor"):
                raise FuseLensError(f"{source}: {where}node {shown(node.name)} (Const) has no value attribute")
            for key, value in node.attr.items():
                if value.WhichOneof("value") == "tensor":
                    problem = proto.tensor_problem(value.tensor)
                    if problem:
                        raise FuseLensError(f"{source}: {where}node {shown(node.name)} ({shown(node.op)}): "
                                            f"attribute {shown(key)} {problem}")


def _parse_pbtxt(path: Path, source: str) -> Graph:
    try:
        graph_def = text_format.Parse(path.read_text("utf-8"), proto.GraphDef())
    except text_format.ParseError as e:
        where = f"line {e.GetLine()}, column {e.GetColumn()}" if e.GetLine() else "unknown position"
        detail = str(e).rsplit(" : ", 1)[-1]
        raise FuseLensError(f"{source}: text GraphDef syntax error at {where}: {detail}") from None
    except UnicodeDecodeError:
        raise FuseLensError(f"{source}: not UTF-8 text, so not a .pbtxt GraphDef") from None
    return _checked_graph(graph_def, source)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def _freeze(concrete_function: object, source: str) -> Graph:
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    try:
        frozen = convert_variables_to_constants_v2(concrete_function)
    except Exception as e:  # TF raises many types here; the user needs one line
        raise FuseLensError(f"{source}: cannot freeze the model's variables ({_first_line(e)})") from None
    return Graph(proto.from_tf(frozen.graph.as_graph_def(add_shapes=True)), source=source)


def _load_savedmodel(directory: Path, source: str) -> Graph:
    tf = import_tensorflow()

    try:
        loaded = tf.saved_model.load(str(directory))
    except Exception as e:
        raise FuseLensError(f"{source}: not a loadable SavedModel ({_first_line(e)})") from None
    signatures = getattr(loaded, "signatures", {})
    if not signatures:
        raise FuseLensError(f"{source}: the SavedModel has no signatures to run")
    key = "serving_default" if "serving_default" in signatures else next(iter(signatures))
    return _freeze(signatures[key], source)


def _load_keras(path: Path, source: str) -> Graph:
    tf = import_tensorflow()
    import keras

    try:
        model = keras.models.load_model(str(path), compile=False, safe_mode=True)
    except Exception as e:
        raise FuseLensError(f"{source}: cannot load the Keras model ({_first_line(e)})") from None
    specs = [tf.TensorSpec(t.shape, t.dtype, name=t.name.split(":")[0]) for t in model.inputs]
    function = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False), autograph=False)
    return _freeze(function.get_concrete_function(*specs), source)
