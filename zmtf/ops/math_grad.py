"""Gradients of the math ops: elementwise, broadcasting binary ops, reductions, matmul, cast.

A broadcasting binary op reduces each input's gradient back to that input's shape with
``SumToShape(grad, shape)``. The shape is a constant when it is fully known at graph time
and a ``Shape`` op otherwise (a None batch dimension), so the reduction is decided at run
time exactly where it has to be.
"""

from __future__ import annotations

import numpy as np

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.division_ops import div_no_nan
from zmtf.ops.selection_ops import where

Grads = list[Tensor | None]

not_differentiable(
    "ArgMax", "ArgMin", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "All", "Any", "FloorDiv", "TruncateDiv",
)


# ---- helpers shared by the gradient modules ---------------------------------------------
def shape_of(x: Tensor) -> Tensor:
    """x's shape as an int32 tensor: a Const when static (no run-time read of x), else Shape(x)."""
    if x.shape.is_fully_defined():
        return constant(np.asarray(x.shape.as_list(), np.int32), name="shape")
    return array_ops.shape(x)


def sum_to(grad: Tensor, x: Tensor, *others: Tensor) -> Tensor:
    """``grad`` summed down to x's shape: the inverse of the broadcasting that produced it.

    ``others`` are the op's other operands: when their static shapes prove that x was not
    broadcast (a [None, 256] matmul output plus a [256] bias), grad already has x's shape
    and no SumToShape node (nor a Shape feeding it) runs each step.
    """
    if grad.shape.is_fully_defined() and grad.shape == x.shape:
        return grad
    if others and _never_broadcast(x, others):
        return grad
    return apply_op("SumToShape", [grad, shape_of(x)]).outputs[0]


def _never_broadcast(x: Tensor, others: tuple[Tensor, ...]) -> bool:
    """True if broadcasting x against ``others`` cannot change x's shape, whatever the
    unknown dims turn out to be: along each axis the other operand lacks it or has 1, or x
    has a known size other than 1 (which the output then has)."""
    if x.shape.ndims is None:
        return False
    dims = x.shape.as_list()
    for other in others:
        if other.shape.ndims is None or other.shape.ndims > len(dims):
            return False
        for mine, theirs in zip(reversed(dims), reversed(other.shape.as_list())):
            if theirs != 1 and (mine is None or mine == 1):
                return False
    return True


def _mask(condition: Tensor, like: Tensor) -> Tensor:
    """A bool condition as 0/1 in ``like``'s dtype."""
    return math_ops.cast(condition, like.dtype)


# ---- broadcasting binary ops ----------------------------------------------------------
@gradient("Add", "AddV2")
def _add_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    return [sum_to(grad, x, y), sum_to(grad, y, x)]


@gradient("Sub")
def _sub_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    return [sum_to(grad, x, y), sum_to(-grad, y, x)]


@gradient("Mul")
def _mul_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    return [sum_to(grad * y, x, y), sum_to(x * grad, y, x)]


@gradient("RealDiv")
def _real_div_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    return [sum_to(grad / y, x, y), sum_to(grad * (-x / y / y), y, x)]


@gradient("DivNoNan")
def _div_no_nan_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs  # as RealDiv's, with every division by zero taken as 0
    return [sum_to(div_no_nan(grad, y), x, y),
            sum_to(grad * div_no_nan(div_no_nan(-x, y), y), y, x)]


def _routed(grad: Tensor, to_x: Tensor, x: Tensor, y: Tensor) -> Grads:
    """grad to x where ``to_x`` holds, else to y: exactly zero on the other side (TF's Select;
    ``to_x`` has the broadcast shape of the output, as ``grad`` has)."""
    zeros = array_ops.zeros_like(grad)
    return [sum_to(where(to_x, grad, zeros), x, y), sum_to(where(to_x, zeros, grad), y, x)]


@gradient("Maximum")
def _maximum_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs  # ties go to x, as in TF
    return _routed(grad, math_ops.greater_equal(x, y), x, y)


@gradient("Minimum")
def _minimum_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    return _routed(grad, math_ops.less_equal(x, y), x, y)


@gradient("Pow")
def _pow_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    z = op.outputs[0]
    gx = grad * y * math_ops.pow(x, y - 1)
    # d/dy x^y = x^y log x, taken as 0 where x <= 0 (TF's convention; log would be NaN there)
    positive = _mask(math_ops.greater(x, 0), x)
    log_x = math_ops.log(x * positive + (1 - positive)) * positive
    return [sum_to(gx, x, y), sum_to(grad * z * log_x, y, x)]


