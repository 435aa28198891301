"""The rest of TF1's elementwise trigonometry: tan, the inverse functions, the hyperbolic ones
and atan2, each with its gradient next to it (sin and cos live in math_ops). Their CPU
kernels are rows of kernels/cpu/elementwise.py's tables."""

from __future__ import annotations

from typing import Any

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import op_def
from zmtf.ops.math_grad import sum_to
from zmtf.ops.math_ops import (
    _binary, _binary_outputs, _unary, _unary_outputs, cos, reciprocal, rsqrt, square,
)

UNARY_TRIG = ("Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")
op_def(*UNARY_TRIG)(_unary_outputs)
op_def("Atan2")(_binary_outputs)


def tan(x: Any, name: str | None = None) -> Tensor:
    return _unary("Tan", x, name)


def asin(x: Any, name: str | None = None) -> Tensor:
    return _unary("Asin", x, name)


def acos(x: Any, name: str | None = None) -> Tensor:
    return _unary("Acos", x, name)


def atan(x: Any, name: str | None = None) -> Tensor:
    return _unary("Atan", x, name)


def sinh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Sinh", x, name)


def cosh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Cosh", x, name)


def asinh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Asinh", x, name)


def acosh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Acosh", x, name)


def atanh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Atanh", x, name)


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """The angle of the point (x, y): atan(y / x) in the right quadrant."""
    return _binary("Atan2", y, x, name)


@gradient("Tan")
def _tan_grad(op: Operation, grad: Tensor) -> list:
    return [grad * square(reciprocal(cos(op.inputs[0])))]


@gradient("Asin")
def _asin_grad(op: Operation, grad: Tensor) -> list:
    x = op.inputs[0]
    return [grad * rsqrt(1 - square(x))]


@gradient("Acos")
def _acos_grad(op: Operation, grad: Tensor) -> list:
    x = op.inputs[0]
    return [-grad * rsqrt(1 - square(x))]


@gradient("Atan")
def _atan_grad(op: Operation, grad: Tensor) -> list:
    return [grad * reciprocal(1 + square(op.inputs[0]))]


@gradient("Sinh")
def _sinh_grad(op: Operation, grad: Tensor) -> list:
    return [grad * cosh(op.inputs[0])]


@gradient("Cosh")
def _cosh_grad(op: Operation, grad: Tensor) -> list:
    return [grad * sinh(op.inputs[0])]


@gradient("Asinh")
def _asinh_grad(op: Operation, grad: Tensor) -> list:
    return [grad / cosh(op.outputs[0])]


@gradient("Acosh")
def _acosh_grad(op: Operation, grad: Tensor) -> list:
    return [grad / sinh(op.outputs[0])]


@gradient("Atanh")
def _atanh_grad(op: Operation, grad: Tensor) -> list:
    return [grad * reciprocal(1 - square(op.inputs[0]))]


@gradient("Atan2")
def _atan2_grad(op: Operation, grad: Tensor) -> list:
    y, x = op.inputs
    scale = grad * reciprocal(square(x) + square(y))
    return [sum_to(x * scale, y), sum_to(-y * scale, x)]


__all__ = ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cosh", "sinh", "tan"]
