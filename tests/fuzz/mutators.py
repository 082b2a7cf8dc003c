"""Mutations of real inputs: bytes, text lines and tokens, parsed trees (JSON / YAML), CSV cells,
GraphDef fields, AUTOFUSE_FLAGS items. Every mutator is `(rng, data, seeds) -> data`; `seeds` lets a
mutator splice two real inputs. Seeded, so a case number reproduces its input.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from google.protobuf import text_format

from fuselens.core.graph import proto

Rng = np.random.Generator
Mutator = Callable[[Rng, bytes, Sequence[bytes]], bytes]

# Values that break parsers: limits, signs, special floats, sentinels, odd strings.
NUMBERS = ["0", "-1", "1", "2", "3", "-2147483648", "2147483647", "4294967295", "18446744073709551616",
           "9" * 40, "1e308", "-1e308", "1e-320", "nan", "inf", "-inf", "0x10", "1_000", "0.5", "-0.0", ""]
STRINGS = ["", " ", "a", "N/A", "\t", "two\nlines", "\r", "\x00", "é", "\u202e", "😀", "a" * 5000, "../../etc/passwd",
           "a:b:c",
           "^x", "x:99", "/", "a//b", "\\", '"', "'", "{", "}", "[", "]", ",", ";", "=", "--", "%s", "null"]
TOKENS = ["{", "}", "[", "]", ":", ",", ";", "=", '"', "'", "#", "\n", "\t", " ", "-", "--", "\\", "\x00", "\xff"]


def _pick(rng: Rng, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def _span(rng: Rng, size: int) -> tuple[int, int]:
    start = int(rng.integers(size + 1))
    return start, min(size, start + int(rng.integers(1, 64)))


# ---- bytes ------------------------------------------------------------------------------------
def flip_bits(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    if not data:
        return bytes([int(rng.integers(256))])
    buf = bytearray(data)
    for _ in range(int(rng.integers(1, 9))):
        i = int(rng.integers(len(buf)))
        buf[i] ^= 1 << int(rng.integers(8))
    return bytes(buf)


def set_bytes(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(int(rng.integers(1, 5))):
        if buf:
            buf[int(rng.integers(len(buf)))] = _pick(rng, [0x00, 0xFF, 0x7F, 0x80, 0x01, int(rng.integers(256))])
    return bytes(buf)


def truncate(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    return data[: int(rng.integers(len(data) + 1))]


def insert_bytes(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    i = int(rng.integers(len(data) + 1))
    return data[:i] + rng.bytes(int(rng.integers(1, 32))) + data[i:]


def delete_range(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    start, end = _span(rng, len(data))
    return data[:start] + data[end:]


def duplicate_range(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    start, end = _span(rng, len(data))
    return data[:end] + data[start:end] + data[end:]


def splice(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    other = _pick(rng, seeds)
    return data[: int(rng.integers(len(data) + 1))] + other[int(rng.integers(len(other) + 1)):]


BYTE_MUTATORS: list[Mutator] = [flip_bits, set_bytes, truncate, insert_bytes, delete_range, duplicate_range, splice]


# ---- text -------------------------------------------------------------------------------------
def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def edit_lines(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """Delete, duplicate, swap or move a line."""
    lines = _text(data).split("\n")
    i, j = int(rng.integers(len(lines))), int(rng.integers(len(lines)))
    kind = int(rng.integers(4))
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[j])
    elif kind == 2:
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(j, lines.pop(i))
    return _bytes("\n".join(lines))


def insert_token(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    text = _text(data)
    i = int(rng.integers(len(text) + 1))
    return _bytes(text[:i] + _pick(rng, TOKENS + STRINGS[:12]) + text[i:])


def replace_number(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """A run of digits becomes an interesting number."""
    text = _text(data)
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    if not digits:
        return insert_token(rng, data, seeds)
    start = end = _pick(rng, digits)
    while start > 0 and (text[start - 1].isdigit() or text[start - 1] in ".-"):
        start -= 1
    while end < len(text) and (text[end].isdigit() or text[end] in ".eE"):
        end += 1
    return _bytes(text[:start] + _pick(rng, NUMBERS) + text[end:])


def replace_quoted(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """The contents of a "quoted" string become an interesting string."""
    text = _text(data)
    quotes = [i for i, ch in enumerate(text) if ch == '"']
    if len(quotes) < 2:
        return insert_token(rng, data, seeds)
    k = int(rng.integers(len(quotes) - 1))
    start, end = quotes[k] + 1, quotes[k + 1]
    return _bytes(text[:start] + _pick(rng, STRINGS).replace('"', '\\"') + text[end:])


def bad_encoding(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    i = int(rng.integers(len(data) + 1))
    return data[:i] + _pick(rng, [b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\r\n", b"\x00"]) \
        + data[i:]


TEXT_MUTATORS: list[Mutator] = [edit_lines, insert_token, replace_number, replace_quoted, bad_encoding, truncate,
                                delete_range, duplicate_range, splice]


# ---- trees (JSON, YAML) ------------------------------------------------------------------------
def _random_value(rng: Rng, depth: int = 0) -> Any:
    kind = int(rng.integers(9 if depth < 3 else 7))
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(2))
    if kind == 2:
        return int(_pick(rng, [0, -1, 1, 3, 64, 255, 256, 2**31, -(2**63), 10**30]))
    if kind == 3:
        return float(_pick(rng, [0.5, -1.5, 1e308, 1e-300, float("nan"), float("inf")]))
    if kind in (4, 5, 6):
        return _pick(rng, [*STRINGS[:-3], "on", "off", "ON", "true", "Mul", "Conv2D", "moments", "mul_1"])
    if kind == 7:
        return [_random_value(rng, depth + 1) for _ in range(int(rng.integers(4)))]
    return {str(_random_value(rng, 3)): _random_value(rng, depth + 1) for _ in range(int(rng.integers(4)))}


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            found += _paths(value, (*prefix, i))
    return found


def mutate_tree(rng: Rng, tree: Any) -> Any:
    """Replace, delete, duplicate or wrap one node of a parsed JSON / YAML document."""
    path = _pick(rng, _paths(tree))
    if not path:
        return _random_value(rng) if rng.integers(4) == 0 else [tree]
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    kind = int(rng.integers(6))
    if kind == 5 and isinstance(parent, dict):  # rename a key: names travel into error messages
        parent[_pick(rng, ["two\nlines", "", "ALL", "\x00", "\u202e", "a" * 300, f"{key}\r"])] = parent.pop(key)
    elif kind == 0:
        parent[key] = _random_value(rng)
    elif kind == 1:
        del parent[key]
    elif kind == 2:
        parent[key] = [parent[key]] if rng.integers(2) else {"x": parent[key]}
    elif kind == 3 and isinstance(parent, dict):
        parent[_pick(rng, STRINGS) if rng.integers(2) else str(_random_value(rng, 3))] = parent[key]
    elif isinstance(parent, list):
        parent.insert(int(key), parent[key])
    else:
        parent[key] = _random_value(rng)
    return tree


def json_tree(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    try:
        tree = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return insert_token(rng, data, seeds)
    for _ in range(int(rng.integers(1, 4))):
        tree = mutate_tree(rng, tree)
    return json.dumps(tree, indent=int(rng.integers(3)) or None).encode()


def yaml_tree(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    import yaml

    if b"*" in data:  # aliases: the tree may share nodes exponentially (see laughs); edit the text instead
        return insert_token(rng, data, seeds)
    try:
        tree = yaml.safe_load(data)
    except (yaml.YAMLError, UnicodeDecodeError):
        return insert_token(rng, data, seeds)
    for _ in range(int(rng.integers(1, 4))):
        tree = mutate_tree(rng, tree)
    return yaml.safe_dump(tree, allow_unicode=True, sort_keys=False).encode()


YAML_TRICKS = [b"!!python/object/apply:os.system ['true']\n", b"a: &a [1, 2]\nb: [*a, *a, *a, *a, *a]\n",
               b"\t- tab\n", b"%YAML 1.1\n---\n", b"? [1]\n: 2\n", b"rules: !!binary aGVsbG8=\n",
               b"x: &a [*a]\n", b"<<: *undefined\n"]


def yaml_trick(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """YAML's own traps: tags, anchors and aliases (a billion-laughs shape), tabs, merge keys."""
    lines = data.split(b"\n")
    lines.insert(int(rng.integers(len(lines) + 1)), _pick(rng, YAML_TRICKS).rstrip(b"\n"))
    return b"\n".join(lines)


