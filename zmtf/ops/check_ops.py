"""TF1's check_ops: ``tf.Assert`` and the ``tf.assert_*`` family.

As in TF, what the graph already knows is checked when the graph is built: a wrong dtype
(assert_integer, assert_type) raises TypeError, a wrong static rank (assert_rank,
assert_scalar) raises ValueError, and comparisons of two constants that fail raise
InvalidArgumentError; the checks that pass statically become a NoOp. The rest become Assert
ops that fail the step with TF's "assertion failed: [...]" message.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import no_op



@op_def("Assert", stateful=True)
def _assert_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


def assert_(condition: Any, data: Sequence[Any], summarize: int | None = None,
            name: str | None = None) -> Operation:
    """TF1's ``tf.Assert``: an op that fails the step with InvalidArgumentError "assertion
    failed: [...]" (the ``data`` values; Python strings as they are) when ``condition`` is
    False. Run it, or make ops depend on it with ``tf.control_dependencies``."""
    cond = convert_to_tensor(condition)
    if cond.dtype != dtypes.bool_:
        raise TypeError(f"Assert's condition must be bool, got {cond.dtype.name}")
    texts: list[str | None] = []
    tensors = []
    for item in data:
        if isinstance(item, str):
            texts.append(item)
        else:
            texts.append(None)
            tensors.append(convert_to_tensor(item))
    attrs = {"texts": texts, "summarize": 3 if summarize is None else int(summarize)}
    return apply_op("Assert", [cond, *tensors], attrs, name=name or "Assert")


#: comparison symbol -> (graph op, numpy function for the build-time check of constants)
_COMPARISONS: dict[str, tuple[Callable[..., Tensor], Callable[..., Any]]] = {
    "==": (math_ops.equal, np.equal),
    "!=": (math_ops.not_equal, np.not_equal),
    "<": (math_ops.less, np.less),
    "<=": (math_ops.less_equal, np.less_equal),
    ">": (math_ops.greater, np.greater),
    ">=": (math_ops.greater_equal, np.greater_equal),
}


def _scope(name: str | None, default: str) -> Any:
    return get_default_graph().name_scope(name or default)


def _constant(t: Tensor) -> np.ndarray | None:
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


def _check(condition: Tensor, static: Any, data: list, summarize: Any,
           message: str | None) -> Operation:
    """An Assert op of ``condition``; InvalidArgumentError now if ``static`` is known False."""
    if message is not None:
        data = [message, *data]
    if static is not None and not np.all(static):
        shown = [item if isinstance(item, str) else str(_constant(item)) for item in data]
        raise InvalidArgumentError("\n".join(shown))
    return assert_(math_ops.reduce_all(condition), data, summarize)


def _comparison_assert(x: Any, y: Any, symbol: str, data: Any, summarize: Any,
                       message: str | None, name: str | None, default: str) -> Operation:
    """x <symbol> y elementwise; ``y=None`` compares with 0 and says so, as TF's
    assert_positive ("Condition x > 0 did not hold")."""
    with _scope(name, default):
        x = convert_to_tensor(x)
        against_zero = y is None
        if against_zero:
            y = convert_to_tensor(0, dtype=x.dtype)
        elif not isinstance(y, Tensor):
            y = convert_to_tensor(y, dtype=x.dtype, name="y")
        if data is None:
            data = [f"Condition x {symbol} {0 if against_zero else 'y'} did not hold element-wise:",
                    f"x ({x.name}) =", x]
            data += [] if against_zero else [f"y ({y.name}) =", y]
        graph_compare, numpy_compare = _COMPARISONS[symbol]
        x_value, y_value = _constant(x), _constant(y)
        static = None if x_value is None or y_value is None else numpy_compare(x_value, y_value)
        return _check(graph_compare(x, y), static, data, summarize, message)


def assert_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                 message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x == y everywhere."""
    return _comparison_assert(x, y, "==", data, summarize, message, name, "assert_equal")


def assert_none_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                      message: str | None = None, name: str | None = None) -> Operation:
    """Fails if x == y anywhere."""
    return _comparison_assert(x, y, "!=", data, summarize, message, name, "assert_none_equal")


