"""tf.math functions zmtf builds from existing ops (so their gradients come with them):
reduce_euclidean_norm, xdivy, xlog1py, multiply_no_nan, reciprocal_no_nan, polyval and unsorted_segment_sqrt_n."""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.partition_ops import unsorted_segment_sum
from zmtf.ops.segment_ops import _rows_per_segment
from zmtf.ops.selection_ops import where


def _scope(name: str | None, default: str) -> Any:
    return get_default_graph().name_scope(name or default)


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Tensor:
    """sqrt(sum(x**2)) over ``axis``."""
    with _scope(name, "EuclideanNorm"):
        x = convert_to_tensor(input_tensor)
        return math_ops.sqrt(math_ops.reduce_sum(x * x, axis=axis, keepdims=keepdims))


def _zero_where(zero_at: Tensor, value: Tensor) -> Tensor:
    """``value``, but exactly 0 where ``zero_at`` holds (no nan from the other branch)."""
    return where(zero_at, array_ops.zeros_like(value), value)


def _both(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """x and y, each broadcast to their common shape."""
    xt = convert_to_tensor(x)
    yt = convert_to_tensor(y, dtype=xt.dtype)
    return xt + array_ops.zeros_like(yt), yt + array_ops.zeros_like(xt)


def xdivy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y, and 0 wherever x is 0 (also for y = 0)."""
    with _scope(name, "Xdivy"):
        xb, yb = _both(x, y)
        zero = math_ops.equal(xb, 0)
        return _zero_where(zero, xb / where(zero, array_ops.ones_like(yb), yb))


def xlog1py(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * log1p(y), and 0 wherever x is 0 (also for y = -1)."""
    with _scope(name, "Xlog1py"):
        xb, yb = _both(x, y)
        zero = math_ops.equal(xb, 0)
        return _zero_where(zero, xb * math_ops.log1p(where(zero, array_ops.zeros_like(yb), yb)))


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * y, and 0 wherever y is 0 (even where x is inf or nan); as TF's MulNoNan, the
    gradient for y there is x (where x is finite)."""
    with _scope(name, "MulNoNan"):
        xb, yb = _both(x, y)
        finite_x = where(math_ops.is_finite(xb), xb, array_ops.zeros_like(xb))
        return where(math_ops.equal(yb, 0), finite_x * yb, xb * yb)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """1 / x, and 0 where x is 0."""
    with _scope(name, "reciprocal_no_nan"):
        xt = convert_to_tensor(x)
        zero = math_ops.equal(xt, 0)
        return _zero_where(zero, 1 / where(zero, array_ops.ones_like(xt), xt))


def polyval(coeffs: Sequence[Any], x: Any, name: str | None = None) -> Tensor:
    """coeffs[0] * x**(n-1) + ... + coeffs[n-1], by Horner's rule (0 for no coefficients)."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type, got {type(coeffs).__name__}")
    with _scope(name, "polyval"):
        xt = convert_to_tensor(x)
        if not coeffs:
            return array_ops.zeros_like(xt)
        value = convert_to_tensor(coeffs[0], dtype=xt.dtype) + array_ops.zeros_like(xt)
        for c in coeffs[1:]:
            value = value * xt + convert_to_tensor(c, dtype=xt.dtype)
        return value


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: str | None = None) -> Tensor:
    """Per-segment sum divided by sqrt(the segment's row count) (0 for an empty segment)."""
    with _scope(name, "UnsortedSegmentSqrtN"):
        d = convert_to_tensor(data)
        ids = convert_to_tensor(segment_ids)
        count = _rows_per_segment(d, ids, num_segments)
        return unsorted_segment_sum(d, ids, num_segments) / math_ops.sqrt(count)
