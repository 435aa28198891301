"""Bincount(arr, size, weights): value counts (or weight sums) of an int32 array, values at or
past ``size`` dropped, negative values refused (TF's check)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import check_output_size, shape_str
from zmtf.kernels.registry import register


@register("Bincount")
def bincount(ctx: Any, inputs: list, attrs: dict) -> list:
    arr, size, weights = inputs
    node = attrs["_node_name"]
    size = int(size)
    if size < 0:
        raise InvalidArgumentError(f"size ({size}) must be non-negative: minlength and maxlength "
                                   f"must be >= 0 (node '{node}')")
    check_output_size([size], weights.dtype if weights.size else "int64", node)
    values = arr.reshape(-1)
    if values.size and values.min() < 0:
        raise InvalidArgumentError(f"Input arr must be non-negative! Got {int(values.min())} "
                                   f"(node '{node}')")
    if weights.size and weights.shape != arr.shape:
        raise InvalidArgumentError(f"`weights` must be the same shape as `arr` or a length-0 "
                                   f"`Tensor`, got {shape_str(weights.shape)} for arr of shape "
                                   f"{shape_str(arr.shape)} (node '{node}')")
    kept = values < size
    if not weights.size:
        return [np.bincount(values[kept], minlength=size).astype(weights.dtype)]
    summed = np.zeros(size, weights.dtype)
    np.add.at(summed, values[kept], weights.reshape(-1)[kept])   # exact in int dtypes
    return [summed]
