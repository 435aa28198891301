"""Math ops: elementwise, reductions, matmul, casts; and the Tensor operator overloads."""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_pair, convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape, broadcast_shape

BINARY = ("Add", "AddV2", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "TruncateDiv",
          "TruncateMod", "DivNoNan", "Maximum", "Minimum",
          "Pow", "SquaredDifference", "LogicalAnd", "LogicalOr")
COMPARISON = ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual")
UNARY = ("Neg", "Abs", "Sigmoid", "Tanh", "Exp", "Log", "Square", "Sqrt", "Rsqrt", "Reciprocal",
         "Sign", "LogicalNot", "Relu", "Relu6", "Softplus", "Floor", "Ceil", "Round", "Rint", "Sin", "Cos",
         "Log1p", "Expm1")
REDUCTIONS = ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any")


def _check_same_dtype(op_type: str, inputs: list[Tensor]) -> None:
    first = inputs[0].dtype
    for i, t in enumerate(inputs[1:], 1):
        if t.dtype != first:
            raise TypeError(
                f"Input {i} of '{op_type}' Op has type {t.dtype.name} that does not match type "
                f"{first.name} of input 0 ({inputs[0].name}). Cast one side with tf.cast()."
            )


@op_def(*BINARY)
def _binary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _check_same_dtype(attrs.get("_op_type", "binary op"), inputs)
    return [(inputs[0].dtype, broadcast_shape(inputs[0].shape, inputs[1].shape))]


@op_def(*COMPARISON)
def _comparison_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _check_same_dtype("comparison", inputs)
    return [(dtypes.bool_, broadcast_shape(inputs[0].shape, inputs[1].shape))]


@op_def(*UNARY, "Identity", "ZerosLike", "OnesLike")
def _unary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def("IsNan", "IsInf", "IsFinite")
def _predicate_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    if not inputs[0].dtype.is_floating:
        raise TypeError(f"{attrs.get('_op_type', 'IsNan')}: input must be floating point, got "
                        f"{inputs[0].dtype.name} ({inputs[0].name})")
    return [(dtypes.bool_, inputs[0].shape)]


@op_def("Cumsum", "Cumprod")
def _cumulative_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def("ReluGrad", "SigmoidGrad", "TanhGrad")
def _grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape.merge_with(inputs[1].shape))]


@op_def("AddN")
def _add_n_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _check_same_dtype("AddN", inputs)
    shape = inputs[0].shape
    for t in inputs[1:]:
        shape = shape.merge_with(t.shape)
    return [(inputs[0].dtype, shape)]


@op_def("MatMul")
def _matmul_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = inputs
    _check_same_dtype("MatMul", inputs)
    for t in (a, b):
        if t.shape.ndims is not None and t.shape.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {t.shape.ndims} for 'MatMul' input {t.name}")
    if a.shape.ndims is None or b.shape.ndims is None:
        return [(a.dtype, TensorShape([None, None]))]
    m, k = a.shape.as_list()[::-1] if attrs["transpose_a"] else a.shape.as_list()
    k2, n = b.shape.as_list()[::-1] if attrs["transpose_b"] else b.shape.as_list()
    if k is not None and k2 is not None and k != k2:
        raise ValueError(
            f"Dimensions must be equal, but are {k} and {k2} for 'MatMul' with input shapes: "
            f"{a.shape}, {b.shape}."
        )
    return [(a.dtype, TensorShape([m, n]))]


@op_def("BatchMatMulV2")
def _batch_matmul_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = inputs
    _check_same_dtype("BatchMatMulV2", inputs)
    for t in (a, b):
        if t.shape.ndims is not None and t.shape.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {t.shape.ndims} for "
                             f"'BatchMatMulV2' input {t.name}")
    if a.shape.ndims is None or b.shape.ndims is None:
        return [(a.dtype, TensorShape(None))]
    m, k = a.shape.as_list()[-2:][::-1] if attrs["adj_x"] else a.shape.as_list()[-2:]
    k2, n = b.shape.as_list()[-2:][::-1] if attrs["adj_y"] else b.shape.as_list()[-2:]
    if k is not None and k2 is not None and k != k2:
        raise ValueError(f"Dimensions must be equal, but are {k} and {k2} for 'BatchMatMulV2' "
                         f"with input shapes: {a.shape}, {b.shape}.")
    batch = broadcast_shape(TensorShape(a.shape.as_list()[:-2]), TensorShape(b.shape.as_list()[:-2]))
    return [(a.dtype, TensorShape(batch.as_list() + [m, n]))]


