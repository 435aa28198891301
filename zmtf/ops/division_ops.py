"""TF1's other divisions: ``tf.div_no_nan`` (0 where the divisor is 0), ``tf.realdiv``,
``tf.truncatediv``/``tf.truncatemod`` (C's rounding toward zero, where floordiv/floormod round
down) and ``tf.floor_div``. Their kernels are rows of kernels/cpu/elementwise.py's tables."""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Tensor
from zmtf.ops.math_ops import _binary, float_division, floordiv


def div_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y, but 0 where y is 0; integers are divided as float64 (float32 for int8/16), as TF."""
    return float_division("DivNoNan", x, y, name or "div_no_nan")


def realdiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y for floating-point tensors of one dtype (no integer cast, unlike tf.truediv)."""
    return _binary("RealDiv", x, y, name)


def truncatediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y rounded toward zero: truncatediv(-7, 2) == -3 where floordiv gives -4."""
    return _binary("TruncateDiv", x, y, name)


def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder of truncatediv, with the sign of x: truncatemod(-7, 2) == -1."""
    return _binary("TruncateMod", x, y, name)


floor_div = floordiv

__all__ = ["div_no_nan", "floor_div", "realdiv", "truncatediv", "truncatemod"]