def laughs(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """Aliases of aliases: ~10^depth nodes from a few hundred bytes."""
    depth = int(rng.integers(3, 9))
    lines = [b'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]".encode() for i in range(1, depth)]
    return b"\n".join(lines) + b"\n" + data


# ---- CSV --------------------------------------------------------------------------------------
def csv_cells(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """Change a cell, drop or add cells, drop the header, swap two columns."""
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    except (csv.Error, UnicodeDecodeError):
        return insert_token(rng, data, seeds)
    if not rows:
        return insert_token(rng, data, seeds)
    r = int(rng.integers(len(rows)))
    row = rows[r]
    kind = int(rng.integers(6))
    c = int(rng.integers(len(row))) if row else 0
    if kind <= 1 and row:
        row[c] = _pick(rng, NUMBERS + STRINGS)
    elif kind == 2 and row:
        del row[c]
    elif kind == 3:
        row.insert(c, _pick(rng, NUMBERS + STRINGS))
    elif kind == 4:
        del rows[0 if rng.integers(2) else r]
    else:
        j = int(rng.integers(len(rows[0]))) if rows[0] else 0
        for each in rows:
            if c < len(each) and j < len(each):
                each[c], each[j] = each[j], each[c]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


# ---- GraphDef fields --------------------------------------------------------------------------
OP_TYPES = ["Const", "Identity", "Placeholder", "Conv2D", "FusedBatchNormV3", "AddV2", "Mul", "Rsqrt", "Relu",
            "BiasAdd", "Reshape", "NoOp", "Merge", "Switch", "NextIteration", "Enter", "Exit", "While",
            "PartitionedCall", "Unknown_Op", ""]


def _graph_def(data: bytes) -> proto.GraphDef | None:
    try:
        graph_def = proto.GraphDef.FromString(data)
    except Exception:  # any parse failure: not a mutable GraphDef
        return None
    return graph_def if graph_def.node else None


def _mutate_tensor(rng: Rng, tensor: proto.TensorProto) -> None:
    kind = int(rng.integers(7))
    if kind == 0:
        tensor.dtype = int(_pick(rng, [0, 1, 2, 3, 7, 8, 10, 14, 19, 20, 21, 33, 99, 101]))
    elif kind == 1:
        if tensor.tensor_shape.dim:
            tensor.tensor_shape.dim[int(rng.integers(len(tensor.tensor_shape.dim)))].size = int(
                _pick(rng, [-1, 0, 1, 7, 2**20, 2**40]))
        else:
            tensor.tensor_shape.dim.add(size=int(_pick(rng, [0, 2, 3])))
    elif kind == 2:
        tensor.tensor_content = tensor.tensor_content[: int(rng.integers(len(tensor.tensor_content) + 1))]
    elif kind == 3:
        tensor.float_val.extend([1.0] * int(rng.integers(1, 5)))
    elif kind == 4:
        tensor.ClearField("tensor_content")
    elif kind == 5:
        tensor.half_val.extend([int(_pick(rng, [0, 15360, 65535, 70000, -1]))])
    else:
        tensor.tensor_shape.unknown_rank = True


def _mutate_attr(rng: Rng, node: proto.NodeDef, names: Sequence[str]) -> None:
    if not node.attr or rng.integers(5) == 0:
        key = _pick(rng, ["T", "dtype", "value", "shape", "strides", "padding", "data_format", "epsilon",
                          "is_training", "_output_shapes", "_class", "N", "Tidx", "_fused_op_type"])
    else:
        key = _pick(rng, sorted(node.attr))
    value = node.attr[key]
    kind = value.WhichOneof("value")
    choice = int(rng.integers(8))
    if choice == 0:
        del node.attr[key]
    elif kind == "tensor" and choice < 5:
        _mutate_tensor(rng, value.tensor)
    elif choice == 1:
        value.type = int(_pick(rng, [0, 1, 3, 7, 19, 20, 99, 1000]))
    elif choice == 2:
        value.shape.CopyFrom(proto.shape_proto(_pick(rng, [[-1], [], [0], [1, 2**40], [-5, 3]])))
    elif choice == 3:
        value.list.i[:] = [int(x) for x in rng.integers(-3, 5, int(rng.integers(0, 6)))]
    elif choice == 4:
        value.s = _pick(rng, STRINGS).encode("utf-8", "surrogatepass")
    elif choice == 5:
        value.f = float(_pick(rng, [0.0, -1.0, 1e30, float("nan")]))
    elif choice == 6:
        value.list.shape.add().CopyFrom(proto.shape_proto(_pick(rng, [[-1], [1, 2], []])))
    else:
        value.func.name = _pick(rng, [*names[:3], "missing_function", ""])


def graphdef_fields(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """1-3 field-level edits of a parsed GraphDef: names, ops, inputs, attributes, tensors, functions."""
    graph_def = _graph_def(data)
    if graph_def is None:
        return flip_bits(rng, data, seeds)
    for _ in range(int(rng.integers(1, 4))):
        nodes = graph_def.node
        if not nodes:
            break
        names = [n.name for n in nodes]
        node = nodes[int(rng.integers(len(nodes)))]
        kind = int(rng.integers(14))  # 8 and up: an attribute (what passes read) rather than the structure
        if kind == 0:
            node.name = _pick(rng, [*names, "", "a/", "^x", "x:0", node.name + "/", "two\nlines", "nul\x00"])
        elif kind == 1:
            node.op = _pick(rng, OP_TYPES)
        elif kind == 2:
            del nodes[int(rng.integers(len(nodes)))]
        elif kind == 3:
            node.input.append(_pick(rng, [f"{_pick(rng, names)}:{int(rng.integers(0, 3))}", f"^{_pick(rng, names)}",
                                          node.name, f"{_pick(rng, names)}:99", "", "a:b:c", "missing", ":0"]))
        elif kind == 4 and node.input:
            del node.input[int(rng.integers(len(node.input)))]
        elif kind == 5 and node.input:
            node.input[int(rng.integers(len(node.input)))] = _pick(rng, names)
        elif kind == 6:
            nodes.add().CopyFrom(node)
        elif kind == 7:
            function = graph_def.library.function.add()
            function.signature.name = _pick(rng, [node.op, "f", ""])
            function.node_def.add().CopyFrom(node)
            function.ret["out"] = _pick(rng, [f"{node.name}:output:0", "nowhere", ""])
        else:
            _mutate_attr(rng, node, names)
    return graph_def.SerializeToString()


def graphdef_to_text(data: bytes) -> bytes:
    graph_def = _graph_def(data)
    return text_format.MessageToString(graph_def).encode() if graph_def is not None else data


def pbtxt_fields(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """A field-level GraphDef edit, written back as text."""
    try:
        graph_def = text_format.Parse(data.decode("utf-8"), proto.GraphDef())
    except Exception:  # not parseable any more: fall back to a text edit
        return insert_token(rng, data, seeds)
    return graphdef_to_text(graphdef_fields(rng, graph_def.SerializeToString(), seeds))


# ---- AUTOFUSE_FLAGS -----------------------------------------------------------------------------
FLAG_KEYS = ["enable_autofuse", "autofuse_enable_pass", "autofuse_disable_pass", "max_fusion_size",
             "recomputation_threshold", "unknown_flag", "", "ENABLE_AUTOFUSE"]
FLAG_VALUES = ["true", "false", "TRUE", "1", "reduce", "concat", "reduce,concat", "elementwise", "pointwise,,",
               "cube", "nope", "64", "0", "-1", "255", "256", "99999999999999999999", " ", ""]


def flags_items(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
    """Insert, drop, duplicate or rewrite one `--key=value` item."""
    items = _text(data).split(";")
    i = int(rng.integers(len(items)))
    kind = int(rng.integers(5))
    made = f"{_pick(rng, ['--', '-', '', '---'])}{_pick(rng, FLAG_KEYS)}{_pick(rng, ['=', '', '==', ' = '])}" \
           f"{_pick(rng, FLAG_VALUES)}"
    if kind == 0:
        items.insert(i, made)
    elif kind == 1 and len(items) > 1:
        del items[i]
    elif kind == 2:
        items.insert(i, items[i])
    elif kind == 3:
        items[i] = made
    else:
        items[i] = items[i].replace("=", _pick(rng, ["", "==", "=;", "=,"]), 1)
    return _bytes(_pick(rng, [";", ";", " ; ", ";;", ","]).join(items))


def compose(mutators: Sequence[Mutator], max_steps: int = 3) -> Mutator:
    """Apply 1..max_steps mutators picked at random."""
    def mutate(rng: Rng, data: bytes, seeds: Sequence[bytes]) -> bytes:
        for _ in range(int(rng.integers(1, max_steps + 1))):
            data = _pick(rng, mutators)(rng, data, seeds)
        return data

    return mutate
