"""Graphs the Ascend host's TensorFlow accepts: TF 1.15 (npu_bridge) or TF 2.6.5 (npu_device).

FuseLens writes graphs with TF 2.21, whose op defs grew attributes those versions do not know
(`FusedBatchNormV3.exponential_avg_factor`, TF 2.2), and an older TensorFlow refuses a NodeDef
with an attribute it lacks. TensorFlow's own answer, as for any older consumer, is to strip every
attribute equal to its op-def default (`meta_graph.strip_graph_default_valued_attrs`, the
mechanism behind SavedModel's `strip_default_attrs`); the older version then fills in its own
default. What is left is checked against the target's op registry (`tf_targets/*.json`, read from
that version's wheel by scripts/build_tf_op_tables.py): an op, or an attribute set to a value
other than its default, that the target lacks is refused, naming the node and what to do.

`ADDITIONS` lists the op/attribute additions after 1.15 and after 2.6 that FuseLens's samples and
passes can produce, with where each was checked; tests/core/test_npu_target.py has a test per entry.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.package_data import package_file
from fuselens.core.tfimport import import_tensorflow

TABLES = package_file(__package__, "tf_targets")
_DOCS = "https://www.tensorflow.org/versions/{}/api_docs/{}"


@dataclass(frozen=True)
class Target:
    """One TensorFlow an Ascend TF adapter exists for."""

    mode: str  # the bundle's --mode
    version: str
    adapter: str
    title: str

    @property
    def table_path(self) -> Path:
        return TABLES / f"tensorflow-{self.version}.json"

    @property
    def short(self) -> str:
        return ".".join(self.version.split(".")[:2])


TARGETS = {
    "tf1": Target("tf1", "1.15.0", "npu_bridge", "TensorFlow 1.15 with npu_bridge"),
    "tf2-compat": Target("tf2-compat", "2.6.5", "npu_device", "TensorFlow 2.6.5 with npu_device (tf.compat.v1)"),
}


@dataclass(frozen=True)
class Addition:
    """An attribute TensorFlow added after a target version, that FuseLens graphs can carry."""

    op: str
    attr: str
    added: str  # when, as far as it was checked
    default: Any  # its op-def default: at that value it is stripped and the graph imports
    absent_from: tuple[str, ...]  # the target modes whose TensorFlow lacks it
    source: str  # where the version was checked (the registry tables agree: see the tests)


_FROM_WHEELS = "core/ascend/tf_targets (read from the TensorFlow wheels)"
ADDITIONS = (
    Addition("FusedBatchNormV3", "exponential_avg_factor", "in TensorFlow 2.2", 1.0, ("tf1",),
             _DOCS.format("r2.1", "cc/class/tensorflow/ops/fused-batch-norm-v3") + " (no such attr) vs "
             + _DOCS.format("r2.2", "cc/struct/tensorflow/ops/fused-batch-norm-v3/attrs")),
    Addition("DepthwiseConv2dNative", "explicit_paddings", "in TensorFlow 2.3", [], ("tf1",),
             _DOCS.format("r2.2", "python/tf/raw_ops/DepthwiseConv2dNative") + " vs "
             + _DOCS.format("r2.3", "python/tf/raw_ops/DepthwiseConv2dNative")),
    Addition("MaxPool", "explicit_paddings", "after 1.15, by 2.6", [], ("tf1",),
             _FROM_WHEELS + "; " + _DOCS.format("r2.6", "python/tf/raw_ops/MaxPool")),
    Addition("MatMul", "grad_a", "after 2.6", False, ("tf1", "tf2-compat"),
             _DOCS.format("r2.6", "python/tf/raw_ops/MatMul") + " (no such attr) vs "
             "https://www.tensorflow.org/api_docs/python/tf/raw_ops/MatMul"),
    Addition("MatMul", "grad_b", "after 2.6", False, ("tf1", "tf2-compat"),
             _DOCS.format("r2.6", "python/tf/raw_ops/MatMul") + " (no such attr) vs "
             "https://www.tensorflow.org/api_docs/python/tf/raw_ops/MatMul"),
)


def attr_to_py(value: Any) -> Any:
    """An AttrValue as JSON: string, int, float, bool, a DataType name, a shape's dims, or a list of them."""
    from tensorboard.compat.proto import types_pb2

    def scalar(kind: str, item: Any) -> Any:
        if kind == "s":
            return item.decode("utf-8", "replace")
        if kind == "type":
            return types_pb2.DataType.Name(item)
        if kind == "shape":
            return None if item.unknown_rank else [d.size for d in item.dim]
        if kind in ("tensor", "func"):
            return f"<{kind}>"
        return item

    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind != "list":
        return scalar(kind, getattr(value, kind))
    for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(value.list, field)
        if items:
            return [scalar(field, item) for item in items]
    return []


