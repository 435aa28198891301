"""Unique and UniqueWithCounts: distinct values in order of first appearance (TF's order,
not numpy's sorted one)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import dtype_attr
from zmtf.kernels.registry import register


@register("Unique")
@register("UniqueWithCounts")
def unique(ctx: Any, inputs: list, attrs: dict) -> list:
    x = np.asarray(inputs[0])
    if x.ndim != 1:
        raise InvalidArgumentError(f"unique (node '{attrs['_node_name']}') takes a 1-D tensor, got "
                                   f"shape {list(x.shape)}")
    index = dtype_attr(attrs, "out_idx", attrs["_node_name"], ("int32", "int64"))
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True)
    order = np.argsort(first, kind="stable")          # sorted uniques -> order of appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    outputs = [values[order], rank[inverse.reshape(-1)].astype(index)]
    if attrs.get("counts"):
        outputs.append(counts[order].astype(index))
    return outputs
