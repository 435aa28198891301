"""``tf.dtypes``: the DType class, as_dtype, the dtype objects, cast and saturate_cast."""

from zmtf.framework.dtypes import (
    DType, as_dtype, bool_ as bool, complex64, complex128, double, float16, float32, float64, half, int8, int16, int32,
    int64, resource, string, uint8, uint16, uint32, uint64, variant,
)
from zmtf.ops.math_extras_ops import saturate_cast
from zmtf.ops.math_ops import cast

__all__ = ["DType", "as_dtype", "bool", "cast", "complex64", "complex128", "double", "float16", "float32", "float64", "half",
           "int8", "int16", "int32", "int64", "resource", "saturate_cast", "string", "uint8",
           "uint16", "uint32", "uint64", "variant"]