@gradient("SquaredDifference")
def _squared_difference_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs
    gx = (2 * grad) * (x - y)
    return [sum_to(gx, x, y), sum_to(-gx, y, x)]


@gradient("FloorMod")
def _floor_mod_grad(op: Operation, grad: Tensor) -> Grads:
    x, y = op.inputs  # x mod y = x - floor(x / y) * y
    return [sum_to(grad, x, y), sum_to(grad * -math_ops.floordiv(x, y), y, x)]


# ---- elementwise unary ops ------------------------------------------------------------
@gradient("Identity")
def _identity_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad]


not_differentiable("Floor", "Ceil", "Round", "Rint", "IsNan", "IsInf", "IsFinite")


@gradient("Cumsum")
def _cumsum_grad(op: Operation, grad: Tensor) -> Grads:
    return [math_ops.cumsum(grad, op.attrs["axis"], exclusive=op.attrs["exclusive"],
                            reverse=not op.attrs["reverse"])]


@gradient("Cumprod")
def _cumprod_grad(op: Operation, grad: Tensor) -> Grads:
    """TF's: a reverse cumsum of (products * grad), divided by x; 0 where x is 0 (div_no_nan)."""
    x = op.inputs[0]
    axis, exclusive, reverse = op.attrs["axis"], op.attrs["exclusive"], op.attrs["reverse"]
    products = math_ops.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    summed = math_ops.cumsum(products * grad, axis, exclusive=exclusive, reverse=not reverse)
    is_zero = math_ops.equal(x, array_ops.zeros_like(x))
    safe_x = where(is_zero, array_ops.ones_like(x), x)
    return [where(is_zero, array_ops.zeros_like(x), summed / safe_x)]


@gradient("Neg")
def _neg_grad(op: Operation, grad: Tensor) -> Grads:
    return [-grad]


@gradient("Abs")
def _abs_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * math_ops.sign(op.inputs[0])]


@gradient("Sign")
def _sign_grad(op: Operation, grad: Tensor) -> Grads:
    return [array_ops.zeros_like(op.inputs[0])]


@gradient("Exp")
def _exp_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * op.outputs[0]]


@gradient("Log")
def _log_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * math_ops.reciprocal(op.inputs[0])]


@gradient("Log1p")
def _log1p_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * math_ops.reciprocal(1.0 + op.inputs[0])]


@gradient("Expm1")
def _expm1_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * math_ops.exp(op.inputs[0])]


@gradient("Sin")
def _sin_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * math_ops.cos(op.inputs[0])]


@gradient("Cos")
def _cos_grad(op: Operation, grad: Tensor) -> Grads:
    return [-grad * math_ops.sin(op.inputs[0])]


@gradient("Square")
def _square_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * (2 * op.inputs[0])]


@gradient("Sqrt")
def _sqrt_grad(op: Operation, grad: Tensor) -> Grads:
    return [(grad * 0.5) / op.outputs[0]]


@gradient("Rsqrt")
def _rsqrt_grad(op: Operation, grad: Tensor) -> Grads:
    y = op.outputs[0]  # d/dx x^-1/2 = -1/2 y^3
    return [(grad * -0.5) * (y * y * y)]


@gradient("Reciprocal")
def _reciprocal_grad(op: Operation, grad: Tensor) -> Grads:
    y = op.outputs[0]
    return [-grad * (y * y)]


@gradient("Sigmoid")
def _sigmoid_grad(op: Operation, grad: Tensor) -> Grads:
    return [apply_op("SigmoidGrad", [op.outputs[0], grad]).outputs[0]]


@gradient("Tanh")
def _tanh_grad(op: Operation, grad: Tensor) -> Grads:
    return [apply_op("TanhGrad", [op.outputs[0], grad]).outputs[0]]


@gradient("AddN")
def _add_n_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad] * len(op.inputs)


@gradient("Cast")
def _cast_grad(op: Operation, grad: Tensor) -> Grads:
    source = op.inputs[0].dtype
    if source.is_floating and op.outputs[0].dtype.is_floating:
        return [math_ops.cast(grad, source)]
    return [None]


