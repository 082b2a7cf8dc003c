"""The two views of an edge: a NodeDef's input string (`TensorRef`) and a reader seen from its producer
(`Consumer`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True, order=True, slots=True)
class TensorRef:
    """One input string of a NodeDef: `name`, `name:port` or `^name` (control)."""

    node: str
    port: int = 0
    control: bool = False

    @classmethod
    def parse(cls, text: str) -> TensorRef:
        if text.startswith("^"):
            return cls(sys.intern(text[1:]), 0, True)
        name, sep, port = text.rpartition(":")
        if sep and port.isdigit():
            return cls(sys.intern(name), int(port))
        return cls(sys.intern(text), 0)

    def __str__(self) -> str:
        if self.control:
            return f"^{self.node}"
        return self.node if self.port == 0 else f"{self.node}:{self.port}"


def input_edge(text: str) -> tuple[str, bool]:
    """(the node an input string reads, whether a control input), with no TensorRef made for a plain name (most
    inputs): for the loops over every input of every node an edit changed."""
    if ":" not in text and text[:1] != "^":
        return text, False
    ref = TensorRef.parse(text)
    return ref.node, ref.control


@dataclass(frozen=True, slots=True)
class Consumer:
    """A data edge seen from its producer: `node` reads the tensor at input slot `index`."""

    node: str
    index: int
    port: int
