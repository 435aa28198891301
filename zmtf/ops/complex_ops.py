"""Complex numbers: tf.complex, tf.real, tf.imag, tf.conj, tf.angle (and tf.abs of a complex
tensor, which TF builds as ComplexAbs). Kernels: kernels/cpu/complex_math.py."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.framework.tensor_shape import broadcast_shape
from zmtf.ops.constant_op import convert_to_tensor


@op_def("Complex")
def _complex_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    real, imag = inputs
    if real.dtype != imag.dtype or real.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"tf.complex needs real and imag of one dtype, float32 or float64; got "
                        f"{real.dtype.name} and {imag.dtype.name}")
    out = dtypes.complex64 if real.dtype == dtypes.float32 else dtypes.complex128
    return [(out, broadcast_shape(real.shape, imag.shape))]


@op_def("Real", "Imag", "ComplexAbs", "Angle")
def _real_part_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype.real_dtype, inputs[0].shape)]


@op_def("Conj")
def _conj_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's name
    """real + imag * 1j: complex64 from float32 parts, complex128 from float64 ones."""
    real = convert_to_tensor(real, name="real")
    imag = convert_to_tensor(imag, dtype=real.dtype, name="imag")
    return apply_op("Complex", [real, imag], name=name or "Complex").outputs[0]


def real(x: Any, name: str | None = None) -> Tensor:
    """The real part of a complex tensor; a real tensor itself."""
    x = convert_to_tensor(x, name="input")
    return apply_op("Real", [x], name=name or "Real").outputs[0] if x.dtype.is_complex else x


def imag(x: Any, name: str | None = None) -> Tensor:
    """The imaginary part of a complex tensor; zeros for a real one."""
    x = convert_to_tensor(x, name="input")
    return apply_op("Imag", [x], name=name or "Imag").outputs[0]


def conj(x: Any, name: str | None = None) -> Tensor:
    """The complex conjugate; a real tensor itself."""
    x = convert_to_tensor(x, name="input")
    return apply_op("Conj", [x], name=name or "Conj").outputs[0] if x.dtype.is_complex else x


def angle(x: Any, name: str | None = None) -> Tensor:
    """The argument (phase) of each complex element, in radians."""
    x = convert_to_tensor(x, name="input")
    return apply_op("Angle", [x], name=name or "Angle").outputs[0]


def complex_abs(x: Any, name: str | None = None) -> Tensor:
    """|x| of a complex tensor, as a float tensor (what tf.abs builds for complex input)."""
    return apply_op("ComplexAbs", [convert_to_tensor(x, name="x")], name=name or "ComplexAbs").outputs[0]
