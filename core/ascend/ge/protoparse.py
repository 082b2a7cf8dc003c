"""A small reader of `.proto` files: message classes at run time without protoc.

The GE dump schema (`ge_ir.proto`) ships as text. Python's protobuf has no `.proto` compiler,
and a run-time dependency on a protoc binary (or generated `_pb2` code to keep in sync) is what
this avoids: the file is parsed here into a `FileDescriptorProto` and protobuf's own descriptor
pool and message factory build the classes. It covers the proto3 subset such schemas use:
`syntax`, `package`, `option` (ignored), messages (nested), enums, `oneof`, `repeated`,
`map<K, V>` and field options in brackets (ignored). Anything else is a ValueError naming the
line, since a schema that half-loads would misread every dump.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FDP = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "double": _FDP.TYPE_DOUBLE, "float": _FDP.TYPE_FLOAT, "int64": _FDP.TYPE_INT64, "uint64": _FDP.TYPE_UINT64,
    "int32": _FDP.TYPE_INT32, "fixed64": _FDP.TYPE_FIXED64, "fixed32": _FDP.TYPE_FIXED32, "bool": _FDP.TYPE_BOOL,
    "string": _FDP.TYPE_STRING, "bytes": _FDP.TYPE_BYTES, "uint32": _FDP.TYPE_UINT32,
    "sfixed32": _FDP.TYPE_SFIXED32, "sfixed64": _FDP.TYPE_SFIXED64, "sint32": _FDP.TYPE_SINT32,
    "sint64": _FDP.TYPE_SINT64,
}
_TOKEN = re.compile(r"""\s+|//[^\n]*|/\*.*?\*/  # blanks and comments
                        |(?P<tok>"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.]*|-?0[xX][0-9a-fA-F]+|-?\d+|[{}\[\]<>=;,()])""",
                    re.S | re.X)


@dataclass
class _Token:
    text: str
    line: int


def _tokens(text: str, source: str) -> list[_Token]:
    tokens, pos, line = [], 0, 1
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if found is None:
            raise ValueError(f"{source}, line {line}: unexpected character {text[pos]!r}")
        if found.group("tok"):
            tokens.append(_Token(found.group("tok"), line))
        line += found.group(0).count("\n")
        pos = found.end()
    return tokens


