"""DecodeCSV: split each record into fields as TF's decode_csv_op.cc does, then convert each
field to its column's dtype (an empty field, or one equal to na_value, takes the default).

TF's splitting rules, kept here with its messages: a field that starts with ``"`` is quoted
and ends at ``"`` followed by the delimiter or the end of the record, ``""`` inside it is one
quote; an unquoted field may hold no quote, CR or LF; a record ending in the delimiter has an
empty last field. Python-level loops: CSV lines are short and come a batch at a time.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import str_attr
from zmtf.kernels.registry import register

#: what TF's safe_strto32/64 accept: optional blanks, sign, decimal digits
_INTEGER = re.compile(rb"\s*[+-]?\d+\s*\Z")
_LIMITS = {"int32": 2**31, "int64": 2**63}
_TF_NAMES = {"float32": "float", "float64": "double", "int32": "int32", "int64": "int64"}


@register("DecodeCSV")
def decode_csv(ctx: Any, inputs: list, attrs: dict) -> list:
    records = np.asarray(inputs[0], dtype=object)
    types, defaults = attrs["OUT_TYPE"], attrs["defaults"]
    select = attrs.get("select_cols") or None
    rules = (str_attr(attrs, "field_delim", attrs["_node_name"]).encode("utf-8"), attrs["use_quote_delim"], select)
    na_value = str_attr(attrs, "na_value", attrs["_node_name"]).encode("utf-8")
    columns: list[list[Any]] = [[] for _ in types]
    for i, record in enumerate(records.reshape(-1)):
        fields = _split(bytes(record), *rules)
        if len(fields) != len(types):
            raise InvalidArgumentError(
                f"Expect {len(types)} fields but have {len(fields)} in record {i}")
        for f, field in enumerate(fields):
            columns[f].append(_value(field, f, i, types[f], defaults[f], na_value))
    return [_column(values, dtype, records.shape) for values, dtype in zip(columns, types)]


def _column(values: list[Any], dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(shape)
    return np.array(values, dtype=dtype).reshape(shape)


def _value(field: bytes, f: int, i: int, dtype: str, default: Any, na_value: bytes) -> Any:
    if not field or field == na_value:
        if not len(default):
            raise InvalidArgumentError(f"Field {f} is required but missing in record {i}!")
        return default[0]
    if dtype == "string":
        return field
    if dtype in _LIMITS:
        number = int(field) if _INTEGER.match(field) else None
        if number is not None and -_LIMITS[dtype] <= number < _LIMITS[dtype]:
            return number
    else:
        try:
            if b"_" not in field:
                return float(field)
        except ValueError:
            pass
    raise InvalidArgumentError(f"Field {f} in record {i} is not a valid {_TF_NAMES[dtype]}: "
                               f"{field.decode('utf-8', 'replace')}")


def _split(record: bytes, delim: bytes, quotes: bool, select: list[int] | None) -> list[bytes]:
    """The fields of one record (only the selected ones when ``select`` is given)."""
    fields: list[bytes] = []
    at, parsed, end = 0, 0, len(record)
    d = delim[0]
    while at < end:
        if record[at] in b"\r\n":
            at += 1
            continue
        include = select is None or select[len(fields)] == parsed
        if quotes and record[at] == 0x22:          # '"'
            field, at = _quoted(record, at + 1, d)
        else:
            stop = record.find(delim, at)
            stop = end if stop < 0 else stop
            field = record[at:stop]
            if (quotes and b'"' in field) or b"\n" in field or b"\r" in field:
                raise InvalidArgumentError("Unquoted fields cannot have quotes/CRLFs inside")
            at = stop + 1
        parsed += 1
        if include:
            fields.append(field)
            if select is not None and len(fields) == len(select):
                return fields
    if record and record[-1] == d and (select is None or select[len(fields)] == parsed):
        fields.append(b"")
    return fields


def _quoted(record: bytes, at: int, d: int) -> tuple[bytes, int]:
    """The body of a quoted field that starts at ``at`` (after its quote) and where the next
    field starts."""
    out = bytearray()
    end = len(record)
    while at < end - 1 and not (record[at] == 0x22 and record[at + 1] == d):
        if record[at] != 0x22:
            out.append(record[at])
            at += 1
        elif record[at + 1] == 0x22:
            out.append(0x22)
            at += 2
        else:
            raise InvalidArgumentError("Quote inside a string has to be escaped by another quote")
    if not (at < end and record[at] == 0x22 and (at == end - 1 or record[at + 1] == d)):
        raise InvalidArgumentError("Quoted field has to end with quote followed by delim or end")
    return bytes(out), at + 2
