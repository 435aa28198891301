"""DType: TF's element types, mapped one-to-one onto numpy dtypes.

``tf.string`` is the one non-numeric type: its values are numpy object arrays whose
elements are ``bytes`` (TF1 fetches give bytes); ``to_string_array`` makes one from str
(utf-8 encoded), bytes, or nested lists/arrays of them.
"""

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
        return self.np.type

    @property
    def np(self) -> np.dtype:
        return np.dtype(object) if self.name in ("string", "variant") else np.dtype(self.name)

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
    def is_string(self) -> bool:
        return self.name == "string"

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def is_unsigned(self) -> bool:
        return self.name in ("uint8", "uint16", "uint32", "uint64")

    @property
    def is_complex(self) -> bool:
        return self.name in ("complex64", "complex128")

    @property
    def is_quantized(self) -> bool:
        return False   # nor quantized ones

    @property
    def min(self) -> Any:
        """The smallest value of a numeric dtype (TF's ``DType.min``)."""
        return self._limits()[0]

    @property
    def max(self) -> Any:
        """The largest value of a numeric dtype (TF's ``DType.max``)."""
        return self._limits()[1]

    @property
    def limits(self) -> tuple[Any, Any]:
        """(min, max) of a numeric dtype; (False, True) for bool."""
        return self._limits()

    def _limits(self) -> tuple[Any, Any]:
        if self.is_floating:
            info = np.finfo(self.np)
            return info.min, info.max
        if self.is_integer:
            ints = np.iinfo(self.np)
            return ints.min, ints.max
        if self.is_bool:
            return False, True
        raise TypeError(f"Cannot find minimum/maximum value for {self.name}")

    def is_compatible_with(self, other: Any) -> bool:
        """True when ``other`` names this dtype (zmtf has no reference dtypes)."""
        return self == as_dtype(other)

    @property
    def real_dtype(self) -> DType:
        """float32 for complex64, float64 for complex128, else the dtype itself."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def as_datatype_enum(self) -> int:
        """TF's DataType number (types.proto): ``tf.float32.as_datatype_enum == 1``."""
        return DATATYPE_ENUMS[self.name]

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
# Complex numbers: constants, elementwise arithmetic and tf.complex/real/imag/conj, on the
# CPU of a local session (they do not cross zmtf's wire).
complex64 = DType("complex64")
complex128 = DType("complex128")
half = float16
double = float64
# Byte strings: numpy object arrays of bytes; CPU only, never on a GPU.
string = DType("string")
# A handle on a queue or accumulator: lives on one device, is never fed, fetched or sent.
resource = DType("resource")
# A TensorArray's value (an immutable list of arrays in a 0-d object array): lives in the
# process that made it, is never fed or sent; a While op carries it as a loop variable.
variant = DType("variant")

ALL_DTYPES: tuple[DType, ...] = (
    float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool_,
)
#: every dtype a tensor value may have: the numeric ones and tf.string
VALUE_DTYPES: tuple[DType, ...] = ALL_DTYPES + (string,)
#: TF's DataType numbers (tensorflow/core/framework/types.proto) by dtype name; a number
#: plus 100 is the "_REF" twin TF1 gives a ref variable's output
DATATYPE_ENUMS: dict[str, int] = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "complex64": 8, "int64": 9, "bool": 10, "qint8": 11, "quint8": 12, "qint32": 13,
    "bfloat16": 14, "qint16": 15, "quint16": 16, "uint16": 17, "complex128": 18, "float16": 19,
    "resource": 20, "variant": 21, "uint32": 22, "uint64": 23,
}
COMPLEX_DTYPES: tuple[DType, ...] = (complex64, complex128)
_BY_NAME: dict[str, DType] = {d.name: d for d in VALUE_DTYPES + COMPLEX_DTYPES}
_BY_NAME.update({"half": float16, "double": float64, "float": float32, "resource": resource,
                 "variant": variant})


def as_dtype(value: Any) -> DType:
    """DType from a DType, a name ("float32"), a numpy dtype, a Python type or TF's DataType
    number (1 is float32; a "_REF" number, 101, gives its base dtype: zmtf has no ref types)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return _of_enum(int(value))
    if value is float:
        return float32
    if value is int:
        return int32
    if value is bool:
        return bool_
    if value is str or value is bytes:
        return string
    try:   # numpy parses some strings with ast.literal_eval: "," is a SyntaxError there
        numpy_dtype = np.dtype(value)
    except (TypeError, ValueError, SyntaxError):
        text = repr(value)
        text = text if len(text) <= 80 else text[:77] + "..."
        raise TypeError(f"Cannot convert {text} to a zmtf DType") from None
    if numpy_dtype.kind in "OSU":  # object (bytes elements), numpy bytes_ and str_
        return string
    name = numpy_dtype.name
    if name not in _BY_NAME:
        raise TypeError(
            f"dtype {name} is not supported by zmtf; use one of "
            + ", ".join(d.name for d in ALL_DTYPES)
        )
    return _BY_NAME[name]


def _of_enum(number: int) -> DType:
    base = number - 100 if number > 100 else number
    for name, enum in DATATYPE_ENUMS.items():
        if enum == base and name in _BY_NAME:
            return _BY_NAME[name]
    raise TypeError(f"Cannot convert DataType number {number} to a zmtf DType: zmtf has "
                    + ", ".join(f"{d.name} ({DATATYPE_ENUMS[d.name]})" for d in VALUE_DTYPES))


def infer_dtype(value: Any) -> DType:
    """The dtype TF infers for a Python or numpy value: 3 -> int32, 3.0 -> float32."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return as_dtype(value.dtype)
    if isinstance(value, (str, bytes)):
        return string
    arr = np.asarray(value)
    if arr.dtype == object and arr.size and all(isinstance(v, (str, bytes)) for v in arr.flat):
        return string
    if arr.dtype == np.float64:
        return float32
    if arr.dtype == np.int64:
        return int32
    return as_dtype(arr.dtype)


def to_string_array(value: Any) -> np.ndarray:
    """``value`` (str, bytes, nested lists or arrays of them) as an object array of bytes.

    str is utf-8 encoded. numpy's ``S`` dtype is never used on the way: it drops trailing
    NUL bytes. Raises TypeError naming the first element that is not str or bytes.
    """
    if isinstance(value, (str, bytes)):
        array = np.empty((), dtype=object)
        array[()] = value
    elif isinstance(value, np.ndarray) and value.dtype.kind == "S":
        # fixed-width bytes already lost trailing NULs when they were made; keep what they hold
        array = value.astype(object)
    else:
        array = np.array(value, dtype=object)
    out = np.empty(array.shape, dtype=object)
    flat = out.reshape(-1)
    for i, item in enumerate(array.flat):
        if isinstance(item, bytes):
            flat[i] = bytes(item)   # np.bytes_ -> bytes
        elif isinstance(item, str):
            flat[i] = item.encode("utf-8")
        else:
            raise TypeError(f"a tf.string value needs str or bytes elements, got "
                            f"{type(item).__name__} {item!r:.40} at flat index {i}")
    return out
