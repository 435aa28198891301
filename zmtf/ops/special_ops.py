"""Special functions: ``tf.erf``, ``tf.erfc``, ``tf.lgamma``, ``tf.digamma`` (elementwise,
float16/32/64) and ``tf.math.polygamma(a, x)``, ``tf.math.zeta(x, q)`` (float32/64, with
broadcasting), with TF's gradients: erf' = 2/sqrt(pi) exp(-x^2), lgamma' = digamma,
digamma' = polygamma(1, x), and d/dx polygamma(n, x) = polygamma(n + 1, x).
"""

from __future__ import annotations

import math
from typing import Any

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_pair, convert_to_tensor
from zmtf.ops.math_grad import sum_to
from zmtf.framework.tensor_shape import broadcast_shape

Grads = list[Tensor | None]

#: op type -> the float dtypes TF's kernels take
_UNARY = ("Erf", "Erfc", "Lgamma", "Digamma")
_BINARY = ("Polygamma", "Zeta")
_ALLOWED = {**{op: ("float16", "float32", "float64") for op in _UNARY},
            **{op: ("float32", "float64") for op in _BINARY}}


def _check_dtype(op_type: str, x: Tensor) -> None:
    allowed = _ALLOWED[op_type]
    if x.dtype.name not in allowed:
        raise TypeError(f"Value passed to '{op_type}' has DataType {x.dtype.name} not in list of "
                        f"allowed values: {', '.join(allowed)} ({x.name}); cast it with tf.cast()")


@op_def(*_UNARY)
def _unary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _check_dtype(attrs["_op_type"], inputs[0])
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def(*_BINARY)
def _binary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    a, x = inputs
    _check_dtype(attrs["_op_type"], a)
    if a.dtype != x.dtype:
        raise TypeError(f"{attrs['_op_type']}: both inputs must have one dtype, got "
                        f"{a.dtype.name} and {x.dtype.name}; cast one with tf.cast()")
    return [(a.dtype, broadcast_shape(a.shape, x.shape))]


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return apply_op(op_type, [convert_to_tensor(x)], {"_op_type": op_type}, name=name).outputs[0]


def _binary(op_type: str, a: Any, x: Any, name: str | None) -> Tensor:
    a, x = convert_pair(a, x)
    return apply_op(op_type, [a, x], {"_op_type": op_type}, name=name).outputs[0]


def erf(x: Any, name: str | None = None) -> Tensor:
    """The Gauss error function, 2/sqrt(pi) * integral of exp(-t^2) from 0 to x."""
    return _unary("Erf", x, name)


def erfc(x: Any, name: str | None = None) -> Tensor:
    """1 - erf(x), accurate where erf(x) is close to 1."""
    return _unary("Erfc", x, name)


def lgamma(x: Any, name: str | None = None) -> Tensor:
    """log|Gamma(x)|; inf at 0 and the negative integers."""
    return _unary("Lgamma", x, name)


def digamma(x: Any, name: str | None = None) -> Tensor:
    """psi(x) = d/dx lgamma(x); nan at 0 and the negative integers, as TF."""
    return _unary("Digamma", x, name)


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The a-th derivative of digamma at x, for integer-valued a >= 0 (nan for any other a)."""
    return _binary("Polygamma", a, x, name)


def zeta(x: Any, q: Any, name: str | None = None) -> Tensor:
    """The Hurwitz zeta function sum_k (q + k)^-x, for x > 1."""
    return _binary("Zeta", x, q, name)


# ---- gradients -------------------------------------------------------------------------------
@gradient("Erf")
def _erf_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    return [grad * (2.0 / math.sqrt(math.pi)) * math_ops.exp(-math_ops.square(x))]


@gradient("Erfc")
def _erfc_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    return [grad * (-2.0 / math.sqrt(math.pi)) * math_ops.exp(-math_ops.square(x))]


@gradient("Lgamma")
def _lgamma_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * digamma(op.inputs[0])]


@gradient("Digamma")
def _digamma_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    return [grad * polygamma(convert_to_tensor(1, dtype=x.dtype), x)]


@gradient("Polygamma")
def _polygamma_grad(op: Operation, grad: Tensor) -> Grads:
    """No gradient for the order a (an integer), as TF."""
    a, x = op.inputs
    with get_default_graph().name_scope("PolygammaGrad"):
        return [None, sum_to(grad * polygamma(a + 1, x), x)]


@gradient("Zeta")
def _zeta_grad(op: Operation, grad: Tensor) -> Grads:
    """d/dq zeta(x, q) = -x zeta(x + 1, q); none for x, as TF."""
    x, q = op.inputs
    with get_default_graph().name_scope("ZetaGrad"):
        return [None, sum_to(grad * -x * zeta(x + 1, q), q)]
