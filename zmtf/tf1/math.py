"""``tf.math``: the math ops under the namespace TF 1.13+ scripts use (``tf.math.log``, ...);
the same functions as at the top level."""

from zmtf.ops.composite_ops import (
    count_nonzero, log_sigmoid, reduce_logsumexp, reduce_std, reduce_variance, softsign, xlogy,
)
from zmtf.ops.math_ops import (
    abs, add, add_n, argmax, argmin, ceil, cos, cumprod, cumsum, divide, equal, exp, expm1, floor,
    floordiv, floormod, greater, greater_equal, is_finite, is_nan, less, less_equal, log, log1p,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative,
    not_equal, pow, reciprocal, reduce_all, reduce_any, reduce_max, reduce_mean, reduce_min,
    reduce_prod, reduce_sum, round, rsqrt, sigmoid, sign, sin, sqrt, square, squared_difference,
    subtract, tanh, truediv,
)
from zmtf.ops.partition_ops import unsorted_segment_sum
from zmtf.ops.bincount_ops import bincount
from zmtf.ops.special_ops import digamma, erf, erfc, lgamma, polygamma, zeta
from zmtf.ops.segment_ops import (
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

from zmtf.ops.composite_ops import confusion_matrix  # noqa: E402

__all__ += ["confusion_matrix"]

# TF 1.13+ scripts reach these under tf.math too
from zmtf.ops.trig_ops import (  # noqa: E402
    acos, acosh, asin, asinh, atan, atan2, atanh, cosh, sinh, tan,
)
from zmtf.ops.nn_ops import log_softmax, softmax, softplus  # noqa: E402
from zmtf.ops.topk_ops import in_top_k, top_k  # noqa: E402
from zmtf.ops.composite_ops import l2_normalize, scalar_mul  # noqa: E402
from zmtf.ops.nn_extras import zero_fraction  # noqa: E402
from zmtf.ops.math_ops import is_inf, rint  # noqa: E402
from zmtf.ops.division_ops import div_no_nan as divide_no_nan  # noqa: E402
from zmtf.ops.partition_ops import invert_permutation  # noqa: E402
from zmtf.ops.math_compositions import (  # noqa: E402
    multiply_no_nan, polyval, reciprocal_no_nan, reduce_euclidean_norm,
    unsorted_segment_sqrt_n, xdivy, xlog1py,
)

mod = floormod

__all__ += ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cosh", "sinh", "tan",
            "log_softmax", "softmax", "softplus", "in_top_k", "top_k", "l2_normalize",
            "scalar_mul", "zero_fraction", "is_inf", "rint", "divide_no_nan",
            "invert_permutation", "mod", "multiply_no_nan", "polyval",
            "reciprocal_no_nan", "reduce_euclidean_norm", "unsorted_segment_sqrt_n", "xdivy",
            "xlog1py"]

from zmtf.ops.special_extras_ops import (  # noqa: E402
    bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, betainc, cumulative_logsumexp, erfinv, igamma,
    igammac, lbeta, ndtri,
)

__all__ += ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "betainc", "cumulative_logsumexp",
            "erfinv", "igamma", "igammac", "lbeta", "ndtri"]

from zmtf.ops.complex_ops import angle, conj, imag, real
__all__ += ["angle", "conj", "imag", "real"]
