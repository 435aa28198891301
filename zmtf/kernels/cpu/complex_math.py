"""Complex-number kernels: Complex(real, imag), Real, Imag, Conj, ComplexAbs, Angle.

numpy does the work; the float part of a complex64 is float32, of a complex128 float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import COMPLEX, FLOATS, shape_str
from zmtf.kernels.registry import register

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


@register("Complex", dtypes=("float32", "float64"))
def complex_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Complex(real, imag): real + imag * 1j, broadcast, complex64 from float32."""
    real, imag = (np.asarray(x) for x in inputs)
    try:
        shape = np.broadcast_shapes(real.shape, imag.shape)
    except ValueError:
        raise InvalidArgumentError(f"Incompatible shapes: {shape_str(real.shape)} vs. "
                                   f"{shape_str(imag.shape)} (Complex)") from None
    out = np.empty(shape, _COMPLEX_OF[real.dtype])
    out.real, out.imag = real, imag
    return [out]


@register("Real", dtypes=COMPLEX + FLOATS)
def real_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.ascontiguousarray(np.real(inputs[0]))]


@register("Imag", dtypes=COMPLEX + FLOATS)
def imag_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.ascontiguousarray(np.imag(inputs[0]))]


@register("Conj", dtypes=COMPLEX)
def conj_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.conj(inputs[0])]


@register("ComplexAbs", dtypes=COMPLEX)
def complex_abs_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.abs(inputs[0])]


@register("Angle", dtypes=COMPLEX)
def angle_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.angle(inputs[0]).astype(np.real(inputs[0]).dtype, copy=False)]
