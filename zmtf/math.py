"""``tf.math``: the math ops under the namespace TF 1.13+ scripts use (``tf.math.log``, ...);
the same functions as at the top level."""

from zmtf.framework.ops.composite_ops import (
    count_nonzero, log_sigmoid, reduce_logsumexp, reduce_std, reduce_variance, softsign, xlogy,
)
from zmtf.framework.ops.math_ops import (
    abs, add, add_n, argmax, argmin, ceil, cos, cumprod, cumsum, divide, equal, exp, expm1, floor,
    floordiv, floormod, greater, greater_equal, is_finite, is_nan, less, less_equal, log, log1p,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative,
    not_equal, pow, reciprocal, reduce_all, reduce_any, reduce_max, reduce_mean, reduce_min,
    reduce_prod, reduce_sum, round, rsqrt, sigmoid, sign, sin, sqrt, square, squared_difference,
    subtract, tanh, truediv,
)
from zmtf.framework.ops.partition_ops import unsorted_segment_sum
from zmtf.framework.ops.bincount_ops import bincount
from zmtf.framework.ops.special_ops import digamma, erf, erfc, lgamma, polygamma, zeta
from zmtf.framework.ops.segment_ops import (
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
)

__all__ = [
    "abs", "add", "add_n", "argmax", "argmin", "ceil", "cos", "count_nonzero", "cumprod", "cumsum",
    "divide", "equal", "exp", "expm1", "floor", "floordiv", "floormod", "greater",
    "greater_equal", "is_finite", "is_nan", "less", "less_equal", "log", "log1p", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "not_equal", "pow", "reciprocal", "reduce_all", "reduce_any", "reduce_logsumexp",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sqrt", "square", "squared_difference", "subtract", "tanh",
    "truediv", "unsorted_segment_sum",
]
__all__ += ["reduce_std", "reduce_variance"]
__all__ += ["segment_max", "segment_mean", "segment_min", "segment_prod", "segment_sum",
            "unsorted_segment_max", "unsorted_segment_mean", "unsorted_segment_min",
            "unsorted_segment_prod"]
__all__ += ["digamma", "erf", "erfc", "lgamma", "polygamma", "zeta"]
__all__ += ["bincount"]
__all__ += ["log_sigmoid", "softsign", "xlogy"]

from zmtf.framework.ops.composite_ops import confusion_matrix  # noqa: E402

__all__ += ["confusion_matrix"]
