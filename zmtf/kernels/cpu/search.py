"""LowerBound / UpperBound (tf.searchsorted): binary search of each row of ``values`` in the
same row of ``sorted_inputs``, over the last axis."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import NUMERIC, shape_str
from zmtf.kernels.registry import register


def _bounds(inputs: list, attrs: dict, side: str) -> list:
    sequence, values = (np.asarray(v) for v in inputs)
    node = attrs["_node_name"]
    if sequence.ndim < 1 or values.ndim < 1 or sequence.shape[:-1] != values.shape[:-1]:
        raise InvalidArgumentError(
            f"Leading dim_size of both tensors must match: sorted_inputs has shape "
            f"{shape_str(sequence.shape)}, values has shape {shape_str(values.shape)} (node "
            f"'{node}')")
    rows = sequence.reshape(-1, sequence.shape[-1]) if sequence.ndim else sequence
    targets = values.reshape(-1, values.shape[-1])
    out = np.empty(targets.shape, as_dtype(attrs["out_type"]).np)
    for i in range(targets.shape[0]):
        out[i] = np.searchsorted(rows[i], targets[i], side=side)
    return [out.reshape(values.shape)]


@register("LowerBound", dtypes=NUMERIC)
def lower_bound(ctx: Any, inputs: list, attrs: dict) -> list:
    """The first index where each value could go, before any equal entry."""
    return _bounds(inputs, attrs, "left")


@register("UpperBound", dtypes=NUMERIC)
def upper_bound(ctx: Any, inputs: list, attrs: dict) -> list:
    """The last index where each value could go, after any equal entry."""
    return _bounds(inputs, attrs, "right")