# ---- matmul -------------------------------------------------------------------------
@gradient("MatMul")
def _matmul_grad(op: Operation, grad: Tensor) -> Grads:
    a, b = op.inputs
    mm = math_ops.matmul
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [mm(grad, b, transpose_b=True), mm(a, grad, transpose_a=True)]
    if not ta and tb:
        return [mm(grad, b), mm(grad, a, transpose_a=True)]
    if ta and not tb:
        return [mm(b, grad, transpose_b=True), mm(a, grad)]
    return [mm(b, grad, transpose_a=True, transpose_b=True),
            mm(grad, a, transpose_a=True, transpose_b=True)]


@gradient("BatchMatMulV2")
def _batch_matmul_grad(op: Operation, grad: Tensor) -> Grads:
    """MatMul's rules per matrix, then summed over the batch dims each input was broadcast in."""
    a, b = op.inputs
    mm = math_ops.batch_matmul
    adj_a, adj_b = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not adj_a and not adj_b:
        grads = mm(grad, b, adjoint_b=True), mm(a, grad, adjoint_a=True)
    elif not adj_a:
        grads = mm(grad, b), mm(grad, a, adjoint_a=True)
    elif not adj_b:
        grads = mm(b, grad, adjoint_b=True), mm(a, grad)
    else:
        grads = (mm(b, grad, adjoint_a=True, adjoint_b=True),
                 mm(grad, a, adjoint_a=True, adjoint_b=True))
    return [sum_to(grads[0], a), sum_to(grads[1], b)]


# ---- reductions ---------------------------------------------------------------------
def keep_reduced_dims(t: Tensor, op: Operation) -> Tensor:
    """A reduction's output (or its gradient) reshaped to the keep_dims form of ``op``.

    The result broadcasts against the reduction's input. A None batch dim is fine; only an
    input of unknown rank needs the keep_dims shape computed at run time.
    """
    x, axes = op.inputs[0], op.get_attr("axis")
    if op.get_attr("keep_dims"):
        return t
    rank = x.shape.ndims
    if rank is None:
        kept = _reduce_like(op, x, keep_dims=True)
        return array_ops.reshape(t, array_ops.shape(kept))
    reduced = set(range(rank)) if axes is None else set(axes)
    kept_dims = [1 if i in reduced else d for i, d in enumerate(x.shape.as_list())]
    if None not in kept_dims:
        return array_ops.reshape(t, kept_dims)
    for axis in sorted(reduced):  # ascending, so each index is already final
        t = array_ops.expand_dims(t, axis)
    return t


def _reduce_like(op: Operation, t: Tensor, keep_dims: bool) -> Tensor:
    """``op``'s reduction (its axes) applied to t with Sum."""
    return math_ops.reduce_sum(t, axis=op.get_attr("axis"), keepdims=keep_dims)


@gradient("Sum")
def _sum_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    return [array_ops.broadcast_to(keep_reduced_dims(grad, op), shape_of(x))]


@gradient("Mean")
def _mean_grad(op: Operation, grad: Tensor) -> Grads:
    """One MeanGrad node (plus x's Shape when x's shape is not static). TF1 builds this from
    a Reshape, a BroadcastTo and eight shape ops (Shape, Prod, Maximum, FloorDiv, Cast...),
    each run every step: with a [None, 784] batch they were ~18% of a local MLP step."""
    attrs = {"axis": op.get_attr("axis"), "keep_dims": op.get_attr("keep_dims")}
    return [apply_op("MeanGrad", [grad, shape_of(op.inputs[0])], attrs).outputs[0]]


@gradient("MeanGrad")
def _mean_grad_grad(op: Operation, grad: Tensor) -> Grads:
    """MeanGrad spreads g/n over the reduced axes; its adjoint averages over them."""
    return [math_ops.reduce_mean(grad, axis=op.get_attr("axis"),
                                 keepdims=op.get_attr("keep_dims")), None]


@gradient("Prod")
def _prod_grad(op: Operation, grad: Tensor) -> Grads:
    """Each element gets the product of the others in its reduction (exact with zeros)."""
    attrs = {"axis": op.get_attr("axis")}
    return [apply_op("ProdGrad", [op.inputs[0], keep_reduced_dims(grad, op)], attrs).outputs[0]]


@gradient("Max", "Min")
def _min_or_max_grad(op: Operation, grad: Tensor) -> Grads:
    """The gradient goes to the elements equal to the extreme, split evenly between ties."""
    x = op.inputs[0]
    y, grad = keep_reduced_dims(op.outputs[0], op), keep_reduced_dims(grad, op)
    hits = _mask(math_ops.equal(x, y), grad)
    count = _reduce_like(op, hits, keep_dims=True)
    return [hits / count * grad]

