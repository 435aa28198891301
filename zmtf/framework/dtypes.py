"""DType: TF's element types, mapped one-to-one onto numpy dtypes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class DType:
    """An element type: ``tf.float32.name == "float32"``, ``tf.float32.as_numpy_dtype``."""

    name: str

    @property
    def as_numpy_dtype(self) -> type:
        return np.dtype(self.name).type

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.name)

    @property
    def size(self) -> int:
        return self.np.itemsize

    @property
    def is_floating(self) -> bool:
        return self.name in ("float16", "float32", "float64")

    @property
    def is_integer(self) -> bool:
        return self.name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def base_dtype(self) -> DType:
        return self

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        try:
            return self.name == as_dtype(other).name  # type: ignore[arg-type]
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)


float16 = DType("float16")
float32 = DType("float32")
float64 = DType("float64")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
uint16 = DType("uint16")
uint32 = DType("uint32")
uint64 = DType("uint64")
bool_ = DType("bool")
half = float16
double = float64
# A handle on a queue or accumulator: lives on one device, is never fed, fetched or sent.
resource = DType("resource")

ALL_DTYPES: tuple[DType, ...] = (
    float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool_,
)
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"half": float16, "double": float64, "float": float32, "resource": resource})


def as_dtype(value: Any) -> DType:
    """DType from a DType, a name ("float32"), a numpy dtype or a Python type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is float:
        return float32
    if value is int:
        return int32
    if value is bool:
        return bool_
    try:
        name = np.dtype(value).name
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to a zmtf DType") from None
    if name not in _BY_NAME:
        raise TypeError(
            f"dtype {name} is not supported by zmtf; use one of "
            + ", ".join(d.name for d in ALL_DTYPES)
        )
    return _BY_NAME[name]


def infer_dtype(value: Any) -> DType:
    """The dtype TF infers for a Python or numpy value: 3 -> int32, 3.0 -> float32."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return as_dtype(value.dtype)
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        return float32
    if arr.dtype == np.int64:
        return int32
    return as_dtype(arr.dtype)
