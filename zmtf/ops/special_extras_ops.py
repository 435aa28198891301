"""More special functions, with TF's gradients: ``tf.math.erfinv``, ``tf.math.ndtri``, the
modified Bessel functions ``tf.math.bessel_i0``/``i0e``/``i1``/``i1e``, the regularized
incomplete gamma functions ``tf.igamma``/``tf.igammac``, the regularized incomplete beta
function ``tf.betainc``, ``tf.lbeta`` and ``tf.math.cumulative_logsumexp``.

igamma's derivative in ``a`` is the IgammaGradA op; betainc has a gradient in ``x`` only,
as TF's. The one deliberate difference: d/dx bessel_i1 at x = 0 is 0.5, where TF's gradient
gives 1.0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_pair, convert_to_tensor
from zmtf.ops.math_compositions import xlog1py
from zmtf.ops.composite_ops import xlogy
from zmtf.ops.math_grad import sum_to
from zmtf.ops.selection_ops import where_v2
from zmtf.ops import special_ops
from zmtf.ops.special_ops import lgamma
from zmtf.framework.tensor_shape import TensorShape

Grads = list[Tensor | None]

_UNARY = ("Erfinv", "Ndtri", "BesselI0", "BesselI0e", "BesselI1", "BesselI1e")
_FLOATS = ("float16", "float32", "float64")


def _check_dtype(op_type: str, x: Tensor, allowed: tuple[str, ...] = _FLOATS) -> None:
    if x.dtype.name not in allowed:
        raise TypeError(f"Value passed to parameter 'x' of '{op_type}' has DataType "
                        f"{x.dtype.name} not in list of allowed values: {', '.join(allowed)} "
                        f"({x.name}); cast it with tf.cast()")


@op_def(*_UNARY, "CumulativeLogsumexp")
def _same_shape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _check_dtype(attrs["_op_type"], inputs[0])
    return [(inputs[0].dtype, inputs[0].shape)]


# Igamma and friends share special_ops' binary checks (one dtype, broadcast shapes)
special_ops._ALLOWED.update({op: _FLOATS for op in ("Igamma", "Igammac", "IgammaGradA")})
op_def("Igamma", "Igammac", "IgammaGradA")(special_ops._binary_outputs)


@op_def("Betainc")
def _betainc_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    """a, b and x have one shape, or are scalars (TF's Betainc does not broadcast further)."""
    for t in inputs:
        _check_dtype("Betainc", t, ("float32", "float64"))
    if len({t.dtype for t in inputs}) > 1:
        raise TypeError(f"Betainc: a, b and x must have one dtype, got "
                        f"{', '.join(t.dtype.name for t in inputs)}")
    shape = TensorShape(None)
    for t in inputs:
        if t.shape.ndims == 0:
            continue
        try:
            shape = shape.merge_with(t.shape)
        except ValueError as error:
            raise ValueError(f"{error} for 'Betainc' with input shapes: "
                             f"{', '.join(str(i.shape) for i in inputs)}: a, b and x must have "
                             f"one shape, or be scalars") from None
    if all(t.shape.ndims == 0 for t in inputs):
        shape = TensorShape([])
    return [(inputs[0].dtype, shape)]


def _unary(op_type: str, scope: str, x: Any, name: str | None) -> Tensor:
    with get_default_graph().name_scope(name or scope):
        t = convert_to_tensor(x, name="x")
        return apply_op(op_type, [t], {"_op_type": op_type}, name=op_type).outputs[0]


def erfinv(x: Any, name: str | None = None) -> Tensor:
    """The inverse of erf: y with erf(y) = x, for x in [-1, 1] (+-inf at +-1, nan outside)."""
    return _unary("Erfinv", "erfinv", x, name)


def ndtri(x: Any, name: str | None = None) -> Tensor:
    """The inverse of the standard normal CDF (the probit), for x in [0, 1]."""
    return _unary("Ndtri", "ndtri", x, name)


def bessel_i0(x: Any, name: str | None = None) -> Tensor:
    """I0(x), the modified Bessel function of order 0 (inf past |x| ~ 709.8 in float64)."""
    return _unary("BesselI0", "bessel_i0", x, name)


def bessel_i0e(x: Any, name: str | None = None) -> Tensor:
    """exp(-|x|) I0(x), finite for every x."""
    return _unary("BesselI0e", "bessel_i0e", x, name)


def bessel_i1(x: Any, name: str | None = None) -> Tensor:
    """I1(x), the modified Bessel function of order 1 (odd in x)."""
    return _unary("BesselI1", "bessel_i1", x, name)


def bessel_i1e(x: Any, name: str | None = None) -> Tensor:
    """exp(-|x|) I1(x)."""
    return _unary("BesselI1e", "bessel_i1e", x, name)


def _binary(op_type: str, a: Any, x: Any, name: str | None) -> Tensor:
    a, x = convert_pair(a, x)
    return apply_op(op_type, [a, x], {"_op_type": op_type}, name=name).outputs[0]


def igamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete gamma function."""
    return _binary("Igamma", a, x, name)


def igammac(a: Any, x: Any, name: str | None = None) -> Tensor:
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function."""
    return _binary("Igammac", a, x, name)


def _igamma_grad_a(a: Tensor, x: Tensor) -> Tensor:
    return apply_op("IgammaGradA", [a, x], {"_op_type": "IgammaGradA"}).outputs[0]


def betainc(a: Any, b: Any, x: Any, name: str | None = None) -> Tensor:
    """I_x(a, b), the regularized incomplete beta function; a, b, x of one shape or scalars."""
    a = convert_to_tensor(a, name="a")
    b = convert_to_tensor(b, dtype=a.dtype, name="b")
    x = convert_to_tensor(x, dtype=a.dtype, name="x")
    return apply_op("Betainc", [a, b, x], {}, name=name).outputs[0]


def lbeta(x: Any, name: str | None = None) -> Tensor:
    """log|B(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x)); -inf for an empty axis."""
    with get_default_graph().name_scope(name or "lbeta"):
        x = convert_to_tensor(x, name="x")
        log_prod_gamma = math_ops.reduce_sum(lgamma(x), axis=[-1])
        return log_prod_gamma - lgamma(math_ops.reduce_sum(x, axis=[-1]))


def cumulative_logsumexp(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None) -> Tensor:
    """log(cumsum(exp(x))) along ``axis``, without overflow; ``exclusive`` starts at -inf,
    ``reverse`` from the end."""
    t = convert_to_tensor(x, name="x")
    if isinstance(axis, Tensor):
        raise NotImplementedError("cumulative_logsumexp takes a Python int axis in zmtf (as its "
                                  "Cumsum does), not a tensor")
    attrs = {"_op_type": "CumulativeLogsumexp", "axis": int(axis), "exclusive": bool(exclusive),
             "reverse": bool(reverse)}
    return apply_op("CumulativeLogsumexp", [t], attrs, name=name).outputs[0]


# ---- gradients (TF's math_grad.py) -----------------------------------------------------------
@gradient("Erfinv")
def _erfinv_grad(op: Operation, grad: Tensor) -> Grads:
    """sqrt(pi) / 2 * exp(erfinv(x)^2)."""
    return [grad * (math.sqrt(math.pi) / 2) * math_ops.exp(math_ops.square(op.outputs[0]))]


@gradient("Ndtri")
def _ndtri_grad(op: Operation, grad: Tensor) -> Grads:
    """sqrt(2 pi) * exp(ndtri(x)^2 / 2)."""
    return [grad * math.sqrt(2 * math.pi) * math_ops.exp(math_ops.square(op.outputs[0]) / 2.0)]


@gradient("BesselI0")
def _bessel_i0_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * bessel_i1(op.inputs[0])]