class _Parser:
    """Recursive descent over the token list, filling a FileDescriptorProto."""

    def __init__(self, text: str, source: str):
        self.source = source
        self.tokens = _tokens(text, source)
        self.pos = 0
        self.file = descriptor_pb2.FileDescriptorProto(name=Path(source).name, syntax="proto3")
        self._unresolved: list[tuple[_FDP, str, str, int]] = []  # field, type name, scope, line
        self._kinds: dict[str, int] = {}  # full name (".pkg.Msg") -> TYPE_MESSAGE | TYPE_ENUM

    # ---- tokens ------------------------------------------------------------------------
    def _peek(self) -> str:
        return self.tokens[self.pos].text if self.pos < len(self.tokens) else ""

    def _line(self) -> int:
        return self.tokens[min(self.pos, len(self.tokens) - 1)].line if self.tokens else 1

    def _fail(self, what: str) -> ValueError:
        return ValueError(f"{self.source}, line {self._line()}: {what}")

    def _take(self, expected: str | None = None) -> str:
        if self.pos >= len(self.tokens):
            raise self._fail(f"unexpected end of file (expected {expected or 'more'})")
        text = self.tokens[self.pos].text
        if expected is not None and text != expected:
            raise self._fail(f"expected {expected!r}, found {text!r}")
        self.pos += 1
        return text

    def _skip_statement(self) -> None:
        while self._take() != ";":
            pass

    def _skip_brackets(self) -> None:
        if self._peek() == "[":
            while self._take() != "]":
                pass

    # ---- grammar -----------------------------------------------------------------------
    def parse(self) -> descriptor_pb2.FileDescriptorProto:
        while self.pos < len(self.tokens):
            word = self._take()
            if word == "syntax":
                self._take("=")
                if self._take().strip('"') != "proto3":
                    raise self._fail("only proto3 files are supported")
                self._take(";")
            elif word == "package":
                self.file.package = self._take()
                self._take(";")
            elif word == "option":
                self._skip_statement()
            elif word == "message":
                self._message(self.file.message_type.add(), self._prefix())
            elif word == "enum":
                self._enum(self.file.enum_type.add(), self._prefix())
            elif word == ";":
                continue
            else:
                raise self._fail(f"unsupported statement {word!r}")
        self._resolve()
        return self.file

    def _prefix(self) -> str:
        return f".{self.file.package}" if self.file.package else ""

    def _message(self, message: descriptor_pb2.DescriptorProto, scope: str) -> None:
        message.name = self._take()
        full = f"{scope}.{message.name}"
        self._kinds[full] = _FDP.TYPE_MESSAGE
        self._take("{")
        while self._peek() != "}":
            word = self._peek()
            if word == "message":
                self._take()
                self._message(message.nested_type.add(), full)
            elif word == "enum":
                self._take()
                self._enum(message.enum_type.add(), full)
            elif word in ("option", "reserved", "extensions"):
                self._skip_statement()
            elif word == "oneof":
                self._take()
                index = len(message.oneof_decl)
                message.oneof_decl.add(name=self._take())
                self._take("{")
                while self._peek() != "}":
                    if self._peek() == "option":
                        self._skip_statement()
                        continue
                    self._field(message, full, oneof_index=index)
                self._take("}")
            elif word == "map":
                self._map_field(message, full)
            elif word == ";":
                self._take()
            else:
                self._field(message, full)
        self._take("}")

    def _enum(self, enum: descriptor_pb2.EnumDescriptorProto, scope: str) -> None:
        enum.name = self._take()
        self._kinds[f"{scope}.{enum.name}"] = _FDP.TYPE_ENUM
        self._take("{")
        while self._peek() != "}":
            if self._peek() in ("option", "reserved"):
                self._skip_statement()
                continue
            name = self._take()
            self._take("=")
            enum.value.add(name=name, number=int(self._take(), 0))
            self._skip_brackets()
            self._take(";")
        self._take("}")

    def _field(self, message: descriptor_pb2.DescriptorProto, scope: str, oneof_index: int | None = None) -> None:
        label = _FDP.LABEL_OPTIONAL
        if self._peek() == "repeated":
            self._take()
            label = _FDP.LABEL_REPEATED
        elif self._peek() == "optional":
            raise self._fail("proto3 'optional' fields are not supported")
        type_name, line = self._take(), self._line()
        field = message.field.add(name=self._take(), label=label)
        self._take("=")
        field.number = int(self._take(), 0)
        self._skip_brackets()
        self._take(";")
        if oneof_index is not None:
            field.oneof_index = oneof_index
        self._set_type(field, type_name, scope, line)

    def _map_field(self, message: descriptor_pb2.DescriptorProto, scope: str) -> None:
        self._take("map")
        self._take("<")
        key_type, line = self._take(), self._line()
        if key_type not in SCALARS or key_type in ("float", "double", "bytes"):
            raise self._fail(f"map key type {key_type!r} is not allowed")
        self._take(",")
        value_type = self._take()
        self._take(">")
        name = self._take()
        self._take("=")
        number = int(self._take(), 0)
        self._skip_brackets()
        self._take(";")
        entry = message.nested_type.add(name="".join(part.title() for part in name.split("_")) + "Entry")
        entry.options.map_entry = True
        entry_scope = f"{scope}.{entry.name}"
        self._kinds[entry_scope] = _FDP.TYPE_MESSAGE
        self._set_type(entry.field.add(name="key", number=1, label=_FDP.LABEL_OPTIONAL), key_type, entry_scope, line)
        self._set_type(entry.field.add(name="value", number=2, label=_FDP.LABEL_OPTIONAL), value_type, entry_scope,
                       line)
        field = message.field.add(name=name, number=number, label=_FDP.LABEL_REPEATED, type=_FDP.TYPE_MESSAGE)
        field.type_name = entry_scope

    def _set_type(self, field: _FDP, type_name: str, scope: str, line: int) -> None:
        if type_name in SCALARS:
            field.type = SCALARS[type_name]
        else:
            self._unresolved.append((field, type_name, scope, line))

    def _resolve(self) -> None:
        """Message and enum names, looked up from the innermost scope outwards, as protoc does."""
        for field, name, scope, line in self._unresolved:
            full = self._lookup(name, scope)
            if full is None:
                raise ValueError(f"{self.source}, line {line}: unknown type {name!r}")
            field.type = self._kinds[full]
            field.type_name = full

    def _lookup(self, name: str, scope: str) -> str | None:
        if name.startswith("."):
            return name if name in self._kinds else None
        parts = scope.split(".")
        while True:
            candidate = ".".join([*parts, name])
            if candidate in self._kinds:
                return candidate
            if len(parts) <= 1:
                return None
            parts.pop()


def parse_proto(text: str, source: str = "<proto>") -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of one .proto text (ValueError naming the line if it cannot be read)."""
    return _Parser(text, source).parse()


def message_classes(path: str | Path) -> dict[str, Any]:
    """Every message class of a .proto file by its short name (nested ones as `Outer.Inner`).

    Each call builds its own descriptor pool, so the classes never clash with another copy of
    the same package loaded elsewhere in the process.
    """
    path = Path(path)
    file = parse_proto(path.read_text(encoding="utf-8"), str(path))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    classes: dict[str, Any] = {}
    prefix = f"{file.package}." if file.package else ""

    def collect(messages: Any, outer: str) -> None:
        for message in messages:
            short = f"{outer}{message.name}"
            if not message.options.map_entry:
                classes[short] = message_factory.GetMessageClass(pool.FindMessageTypeByName(prefix + short))
            collect(message.nested_type, f"{short}.")

    collect(file.message_type, "")
    return classes
