"""Protobuf's text format (``.pbtxt``) for the messages of proto_message.py: ``to_text`` writes
what TF's ``text_format.MessageToString`` writes (fields in number order, two-space indent,
C-escaped strings, DataType names), ``merge_text`` reads it back, checked like binary input.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.data_type_names import DATA_TYPE_NAMES, enum_of_name
from zmtf.formats.proto_message import Field, Message, encode, register_text_format

_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}
_UNESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", '"': b'"', "'": b"'", "\\": b"\\",
              "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v", "?": b"?"}
MAX_TEXT_DEPTH = 64


# ---- writing --------------------------------------------------------------------------------
def to_text(message: Message) -> str:
    lines: list[str] = []
    _write(message, 0, lines)
    return "".join(lines)


def _write(message: Message, indent: int, lines: list[str]) -> None:
    pad = "  " * indent
    which = message.WhichOneof("value") if any(f.oneof for f in message.FIELDS) else None
    for f in sorted(message.FIELDS, key=lambda f: f.number):
        value = getattr(message, f.name)
        if f.kind == "map":
            _write_map(f, value, pad, indent, lines)
            continue
        if f.repeated:
            items = list(value)
        elif f.oneof:
            items = [value] if which == f.name else []
        elif f.kind == "message":
            items = [value] if f.name in message._present or encode(value) else []
        else:
            items = [value] if value != f.default() else []
        for item in items:
            if f.kind == "message":
                lines.append(f"{pad}{f.name} {{\n")
                _write(item, indent + 1, lines)
                lines.append(f"{pad}}}\n")
            else:
                lines.append(f"{pad}{f.name}: {_scalar_text(f, item)}\n")


def _write_map(f: Field, value: dict, pad: str, indent: int, lines: list[str]) -> None:
    """Map entries in key order, as TF's text format prints them."""
    for key, item in sorted(value.items()):
        lines.append(f"{pad}{f.name} {{\n{pad}  key: {_scalar_text(Field(1, 'key', f.key), key)}\n")
        if f.value == "message":
            lines.append(f"{pad}  value {{\n")
            _write(item, indent + 2, lines)
            lines.append(f"{pad}  }}\n{pad}}}\n")
        else:
            lines.append(f"{pad}  value: {_scalar_text(Field(2, 'value', f.value), item)}\n{pad}}}\n")


def _scalar_text(f: Field, value: Any) -> str:
    if f.kind == "string":
        return _quote(value.encode("utf-8"))
    if f.kind == "bytes":
        return _quote(bytes(value))
    if f.kind == "bool":
        return "true" if value else "false"
    if f.kind == "enum":
        return (f.names or DATA_TYPE_NAMES).get(value, str(value))
    if f.kind in ("float", "double"):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = str(np.float32(value)) if f.kind == "float" else repr(float(value))
        return str(float(text))
    return str(int(value))


