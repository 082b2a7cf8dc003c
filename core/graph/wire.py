"""The GraphDef wire format, read and written without decoding every node: a serialized GraphDef kept as
its bytes (`SerializedGraphDef`), its node records decoded when read (`NodeRecords`), and the record heads
the writers put before each node (`node_records`)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

import numpy as np

from fuselens.core.graph import proto

# A node up to this size (read from a .pb, or made by a pass) is kept as its serialized record and decoded
# when read; a larger one (a weight) is kept parsed, which costs about its bytes and no copy per read.
WRITTEN_NODE_BYTES = 4 << 10


def node_records(payloads: Iterable[bytes]) -> Iterator[bytes]:
    """Each serialized NodeDef as a GraphDef node record (field 1): its head, then itself."""
    for payload in payloads:
        yield record_head(1, len(payload))
        yield payload


def record_head(field: int, length: int) -> bytes:
    """The head of a length-delimited protobuf record: its tag and its length (both varints)."""
    head = bytearray()
    for value in ((field << 3) | 2, length):
        while value > 0x7F:
            head.append(value & 0x7F | 0x80)
            value >>= 7
        head.append(value)
    return bytes(head)


class SerializedGraphDef:
    """A serialized GraphDef kept as its bytes: `node` decodes a NodeDef each time one is read, and only the
    rest (library, versions) is parsed. Parsed whole, a GraphDef takes ~7.5x its bytes (a 20k-node graph's
    2.5 MB took 18.7 MB); a graph read from a .pb needs little more than the .pb. A node over
    WRITTEN_NODE_BYTES (a weight) is parsed once instead: parsed, it costs about its bytes, and decoding it
    at each read copied the weights of a model made of them (ResNet50: +0.55 CPU s). It stands in for the
    GraphDef where a Graph reads one (`node`, `library`, `versions`)."""

    __slots__ = ("node", "rest")

    def __init__(self, data: bytes, starts: array, ends: array, rest: list[tuple[int, int]]):
        self.node = NodeRecords.read(data, starts, ends)
        self.rest = proto.GraphDef.FromString(b"".join(data[start:end] for start, end in rest))

    @classmethod
    def read(cls, data: bytes) -> SerializedGraphDef | proto.GraphDef:
        """`data` kept as bytes; parsed whole instead when its top level is not the plain one walked here
        (which also raises DecodeError for corrupt data). A node record that does not decode raises
        DecodeError when it is read."""
        spans = _top_level_records(data)
        return proto.GraphDef.FromString(data) if spans is None else cls(data, *spans)

    def parsed(self) -> proto.GraphDef:
        """The GraphDef the bytes read held: its nodes in their order, then the rest merged in."""
        graph_def = proto.GraphDef()
        graph_def.node.extend(self.node)
        graph_def.MergeFrom(self.rest)
        return graph_def

    @property
    def library(self) -> proto.FunctionDefLibrary:
        return self.rest.library

    @property
    def versions(self) -> Any:
        return self.rest.versions

    def as_read(self) -> bytes:
        """A GraphDef of the same graph, its node records as they were read (none decoded), not the bytes
        `serialized()` writes: what pickling sends. Decoding and writing again every node made pickling the
        20k-node graph 53 ms instead of 13, DenseNet121 60 instead of 34 (each fusion the window asks of its
        TensorFlow helper sends the graph)."""
        return b"".join(chain(node_records(self.node.payloads()), [self.rest.SerializeToString()]))

    def serialized(self) -> Iterator[bytes]:
        """What the parsed GraphDef serializes to (deterministically), in pieces: its nodes (field 1) come
        first, then the rest, fields in order and unknown ones last, as the parsed message writes them."""
        yield from node_records(node.SerializeToString(deterministic=True) for node in self.node)
        yield self.rest.SerializeToString(deterministic=True)


def _top_level_records(data: bytes) -> tuple[array, array, list[tuple[int, int]]] | None:
    """A serialized GraphDef's NodeDef records (field 1) as the start and end of each payload, and the spans
    of its other records; None when its top level has anything but well-formed records of the four wire
    types a GraphDef writes (a node that is no length-delimited record, a group, a truncation)."""
    starts, ends = array("i"), array("i")
    rest: list[tuple[int, int]] = []
    size, i = len(data), 0
    try:
        while i < size:
            head = i
            key, i = _varint(data, i)
            wire = key & 7
            if wire == 2:
                length, i = _varint(data, i)
                end = i + length
                if end > size:
                    return None
                if key >> 3 == 1:
                    starts.append(i)
                    ends.append(end)
                else:
                    rest.append((head, end))
                i = end
                continue
            if key >> 3 in (0, 1):
                return None
            if wire == 0:
                _, i = _varint(data, i)
            elif wire in (1, 5):
                i += 8 if wire == 1 else 4
            else:
                return None
            if i > size:
                return None
            rest.append((head, i))
    except IndexError:  # a varint cut off by the end
        return None
    return starts, ends, rest


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """The varint at data[i:] and the position after it."""
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7


class NodeRecords(Sequence[proto.NodeDef]):
    """A SerializedGraphDef's nodes, or an edit's: the NodeDef at a position is decoded from its bytes when
    asked for (a new message each time; ~0.6 us for a typical node), or read from `parsed` where its end is
    -1 (its start is then its position there)."""

    __slots__ = ("data", "ends", "parsed", "starts")

    def __init__(self, data: bytes, starts: array, ends: array, parsed: Sequence[proto.NodeDef] = ()):
        self.data, self.starts, self.ends, self.parsed = data, starts, ends, parsed

    @classmethod
    def read(cls, data: bytes, starts: array, ends: array) -> NodeRecords:
        """The records at these spans of `data`, those over WRITTEN_NODE_BYTES parsed (into one message, so
        they share its arena) and the others copied out of `data`, which is not kept."""
        if all(end - start <= WRITTEN_NODE_BYTES for start, end in zip(starts, ends)):
            return cls(data, starts, ends)
        parsed = proto.GraphDef()
        kept_starts, kept_ends, pieces, size = array("i"), array("i"), [], 0
        for start, end in zip(starts, ends):
            if end - start > WRITTEN_NODE_BYTES:
                kept_starts.append(len(parsed.node))
                kept_ends.append(-1)
                parsed.node.add().MergeFromString(data[start:end])
            else:
                kept_starts.append(size)
                size += end - start
                kept_ends.append(size)
                pieces.append(data[start:end])
        return cls(b"".join(pieces), kept_starts, kept_ends, parsed.node)

    @classmethod
    def written(cls, nodes: Iterable[proto.NodeDef]) -> NodeRecords:
        """These nodes serialized, one record each."""
        starts, ends, payloads, end = array("i"), array("i"), [], 0
        for node in nodes:
            payload = node.SerializeToString()
            starts.append(end)
            end += len(payload)
            ends.append(end)
            payloads.append(payload)
        return cls(b"".join(payloads), starts, ends)

    def __getitem__(self, position: int) -> proto.NodeDef:  # type: ignore[override]
        end = self.ends[position]
        if end < 0:
            return self.parsed[self.starts[position]]
        return proto.NodeDef.FromString(self.data[self.starts[position]:end])

    def __len__(self) -> int:
        return len(self.starts)

    def holders(self, key: bytes) -> np.ndarray:
        """The positions of the records that may hold `key` (an attribute's name) in their bytes, sorted: one
        left out holds it certainly not. Found with one scan of the bytes, no node decoded (a find per record
        took 60 ms on a 100k-node graph); a parsed record (end -1) may always hold it."""
        starts, ends = np.frombuffer(self.starts, dtype=np.int32), np.frombuffer(self.ends, dtype=np.int32)
        found, data = [], self.data
        at = data.find(key)
        while at >= 0:
            found.append(at)
            at = data.find(key, at + 1)
        spans = np.flatnonzero(ends >= 0)  # the records in `data`, in the order of their starts
        assert np.all(np.diff(starts[spans]) >= 0), "records out of order"
        offsets = np.array(found, dtype=np.int64)
        record = np.searchsorted(starts[spans], offsets, side="right") - 1
        inside = record >= 0
        record, offsets = spans[record[inside]], offsets[inside]
        record = record[offsets + len(key) <= ends[record]]
        return np.union1d(record, np.flatnonzero(ends < 0))

    def __iter__(self) -> Iterator[proto.NodeDef]:
        data, parse, parsed = self.data, proto.NodeDef.FromString, self.parsed
        return (parsed[start] if end < 0 else parse(data[start:end]) for start, end in zip(self.starts, self.ends))

    def payloads(self) -> Iterator[bytes]:
        """Each node's record as held: the bytes read (not decoded), a parsed node written out."""
        data, parsed = self.data, self.parsed
        return (parsed[start].SerializeToString() if end < 0 else data[start:end]
                for start, end in zip(self.starts, self.ends))