def _normalize_axis(axis: Any, ndims: int | None) -> tuple[int, ...] | None:
    if axis is None:
        return None
    axes = [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    if ndims is not None:
        for a in axes:
            if not -ndims <= a < max(ndims, 1):
                raise ValueError(f"Invalid reduction dimension {a} for input with {ndims} dimensions.")
        axes = [a % ndims if ndims else a for a in axes]
    return tuple(sorted(set(axes)))


@op_def("ProdGrad")
def _prod_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    """ProdGrad(x, grad in keep_dims form): d prod / d x times grad (the gradient of Prod)."""
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def(*REDUCTIONS)
def _reduction_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    axis, keep = attrs["axis"], attrs["keep_dims"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    if axis is None:
        out = [1] * len(dims) if keep else []
    elif any(a < 0 for a in axis):
        out = None
    else:
        out = [1 if i in axis else d for i, d in enumerate(dims)] if keep else \
              [d for i, d in enumerate(dims) if i not in axis]
    return [(x.dtype, TensorShape(out))]


@op_def("ArgMax", "ArgMin")
def _arg_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    if x.shape.ndims is None:
        return [(as_dtype(attrs["output_type"]), TensorShape(None))]
    dims = x.shape.as_list()
    axis = attrs["axis"] % len(dims)
    return [(as_dtype(attrs["output_type"]), TensorShape(dims[:axis] + dims[axis + 1:]))]


@op_def("Cast")
def _cast_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(attrs["DstT"]), inputs[0].shape)]


# ---- public constructors ---------------------------------------------------------------
def _binary(op_type: str, x: Any, y: Any, name: str | None) -> Tensor:
    graph = _graph_of(x, y)
    with graph.name_scope(name or op_type) as scope:
        x, y = convert_pair(x, y)
        return apply_op(op_type, [x, y], {"_op_type": op_type}, name=scope).outputs[0]


def _graph_of(*values: Any) -> Any:
    for v in values:
        if isinstance(v, Tensor) or hasattr(v, "_as_graph_element"):
            return v.graph
    from zmtf.framework.graph import get_default_graph

    return get_default_graph()


def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("Add", x, y, name)