def assert_less(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x < y everywhere."""
    return _comparison_assert(x, y, "<", data, summarize, message, name, "assert_less")


def assert_less_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                      message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x <= y everywhere."""
    return _comparison_assert(x, y, "<=", data, summarize, message, name, "assert_less_equal")


def assert_greater(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                   message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x > y everywhere."""
    return _comparison_assert(x, y, ">", data, summarize, message, name, "assert_greater")


def assert_greater_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                         message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x >= y everywhere."""
    return _comparison_assert(x, y, ">=", data, summarize, message, name, "assert_greater_equal")


def assert_positive(x: Any, data: Any = None, summarize: int | None = None,
                    message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x > 0 everywhere."""
    return _comparison_assert(x, None, ">", data, summarize, message, name, "assert_positive")


def assert_non_negative(x: Any, data: Any = None, summarize: int | None = None,
                        message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x >= 0 everywhere."""
    return _comparison_assert(x, None, ">=", data, summarize, message, name, "assert_non_negative")


def assert_negative(x: Any, data: Any = None, summarize: int | None = None,
                    message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x < 0 everywhere."""
    return _comparison_assert(x, None, "<", data, summarize, message, name, "assert_negative")


def assert_non_positive(x: Any, data: Any = None, summarize: int | None = None,
                        message: str | None = None, name: str | None = None) -> Operation:
    """Fails unless x <= 0 everywhere."""
    return _comparison_assert(x, None, "<=", data, summarize, message, name, "assert_non_positive")


# ---- static checks: dtype and rank -------------------------------------------------------
def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> Operation:
    """TypeError now unless x has an integer dtype (dtypes are always known when building)."""
    with _scope(name, "assert_integer"):
        x = convert_to_tensor(x)
        if not x.dtype.is_integer:
            prefix = f"{message}: " if message else ""
            raise TypeError(f'{prefix}Expected "x" to be integer type.  Found: {x.name} of dtype '
                            f"{x.dtype!r}; cast it with tf.cast or tf.to_int32")
        return no_op(name="statically_determined_was_integer")


def assert_type(tensor: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> Operation:
    """TypeError now unless ``tensor`` has dtype ``tf_type``."""
    with _scope(name, "assert_type"):
        tensor = convert_to_tensor(tensor)
        wanted = as_dtype(tf_type)
        if tensor.dtype != wanted:
            prefix = f"{message}: " if message else ""
            raise TypeError(f"{prefix}{tensor.name} must be of type tf.{wanted.name}; got "
                            f"tf.{tensor.dtype.name}")
        return no_op(name="statically_determined_correct_type")


def assert_scalar(tensor: Any, name: str | None = None, message: str | None = None) -> Tensor:
    """``tensor`` itself, or ValueError now unless its static shape is a scalar's."""
    with _scope(name, "assert_scalar"):
        tensor = convert_to_tensor(tensor)
        if tensor.shape.ndims != 0:
            prefix = f"{message}: " if message else ""
            raise ValueError(f"{prefix}Expected scalar shape for {tensor.name}, saw shape: "
                             f"{tensor.shape}.")
        return tensor


def _rank_assert(x: Any, rank: Any, at_least: bool, data: Any, summarize: Any,
                 message: str | None, name: str | None, default: str) -> Operation:
    """ValueError now if x's static rank is wrong; an Assert on tf.rank(x) if it is unknown."""
    words = "rank at least" if at_least else "rank"
    with _scope(name, default):
        x = convert_to_tensor(x)
        static_rank = None if isinstance(rank, Tensor) else int(rank)
        if x.shape.ndims is not None and static_rank is not None:
            if x.shape.ndims < static_rank or (not at_least and x.shape.ndims != static_rank):
                prefix = f"{message}: " if message else ""
                raise ValueError(f"{prefix}Tensor {x.name} must have {words} {static_rank}.  "
                                 f"Received rank {x.shape.ndims}, shape {x.shape}")
            return no_op(name="static_checks_determined_all_ok")
        wanted = convert_to_tensor(rank, dtype=dtypes.int32)
        if data is None:
            data = [f"Tensor {x.name} must have {words}", wanted, "Received shape: ",
                    array_ops.shape(x)]
        actual = array_ops.rank(x)
        held = math_ops.greater_equal(actual, wanted) if at_least else math_ops.equal(actual, wanted)
        return _check(held, None, data, summarize, message)


def assert_rank(x: Any, rank: Any, data: Any = None, summarize: int | None = None,
                message: str | None = None, name: str | None = None) -> Operation:
    """x has exactly ``rank`` dimensions: checked now when its rank is known."""
    return _rank_assert(x, rank, False, data, summarize, message, name, "assert_rank")


def assert_rank_at_least(x: Any, rank: Any, data: Any = None, summarize: int | None = None,
                         message: str | None = None, name: str | None = None) -> Operation:
    """x has ``rank`` dimensions or more: checked now when its rank is known."""
    return _rank_assert(x, rank, True, data, summarize, message, name, "assert_rank_at_least")


__all__ = ["assert_", "assert_equal", "assert_greater", "assert_greater_equal", "assert_integer",
           "assert_less", "assert_less_equal", "assert_negative", "assert_non_negative",
           "assert_non_positive", "assert_none_equal", "assert_positive", "assert_rank",
           "assert_rank_at_least", "assert_scalar", "assert_type"]
