"""``tf.debugging``: the assert_* family, check_numerics and the is_* predicates under TF
1.13+'s namespace (the same functions as at the top level)."""

from zmtf.ops.check_extras import (
    assert_near, assert_proper_iterable, assert_rank_in, assert_same_float_dtype,
    is_non_decreasing, is_numeric_tensor, is_strictly_increasing,
)
from zmtf.ops.check_ops import (
    assert_ as Assert, assert_equal, assert_greater, assert_greater_equal, assert_integer,
    assert_less, assert_less_equal, assert_negative, assert_non_negative, assert_non_positive,
    assert_none_equal, assert_positive, assert_rank, assert_rank_at_least, assert_scalar,
    assert_type,
)
from zmtf.ops.composite_ops import check_numerics
from zmtf.ops.math_ops import is_finite, is_inf, is_nan

__all__ = ["Assert", "assert_equal", "assert_greater", "assert_greater_equal", "assert_integer",
           "assert_less", "assert_less_equal", "assert_near", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_none_equal", "assert_positive",
           "assert_proper_iterable", "assert_rank", "assert_rank_at_least", "assert_rank_in",
           "assert_same_float_dtype", "assert_scalar", "assert_type", "check_numerics",
           "is_finite", "is_inf", "is_nan", "is_non_decreasing", "is_numeric_tensor",
           "is_strictly_increasing"]