def subtract(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("Sub", x, y, name)


def multiply(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("Mul", x, y, name)


def float_division(op_type: str, x: Any, y: Any, name: str) -> Tensor:
    """``op_type``(x, y) with integer operands cast to float64 first (float32 for int8/16),
    as TF's truediv and div_no_nan do."""
    with _graph_of(x, y).name_scope(name) as scope:
        x, y = convert_pair(x, y)
        if not (x.dtype.is_floating or x.dtype.is_complex):
            target = dtypes.float64 if x.dtype in (dtypes.int32, dtypes.int64) else dtypes.float32
            x, y = cast(x, target), cast(y, target)
        return apply_op(op_type, [x, y], {"_op_type": op_type}, name=scope).outputs[0]


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y; integer operands are cast to float64 first (float32 for int8/16), as in TF."""
    return float_division("RealDiv", x, y, name or "truediv")


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    return truediv(x, y, name)


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("FloorDiv", x, y, name)


def floormod(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("FloorMod", x, y, name)


def maximum(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("Maximum", x, y, name)


def minimum(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("Minimum", x, y, name)


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:  # noqa: A001 (TF's name)
    return _binary("Pow", x, y, name)


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("SquaredDifference", x, y, name)


def logical_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("LogicalAnd", x, y, name)


def logical_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _binary("LogicalOr", x, y, name)


def logical_xor(x: Any, y: Any, name: str = "LogicalXor") -> Tensor:
    """(x | y) & ~(x & y), as TF builds it."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def _compare(op_type: str, x: Any, y: Any, name: str | None) -> Tensor:
    with _graph_of(x, y).name_scope(name or op_type) as scope:
        x, y = convert_pair(x, y)
        return apply_op(op_type, [x, y], name=scope).outputs[0]


def equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _compare("Equal", x, y, name)


def not_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _compare("NotEqual", x, y, name)


def less(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _compare("Less", x, y, name)


def less_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _compare("LessEqual", x, y, name)


def greater(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _compare("Greater", x, y, name)


def greater_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    return _compare("GreaterEqual", x, y, name)


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return apply_op(op_type, [convert_to_tensor(x)], name=name).outputs[0]


def negative(x: Any, name: str | None = None) -> Tensor:
    return _unary("Neg", x, name)


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001
    x = convert_to_tensor(x, name="x")
    if x.dtype.is_complex:   # TF: |a + bj| is a float tensor (ComplexAbs)
        return apply_op("ComplexAbs", [x], name=name or "ComplexAbs").outputs[0]
    return _unary("Abs", x, name)


def sigmoid(x: Any, name: str | None = None) -> Tensor:
    return _unary("Sigmoid", x, name)


def tanh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Tanh", x, name)


def exp(x: Any, name: str | None = None) -> Tensor:
    return _unary("Exp", x, name)


def log(x: Any, name: str | None = None) -> Tensor:
    return _unary("Log", x, name)


def log1p(x: Any, name: str | None = None) -> Tensor:
    return _unary("Log1p", x, name)


def expm1(x: Any, name: str | None = None) -> Tensor:
    return _unary("Expm1", x, name)


def sin(x: Any, name: str | None = None) -> Tensor:
    return _unary("Sin", x, name)


def cos(x: Any, name: str | None = None) -> Tensor:
    return _unary("Cos", x, name)


def square(x: Any, name: str | None = None) -> Tensor:
    return _unary("Square", x, name)


def sqrt(x: Any, name: str | None = None) -> Tensor:
    return _unary("Sqrt", x, name)


def rsqrt(x: Any, name: str | None = None) -> Tensor:
    return _unary("Rsqrt", x, name)


def reciprocal(x: Any, name: str | None = None) -> Tensor:
    return _unary("Reciprocal", x, name)


def sign(x: Any, name: str | None = None) -> Tensor:
    return _unary("Sign", x, name)


def floor(x: Any, name: str | None = None) -> Tensor:
    return _unary("Floor", x, name)


def ceil(x: Any, name: str | None = None) -> Tensor:
    return _unary("Ceil", x, name)


def round(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 (TF's name)
    """Round half to even, as TF's."""
    return _unary("Round", x, name)


def is_nan(x: Any, name: str | None = None) -> Tensor:
    return _unary("IsNan", x, name)


def is_inf(x: Any, name: str | None = None) -> Tensor:
    """True where x is +inf or -inf."""
    return _unary("IsInf", x, name)


def rint(x: Any, name: str | None = None) -> Tensor:
    """Round half to even (floats only), as TF's Rint."""
    return _unary("Rint", x, name)


def is_finite(x: Any, name: str | None = None) -> Tensor:
    return _unary("IsFinite", x, name)


def cumsum(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    attrs = {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)}
    return apply_op("Cumsum", [convert_to_tensor(x)], attrs, name=name).outputs[0]


def cumprod(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Tensor:
    """Cumulative product along ``axis``; ``exclusive`` starts at 1, ``reverse`` from the end."""
    attrs = {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)}
    return apply_op("Cumprod", [convert_to_tensor(x)], attrs, name=name).outputs[0]


def logical_not(x: Any, name: str | None = None) -> Tensor:
    return _unary("LogicalNot", x, name)


def add_n(inputs: Sequence[Any], name: str | None = None) -> Tensor:
    """Sum of a list of same-shape tensors."""
    tensors = [convert_to_tensor(t) for t in inputs]
    if not tensors:
        raise ValueError("inputs must be a non-empty list of tensors")
    if len(tensors) == 1:
        return tensors[0]
    return apply_op("AddN", tensors, name=name).outputs[0]


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None) -> Tensor:
    """a @ b; operands of rank > 2 are batches of matrices (batch dims broadcast, as TF's
    BatchMatMulV2). For real dtypes ``adjoint_*`` is ``transpose_*``."""
    with _graph_of(a, b).name_scope(name or "MatMul") as scope:
        a, b = convert_pair(a, b)
        ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
        if a.shape.ndims == 2 and b.shape.ndims == 2:
            attrs = {"transpose_a": ta, "transpose_b": tb}
            return apply_op("MatMul", [a, b], attrs, name=scope).outputs[0]
        return apply_op("BatchMatMulV2", [a, b], {"adj_x": ta, "adj_y": tb}, name=scope).outputs[0]


def batch_matmul(a: Tensor, b: Tensor, adjoint_a: bool = False, adjoint_b: bool = False,
                 name: str | None = None) -> Tensor:
    """A BatchMatMulV2 whatever the ranks (>= 2): what gradients of batched ops build."""
    return apply_op("BatchMatMulV2", [a, b], {"adj_x": bool(adjoint_a), "adj_y": bool(adjoint_b)},
                    name=name).outputs[0]


def _reduce(op_type: str, x: Any, axis: Any, keepdims: Any, name: str | None,
            reduction_indices: Any, keep_dims: Any) -> Tensor:
    x = convert_to_tensor(x)
    if axis is None:
        axis = reduction_indices
    keep = bool(keepdims if keepdims is not None else keep_dims)
    attrs = {"axis": _normalize_axis(axis, x.shape.ndims), "keep_dims": keep}
    return apply_op(op_type, [x], attrs, name=name).outputs[0]


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
                reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
                reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def argmax(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,  # noqa: A002
           output_type: Any = dtypes.int64) -> Tensor:
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,  # noqa: A002
           output_type: Any = dtypes.int64) -> Tensor:
    return _arg("ArgMin", input, axis, name, dimension, output_type)


def _arg(op_type: str, x: Any, axis: Any, name: str | None, dimension: Any, output_type: Any) -> Tensor:
    x = convert_to_tensor(x)
    axis = axis if axis is not None else (dimension if dimension is not None else 0)
    attrs = {"axis": int(axis), "output_type": as_dtype(output_type).name}
    return apply_op(op_type, [x], attrs, name=name).outputs[0]


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    x = convert_to_tensor(x)
    target = as_dtype(dtype)
    if x.dtype == target:
        return x
    return apply_op("Cast", [x], {"DstT": target.name, "SrcT": x.dtype.name}, name=name).outputs[0]


def to_float(x: Any, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


def to_double(x: Any, name: str = "ToDouble") -> Tensor:
    return cast(x, dtypes.float64, name=name)


def to_int32(x: Any, name: str = "ToInt32") -> Tensor:
    return cast(x, dtypes.int32, name=name)


def to_int64(x: Any, name: str = "ToInt64") -> Tensor:
    return cast(x, dtypes.int64, name=name)


# ---- operator overloads -----------------------------------------------------------------
def _install_operators() -> None:
    # TF1 names operator-made nodes in lower case: a * b -> "mul", a + b -> "add".
    table = {
        "__add__": (add, "add"), "__sub__": (subtract, "sub"), "__mul__": (multiply, "mul"),
        "__truediv__": (truediv, "truediv"), "__floordiv__": (floordiv, "floordiv"),
        "__mod__": (floormod, "mod"), "__pow__": (pow, "pow"), "__matmul__": (matmul, "matmul"),
        "__lt__": (less, "Less"), "__le__": (less_equal, "LessEqual"),
        "__gt__": (greater, "Greater"), "__ge__": (greater_equal, "GreaterEqual"),
        "__and__": (logical_and, "and"), "__or__": (logical_or, "or"),
        "__xor__": (logical_xor, "xor"),
    }
    for dunder, (fn, op_name) in table.items():
        setattr(Tensor, dunder, lambda self, other, fn=fn, n=op_name: fn(self, other, name=n))
        if dunder not in ("__lt__", "__le__", "__gt__", "__ge__"):
            setattr(Tensor, "__r" + dunder[2:], lambda self, other, fn=fn, n=op_name: fn(other, self, name=n))
    Tensor.__neg__ = lambda self: negative(self)  # type: ignore[attr-defined]
    Tensor.__abs__ = lambda self: abs(self)  # type: ignore[attr-defined]
    Tensor.__invert__ = lambda self: logical_not(self)  # type: ignore[attr-defined]


_install_operators()
