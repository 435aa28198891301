"""EnsureShape (tf.ensure_shape's run-time check) and BroadcastArgs
(tf.broadcast_dynamic_shape)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.registry import register


@register("EnsureShape")
def ensure_shape(ctx: Any, inputs: list, attrs: dict) -> list:
    """EnsureShape(x): x itself when its shape matches the expected one (None: any size)."""
    x = inputs[0]
    expected = attrs["shape"]
    shape = np.shape(x)
    if expected is not None and (len(expected) != len(shape) or any(
            d is not None and d != s for d, s in zip(expected, shape))):
        wanted = "[" + ",".join("?" if d is None else str(d) for d in expected) + "]"
        raise InvalidArgumentError(f"Shape of tensor {attrs['_node_name']} {shape_str(shape)} is "
                                   f"not compatible with expected shape {wanted}.")
    return [x]


@register("BroadcastArgs", dtypes=("int32", "int64"))
def broadcast_args(ctx: Any, inputs: list, attrs: dict) -> list:
    """BroadcastArgs(s0, s1): the shape both broadcast to."""
    a, b = (np.asarray(v) for v in inputs)
    if a.ndim != 1 or b.ndim != 1:
        raise InvalidArgumentError(f"broadcast_dynamic_shape: shapes must be vectors, got "
                                   f"{shape_str(a.shape)} and {shape_str(b.shape)} (node "
                                   f"'{attrs['_node_name']}')")
    try:
        out = np.broadcast_shapes(tuple(int(d) for d in a), tuple(int(d) for d in b))
    except ValueError:
        raise InvalidArgumentError(f"Incompatible shapes: {shape_str(a)} vs. {shape_str(b)} "
                                   f"(node '{attrs['_node_name']}')") from None
    return [np.array(out, dtype=a.dtype)]