@gradient("BesselI0e")
def _bessel_i0e_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs[0], op.outputs[0]
    return [grad * (bessel_i1e(x) - math_ops.sign(x) * y)]


def _at_zero(x: Tensor, value: float, elsewhere: Tensor) -> Tensor:
    """``value`` where x == 0 (where the formulas divide by x), else ``elsewhere``."""
    return where_v2(math_ops.equal(x, 0.0), convert_to_tensor(value, dtype=x.dtype), elsewhere)


@gradient("BesselI1")
def _bessel_i1_grad(op: Operation, grad: Tensor) -> Grads:
    """I1' = I0 - I1 / x (0.5 at 0: TF imputes 1.0 there)."""
    x, y = op.inputs[0], op.outputs[0]
    return [grad * _at_zero(x, 0.5, bessel_i0(x) - y / x)]


@gradient("BesselI1e")
def _bessel_i1e_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs[0], op.outputs[0]
    return [grad * _at_zero(x, 0.5, bessel_i0e(x) - y * (math_ops.sign(x) + math_ops.reciprocal(x)))]


def _igamma_partials(op: Operation, grad: Tensor, sign: float) -> Grads:
    a, x = op.inputs
    with get_default_graph().name_scope("IgammaGrad"):
        partial_a = _igamma_grad_a(a, x)
        # in log space: Gamma(a) and x^(a - 1) may overflow where their ratio does not
        partial_x = math_ops.exp(-x + (a - 1) * math_ops.log(x) - lgamma(a))
        return [sum_to(sign * partial_a * grad, a), sum_to(sign * partial_x * grad, x)]


@gradient("Igamma")
def _igamma_grad(op: Operation, grad: Tensor) -> Grads:
    return _igamma_partials(op, grad, 1.0)


@gradient("Igammac")
def _igammac_grad(op: Operation, grad: Tensor) -> Grads:
    return _igamma_partials(op, grad, -1.0)


@gradient("Betainc")
def _betainc_grad(op: Operation, grad: Tensor) -> Grads:
    """d/dx = x^(a-1) (1-x)^(b-1) / B(a, b), in log space; none for a and b, as TF."""
    a, b, x = op.inputs
    with get_default_graph().name_scope("BetaincGrad"):
        log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
        partial_x = math_ops.exp(xlog1py(b - 1, -x) + xlogy(a - 1, x) - log_beta)
        return [None, None, sum_to(partial_x * grad, x)]


@gradient("CumulativeLogsumexp")
def _cumulative_logsumexp_grad(op: Operation, grad: Tensor) -> Grads:
    """exp(x) times the reversed cumulative sum of grad * exp(-output), with grad split into
    its positive and negative parts so that every sum is taken in log space."""
    x, out = op.inputs[0], op.outputs[0]
    axis, exclusive = op.get_attr("axis"), op.get_attr("exclusive")
    reverse = not op.get_attr("reverse")
    lowest = convert_to_tensor(np.finfo(grad.dtype.as_numpy_dtype).min, dtype=grad.dtype)

    def part(mask: Tensor, magnitude: Tensor) -> Tensor:
        log_grad = where_v2(mask, math_ops.log(magnitude), lowest)
        scanned = cumulative_logsumexp(log_grad - out, axis=axis, exclusive=exclusive,
                                       reverse=reverse)
        return math_ops.exp(scanned + x)

    positive = part(math_ops.greater(grad, 0.0), grad)
    negative = part(math_ops.less(grad, 0.0), -grad)
    return [positive - negative]

