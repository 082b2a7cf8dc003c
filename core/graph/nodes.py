"""Builders for new NodeDefs, so passes never hand-assemble protobufs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from fuselens.core.graph import proto


def make_attr(value: Any) -> proto.AttrValue:
    """An AttrValue from a Python value: bool, int, float, str/bytes, ndarray, list, AttrValue."""
    if isinstance(value, proto.AttrValue):
        return value
    if isinstance(value, bool):
        return proto.AttrValue(b=value)
    if isinstance(value, int):
        return proto.AttrValue(i=value)
    if isinstance(value, float):
        return proto.AttrValue(f=value)
    if isinstance(value, str):
        return proto.AttrValue(s=value.encode())
    if isinstance(value, bytes):
        return proto.AttrValue(s=value)
    if isinstance(value, np.ndarray):
        return proto.AttrValue(tensor=proto.ndarray_to_tensor(value))
    if isinstance(value, (list, tuple)):
        attr = proto.AttrValue()
        if all(isinstance(v, str) for v in value):
            attr.list.s.extend(v.encode() for v in value)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            attr.list.i.extend(value)
        elif all(isinstance(v, float) for v in value):
            attr.list.f.extend(value)
        else:
            raise TypeError(f"cannot make a list attr from {value!r}")
        return attr
    raise TypeError(f"cannot make an attr from {type(value).__name__}")


def make_node(
    op: str,
    name: str,
    inputs: Iterable[str] = (),
    attrs: Mapping[str, Any] | None = None,
    *,
    device: str = "",
) -> proto.NodeDef:
    node = proto.NodeDef(op=op, name=name, input=[str(i) for i in inputs], device=device)
    for key, value in (attrs or {}).items():
        node.attr[key].CopyFrom(make_attr(value))
    return node


def make_const(name: str, value: np.ndarray) -> proto.NodeDef:
    value = np.asarray(value)
    node = proto.NodeDef(op="Const", name=name)
    node.attr["dtype"].type = proto.tf_dtype(value.dtype)
    node.attr["value"].tensor.CopyFrom(proto.ndarray_to_tensor(value))
    return node