def _quote(data: bytes) -> str:
    out = []
    for byte in data:
        if byte in _ESCAPES:
            out.append(_ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


# ---- reading --------------------------------------------------------------------------------
_TOKEN = re.compile(r"""\s*(?:\#[^\n]*\n?\s*)*(?:
    (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:inf(?:inity)?|nan|(?:0[xX][0-9a-fA-F]+)|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<sym>[{}<>:\[\],;])
)""", re.VERBOSE | re.IGNORECASE)


class _Tokens:
    def __init__(self, text: str, where: str) -> None:
        self.items: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                rest = text[pos:].lstrip()
                if not rest or rest.startswith("#"):
                    break
                raise InvalidArgumentError(f"{where}: cannot parse text format near "
                                           f"{rest[:40]!r}")
            kind = m.lastgroup or "end"
            self.items.append((kind, m.group(kind)))
            pos = m.end()
        self.pos = 0
        self.where = where

    def peek(self) -> tuple[str, str] | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise InvalidArgumentError(f"{self.where}: text format ends early"
                                       + (f", expected '{expected}'" if expected else ""))
        if expected is not None and token[1] != expected:
            raise InvalidArgumentError(f"{self.where}: expected '{expected}', found "
                                       f"'{token[1]:.40}'")
        self.pos += 1
        return token


def merge_text(text: str, message: Message) -> Message:
    """Parse protobuf text format into ``message`` (TF's ``text_format.Merge``)."""
    tokens = _Tokens(text, type(message).__name__)
    _read_fields(tokens, message, None, 0)
    return message


def _read_fields(tokens: _Tokens, message: Message, close: str | None, depth: int) -> None:
    if depth > MAX_TEXT_DEPTH:
        raise InvalidArgumentError(f"{tokens.where}: messages nested more than {MAX_TEXT_DEPTH} deep")
    type(message)._index()
    while True:
        token = tokens.peek()
        if token is None:
            if close is not None:
                tokens.take(close)
            return
        if close is not None and token[1] == close:
            tokens.take()
            return
        kind, name = tokens.take()
        f = message._BY_NAME.get(name) if kind == "ident" else None
        if f is None:
            raise InvalidArgumentError(f"{tokens.where}: {type(message).__name__} has no field "
                                       f"named {name!r:.40}")
        if f.kind in ("message", "map"):
            if tokens.peek() and tokens.peek()[1] == ":":
                tokens.take()
            opening = tokens.take()[1]
            if opening not in "{<":
                raise InvalidArgumentError(f"{tokens.where}: expected '{{' after '{name}'")
            _read_message_field(tokens, message, f, "}" if opening == "{" else ">", depth)
        else:
            tokens.take(":")
            if tokens.peek() and tokens.peek()[1] == "[":
                tokens.take()
                while tokens.peek() and tokens.peek()[1] != "]":
                    _store(message, f, _scalar_value(tokens, f))
                    if tokens.peek() and tokens.peek()[1] == ",":
                        tokens.take()
                tokens.take("]")
            else:
                _store(message, f, _scalar_value(tokens, f))
        if tokens.peek() and tokens.peek()[1] in (",", ";"):
            tokens.take()


def _read_message_field(tokens: _Tokens, message: Message, f: Field, close: str,
                        depth: int) -> None:
    if f.kind == "map":
        key_field, value_field = Field(1, "key", f.key), Field(2, "value", f.value, message=f.message)
        entry_key, item = key_field.default(), value_field.default()
        while tokens.peek() and tokens.peek()[1] != close:
            kind, name = tokens.take()
            if name == "key":
                tokens.take(":")
                entry_key = _scalar_value(tokens, key_field)
            elif name == "value" and f.value != "message":
                tokens.take(":")
                item = _scalar_value(tokens, value_field)
            elif name == "value":
                if tokens.peek() and tokens.peek()[1] == ":":
                    tokens.take()
                opening = tokens.take()[1]
                _read_fields(tokens, item, "}" if opening == "{" else ">", depth + 1)
            else:
                raise InvalidArgumentError(f"{tokens.where}: map entry has no field {name!r:.40}")
        tokens.take(close)
        getattr(message, f.name)[entry_key] = item
        return
    if f.repeated:
        item = f.message()
        _read_fields(tokens, item, close, depth + 1)
        getattr(message, f.name).append(item)
    else:
        _read_fields(tokens, getattr(message, f.name), close, depth + 1)
        message._present.add(f.name)
        if f.oneof:
            object.__setattr__(message, "_which", f.name)


def _store(message: Message, f: Field, value: Any) -> None:
    if f.repeated:
        getattr(message, f.name).append(value)
    else:
        setattr(message, f.name, value)


def _scalar_value(tokens: _Tokens, f: Field) -> Any:
    kind, text = tokens.take()
    where = f"{tokens.where}.{f.name}"
    if f.kind in ("string", "bytes"):
        if kind != "str":
            raise InvalidArgumentError(f"{where}: expected a quoted string, found {text!r:.40}")
        data = _unquote(text, where)
        while tokens.peek() and tokens.peek()[0] == "str":   # adjacent strings concatenate
            data += _unquote(tokens.take()[1], where)
        if f.kind == "bytes":
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgumentError(f"{where}: string is not valid UTF-8") from None
    if f.kind == "enum" and kind == "ident":
        number = enum_of_name(text) if f.names is None else next(
            (k for k, v in f.names.items() if v == text), None)
        if number is None:
            kind_name = "DataType" if f.names is None else f"{f.name} value"
            raise InvalidArgumentError(f"{where}: unknown {kind_name} {text!r:.40}")
        return number
    if f.kind == "bool":
        if text in ("true", "True", "t", "1"):
            return True
        if text in ("false", "False", "f", "0"):
            return False
        raise InvalidArgumentError(f"{where}: expected true or false, found {text!r:.40}")
    if kind != "num" and not (f.kind in ("float", "double") and text.lower() in
                              ("inf", "infinity", "nan")):
        raise InvalidArgumentError(f"{where}: expected a number, found {text!r:.40}")
    if f.kind in ("float", "double"):
        return float(text.rstrip("fF"))
    try:
        value = int(text, 0)
    except ValueError:
        raise InvalidArgumentError(f"{where}: expected an integer, found {text!r:.40}") from None
    bits = 32 if f.kind in ("int32", "uint32", "enum") else 64
    low = 0 if f.kind.startswith("uint") else -(2 ** (bits - 1))
    high = 2**bits if f.kind.startswith("uint") else 2 ** (bits - 1)
    if not low <= value < high:
        raise InvalidArgumentError(f"{where}: {value} is out of range for {f.kind}")
    return value


def _unquote(text: str, where: str) -> bytes:
    body = text[1:-1].encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
            continue
        nxt = body[i + 1:i + 2].decode("latin-1")
        if nxt in _UNESCAPES:
            out += _UNESCAPES[nxt]
            i += 2
        elif nxt.isdigit():
            digits = re.match(rb"[0-7]{1,3}", body[i + 1:i + 4])
            if not digits:
                raise InvalidArgumentError(f"{where}: bad escape in {text[:40]!r}")
            out.append(int(digits.group(), 8) & 0xFF)
            i += 1 + len(digits.group())
        elif nxt in "xX":
            digits = re.match(rb"[0-9a-fA-F]{1,2}", body[i + 2:i + 4])
            if not digits:
                raise InvalidArgumentError(f"{where}: bad escape in {text[:40]!r}")
            out.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        else:
            raise InvalidArgumentError(f"{where}: unknown escape '\\{nxt}' in {text[:40]!r}")
    return bytes(out)



register_text_format(to_text)  # str(message) (proto_message.py may not import this module)

__all__ = ["merge_text", "to_text"]
