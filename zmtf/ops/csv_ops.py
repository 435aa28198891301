"""``tf.decode_csv``: CSV records (a tf.string tensor of any shape) -> one tensor per column,
shaped like the records, with the dtype of that column's default.

One DecodeCSV op; its CPU kernel (kernels/cpu/decode_csv.py) splits each record as TF does
(RFC 4180 quotes: ``"a,b"`` is one field, ``""`` inside quotes is a quote). The defaults
travel as an attr (a list per column: ``[]`` for a required column, else one value), so the
op has one input, the records; TF feeds them as tensors, which changes nothing for TF1 code
that passes Python lists.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor

STRING_INPUT_OPS.add("DecodeCSV")
_COLUMN_TYPES = ("float32", "float64", "int32", "int64", "string")


@op_def("DecodeCSV")
def _decode_csv_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(t), inputs[0].shape) for t in attrs["OUT_TYPE"]]


not_differentiable("DecodeCSV")


def _column_default(i: int, default: Any) -> tuple[str, np.ndarray]:
    """(dtype name, an array of 0 or 1 value) of one record_defaults entry, typed as TF converts it:
    int -> int32, float -> float32, str/bytes -> string, a numpy scalar or a constant Tensor
    keeps its dtype, [] -> a required float32 column."""
    if isinstance(default, Tensor):
        if default.op.type != "Const":
            raise TypeError(f"decode_csv: record_defaults[{i}] must be a constant (a Python "
                            f"value, a list, or tf.constant), got the output of {default.op.type}")
        dtype, flat = default.dtype.name, np.asarray(default.op.get_attr("value")).reshape(-1).tolist()
    else:
        flat = list(default) if isinstance(default, (list, tuple, np.ndarray)) else [default]
        dtype = _python_dtype(flat[0]) if flat else "float32"
    if dtype not in _COLUMN_TYPES:
        raise TypeError(f"Value passed to parameter 'record_defaults' has DataType {dtype} not "
                        f"in list of allowed values: float32, float64, int32, int64, string")
    if len(flat) > 1:
        raise ValueError(f"decode_csv: record_defaults[{i}] has {len(flat)} values; give one "
                         f"value, or [] to make the column required")
    if dtype == "string":
        flat = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in flat]
    # an array attr: it crosses the wire as a tensor frame (bytes cannot be a plain attr)
    return dtype, np.array(flat, dtype=object if dtype == "string" else dtype).reshape(len(flat))


def _python_dtype(value: Any) -> str:
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.generic):
        return value.dtype.name
    return {int: "int32", float: "float32"}.get(type(value), type(value).__name__)


def decode_csv(records: Any, record_defaults: Any, field_delim: str = ",",
               use_quote_delim: bool = True, name: str | None = None, na_value: str = "",
               select_cols: Any = None) -> list[Tensor]:
    """Parse CSV ``records`` into one tensor per column (TF1's tf.decode_csv)."""
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    if len(field_delim) != 1:
        raise ValueError(f"decode_csv: field_delim must be one character, got {field_delim!r}")
    columns = [_column_default(i, d) for i, d in enumerate(record_defaults)]
    records = convert_to_tensor(records, dtype=dtypes.string)
    op = apply_op("DecodeCSV", [records],
                  {"OUT_TYPE": [t for t, _ in columns], "defaults": [v for _, v in columns],
                   "field_delim": field_delim, "use_quote_delim": bool(use_quote_delim),
                   "na_value": na_value, "select_cols": select_cols or []},
                  name=name or "DecodeCSV")
    return list(op.outputs)


__all__ = ["decode_csv"]
