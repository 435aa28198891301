"""``tf.bincount``: how often each value of a non-negative int array occurs (or the sum of
its weights), as TF1 builds it: the output length is ``max(arr) + 1`` (0 for an empty arr),
raised to ``minlength`` and capped at ``maxlength``; values at or past the length are
dropped. Not differentiable, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

#: the weight (and so output) dtypes TF's Bincount kernel takes
_WEIGHT_DTYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


@op_def("Bincount")
def _bincount_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    arr, size, weights = inputs
    if arr.dtype != dtypes.int32 or size.dtype != dtypes.int32:
        raise TypeError(f"Bincount: arr and size must be int32, got {arr.dtype.name} and "
                        f"{size.dtype.name}")
    if weights.dtype not in _WEIGHT_DTYPES:
        raise TypeError(f"tf.bincount: weights (and dtype) must be one of "
                        f"{', '.join(d.name for d in _WEIGHT_DTYPES)}, got {weights.dtype.name}")
    return [(weights.dtype, TensorShape([attrs.get("static_size")]))]


not_differentiable("Bincount")


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """Counts of each value 0..n-1 in ``arr`` (any shape); with ``weights`` (arr's shape) the
    sum of the weights at each value, in the weights' dtype (``dtype`` is then ignored)."""
    with get_default_graph().name_scope(name or "bincount"):
        arr = math_ops.cast(convert_to_tensor(arr, name="arr"), dtypes.int32)
        nonempty = math_ops.cast(math_ops.greater(array_ops.size(arr), 0), dtypes.int32)
        size = nonempty * (math_ops.reduce_max(arr) + 1)
        if minlength is not None:
            size = math_ops.maximum(convert_to_tensor(minlength, dtype=dtypes.int32), size)
        if maxlength is not None:
            size = math_ops.minimum(convert_to_tensor(maxlength, dtype=dtypes.int32), size)
        if weights is None:
            weights = constant([], dtype=dtypes.as_dtype(dtype), name="weights")
        else:
            weights = convert_to_tensor(weights, name="weights")
        attrs = {"static_size": _static_size(arr, minlength, maxlength)}
        return apply_op("Bincount", [arr, size, weights], attrs, name="Bincount").outputs[0]


def _static_size(arr: Tensor, minlength: Any, maxlength: Any) -> int | None:
    """The output length when arr is a constant and the bounds are Python ints, as TF's shape
    inference finds it; None otherwise."""
    if arr.op.type != "Const" or not all(b is None or isinstance(b, int)
                                         for b in (minlength, maxlength)):
        return None
    values = np.asarray(arr.op.get_attr("value"))
    size = int(values.max()) + 1 if values.size else 0
    size = size if minlength is None else max(minlength, size)
    size = size if maxlength is None else min(maxlength, size)
    if size < 0:
        raise ValueError(f"tf.bincount: size ({size}) must be non-negative; pass maxlength >= 0")
    return size
