"""UnravelIndex (flat indices -> coordinates) and ListDiff (tf.setdiff1d)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.registry import register


@register("UnravelIndex", dtypes=("int32", "int64"))
def unravel_index(ctx: Any, inputs: list, attrs: dict) -> list:
    """UnravelIndex(indices, dims): [len(dims)] + indices.shape coordinates."""
    indices, dims = (np.asarray(v) for v in inputs)
    node = attrs["_node_name"]
    if dims.ndim != 1 or indices.ndim > 1:
        raise InvalidArgumentError(f"The indices can only be scalar or vector, got "
                                   f"{shape_str(indices.shape)}, and dims must be a vector, got "
                                   f"{shape_str(dims.shape)} (node '{node}')")
    if (dims <= 0).any():
        raise InvalidArgumentError(f"Input dims must all be positive, got {dims.tolist()} "
                                   f"(node '{node}')")
    size = int(np.prod(dims.astype(np.int64)))
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise InvalidArgumentError(f"index out of bounds: each index must be in [0, {size}) for "
                                   f"dims {dims.tolist()}, got {indices.tolist()} (node '{node}')")
    coords = np.unravel_index(indices.astype(np.int64), tuple(int(d) for d in dims))
    return [np.array(coords, dtype=indices.dtype).reshape((dims.size,) + indices.shape)]


@register("ListDiff")
def list_diff(ctx: Any, inputs: list, attrs: dict) -> list:
    """ListDiff(x, y): the entries of x not in y, in order, and where they are in x."""
    x, y = (np.asarray(v) for v in inputs)
    if x.ndim != 1 or y.ndim != 1:
        raise InvalidArgumentError(f"x should be a 1D vector, got {shape_str(x.shape)}; y should "
                                   f"be a 1D vector, got {shape_str(y.shape)} (node "
                                   f"'{attrs['_node_name']}')")
    removed = set(y.tolist())
    keep = np.array([v not in removed for v in x.tolist()], dtype=bool).reshape(-1)
    return [x[keep], np.flatnonzero(keep).astype(as_dtype(attrs["out_idx"]).np)]