def same_value(a: Any, b: Any) -> bool:
    """Attribute values equal as TensorFlow compares them (floats as float32)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return a == b


@functools.cache
def op_table(mode: str) -> dict[str, dict[str, Any]]:
    """The target's ops: op -> attribute -> default (None: no default, or not recorded)."""
    target = target_of(mode)
    try:
        return json.loads(target.table_path.read_text(encoding="utf-8"))["ops"]
    except (OSError, ValueError, KeyError) as e:
        raise FuseLensError(f"{target.table_path}: cannot read the op registry of TensorFlow {target.version} "
                            f"({e}); rebuild it with scripts/build_tf_op_tables.py") from None


def target_of(mode: str) -> Target:
    if mode not in TARGETS:
        raise FuseLensError(f"unknown mode {mode!r} (modes: {', '.join(TARGETS)})")
    return TARGETS[mode]


def for_target(graph_def_bytes: bytes, mode: str, what: str) -> tuple[bytes, int]:
    """The GraphDef, serialized, as the target's TensorFlow imports it, and how many attributes were stripped.
    Raises one FuseLensError naming every node the target cannot take, and what to do about it.

    Attributes equal to TF 2.21's op-def default go (TensorFlow's own strip); one whose target default
    differs is written back, so the target computes what FuseLens did."""
    tf = import_tensorflow()
    from tensorflow.core.protobuf import meta_graph_pb2
    from tensorflow.python.framework import meta_graph, op_def_registry

    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.ParseFromString(graph_def_bytes)
    originals = [{k: tf.compat.v1.AttrValue.FromString(v.SerializeToString()) for k, v in n.attr.items()}
                 for n in _node_defs(meta.graph_def)]
    meta_graph.strip_graph_default_valued_attrs(meta)
    table = op_table(mode)
    functions = {f.signature.name for f in meta.graph_def.library.function}
    stripped = 0
    for node, attrs in zip(_node_defs(meta.graph_def), originals):  # the same order both times
        target_attrs = table.get(node.op, {})
        for key in sorted(set(attrs) - set(node.attr)):
            default = target_attrs.get(key)
            if default is not None and not same_value(default, attr_to_py(attrs[key])):
                node.attr[key].CopyFrom(attrs[key])  # the target's default differs: say the value
            else:
                stripped += 1
    problems = [p for node in _node_defs(meta.graph_def)
                for p in _problems(node, mode, table, functions, op_def_registry)]
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        raise FuseLensError(f"{what} cannot be written for {target_of(mode).title}: {shown}")
    return meta.graph_def.SerializeToString(deterministic=True), stripped


def _node_defs(graph_def: Any) -> Iterable[Any]:
    yield from graph_def.node
    for function in graph_def.library.function:
        yield from function.node_def


def _problems(node: Any, mode: str, table: Mapping[str, Mapping[str, Any]], functions: set[str],
              registry: Any) -> list[str]:
    """What the target lacks of this node, each with what to do."""
    if node.op in functions:
        return []
    target = target_of(mode)
    others = [t for t in TARGETS.values() if t.mode != mode]
    if node.op not in table:
        elsewhere = [t for t in others if node.op in op_table(t.mode)]
        fix = (f"export with --mode {elsewhere[0].mode} ({elsewhere[0].title} has it)" if elsewhere
               else "no Ascend TF adapter's TensorFlow has it: rewrite that part of the model with older ops")
        return [f"node {node.name} is a {node.op}, an op TensorFlow {target.version} does not have: {fix}"]
    found = []
    for key in sorted(node.attr):
        if key.startswith("_") or key in table[node.op]:
            continue
        addition = next((a for a in ADDITIONS if a.op == node.op and a.attr == key), None)
        since = f" (added {addition.added})" if addition else ""
        elsewhere = [t for t in others if key in op_table(t.mode).get(node.op, {})]
        op_def = registry.get(node.op)
        default = next((a.default_value for a in op_def.attr if a.name == key and a.HasField("default_value")),
                       None) if op_def else None
        value = attr_to_py(node.attr[key])
        fix = f"set it to its default {attr_to_py(default)!r} in the model" if default is not None else \
            "remove it from the model"
        if elsewhere:
            fix += f", or export with --mode {elsewhere[0].mode} ({elsewhere[0].title} has it)"
        found.append(f"node {node.name} ({node.op}) sets {key}={value!r}, an attribute TensorFlow "
                     f"{target.version} does not have{since}: {fix}")
    return found
