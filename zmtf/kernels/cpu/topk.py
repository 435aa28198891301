"""TopKV2, its gradient, and InTopKV2 on CPU (numpy: a stable sort per row)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import NUMERIC, shape_input, shape_str
from zmtf.kernels.registry import register


def _scalar_k(k: Any, op: str, node_name: str) -> int:
    k = np.asarray(k)
    if k.ndim != 0:
        raise InvalidArgumentError(f"{op} (node '{node_name}'): k must be a scalar, got shape "
                                   f"{shape_str(k.shape)}")
    return int(k)


def top_k_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of each last-axis row, largest first, the lower index
    first among equal values. A stable ascending sort of the reversed row, read backwards,
    gives exactly that order for every dtype (no negation: unsigned and INT_MIN are safe)."""
    n = x.shape[-1]
    ascending = np.argsort(x[..., ::-1], axis=-1, kind="stable")
    return (n - 1 - ascending[..., ::-1][..., :k]).astype(np.int32)


@register("TopKV2", dtypes=NUMERIC)
def top_k(ctx: Any, inputs: list, attrs: dict) -> list:
    x, k_value = inputs
    node = attrs["_node_name"]
    k = _scalar_k(k_value, "TopKV2", node)
    if x.ndim < 1:
        raise InvalidArgumentError(f"TopKV2 (node '{node}'): input must be at least 1-D, got shape "
                                   f"{shape_str(x.shape)}")
    if k < 0:
        raise InvalidArgumentError(f"TopKV2 (node '{node}'): Need k >= 0, got {k}")
    if x.shape[-1] < k:
        raise InvalidArgumentError(f"input must have at least k columns. Had {x.shape[-1]}, needed "
                                   f"{k} (node '{node}', input shape {shape_str(x.shape)})")
    indices = top_k_indices(x, k)
    return [np.take_along_axis(x, indices, axis=-1), indices]


@register("TopKGrad", dtypes=NUMERIC)
def top_k_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """Zeros of the input's shape with the values' gradient put back at their indices."""
    grad, indices, shape = inputs
    out = np.zeros(shape_input(shape, attrs["_node_name"]), grad.dtype)
    np.put_along_axis(out, indices.astype(np.intp), grad, axis=-1)
    return [out]


@register("InTopKV2", dtypes=["float32"])
def in_top_k(ctx: Any, inputs: list, attrs: dict) -> list:
    """Row i is true when fewer than k predictions are strictly greater than the target's
    (ties favour the target) and the target's prediction is finite."""
    predictions, targets, k_value = inputs
    node = attrs["_node_name"]
    k = _scalar_k(k_value, "InTopKV2", node)
    if predictions.ndim != 2:
        raise InvalidArgumentError(f"predictions must be 2-dimensional, got shape "
                                   f"{shape_str(predictions.shape)} (node '{node}')")
    if targets.ndim != 1:
        raise InvalidArgumentError(f"targets must be 1-dimensional, got shape "
                                   f"{shape_str(targets.shape)} (node '{node}')")
    batch, classes = predictions.shape
    if targets.shape[0] != batch:
        raise InvalidArgumentError(f"First dimension of predictions {batch} must match length of "
                                   f"targets {targets.shape[0]} (node '{node}')")
    bad = np.flatnonzero((targets < 0) | (targets >= classes))
    if bad.size:
        raise InvalidArgumentError(f"targets[{bad[0]}] is out of range: {targets[bad[0]]} is not "
                                   f"in [0, {classes}) (node '{node}')")
    target_prediction = predictions[np.arange(batch), targets][:, None]
    more_probable = np.count_nonzero(predictions > target_prediction, axis=1)
    return [(more_probable < k) & np.isfinite(target_prediction[:, 0])]
