"""Diagonal kernels: MatrixDiag, MatrixDiagPart, MatrixSetDiag, MatrixBandPart (over the last
two axes, batched), Diag and DiagPart. numpy fancy indexing on the diagonal; outputs are
fresh C-contiguous arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, check_output_size, shape_str
from zmtf.kernels.registry import register


def _need_matrices(x: np.ndarray, node: str) -> None:
    if x.ndim < 2:
        raise InvalidArgumentError(f"input must be at least 2-D (a batch of matrices), got shape "
                                   f"{shape_str(x.shape)} (node '{node}')")


def _need_diagonal(d: np.ndarray, node: str) -> np.ndarray:
    if d.ndim < 1:
        raise InvalidArgumentError(f"diagonal must be at least 1-D, got a scalar (node '{node}')")
    return d


@register("MatrixDiag", dtypes=ALL)
def matrix_diag(ctx: Any, inputs: list, attrs: dict) -> list:
    d = _need_diagonal(inputs[0], attrs["_node_name"])
    n = d.shape[-1]
    check_output_size(d.shape + (n,), d.dtype, attrs["_node_name"])
    out = np.zeros(d.shape + (n,), d.dtype)
    out[..., np.arange(n), np.arange(n)] = d
    return [out]


@register("MatrixDiagPart", dtypes=ALL)
def matrix_diag_part(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    _need_matrices(x, attrs["_node_name"])
    return [np.ascontiguousarray(np.diagonal(x, axis1=-2, axis2=-1))]


@register("MatrixSetDiag", dtypes=ALL)
def matrix_set_diag(ctx: Any, inputs: list, attrs: dict) -> list:
    x, d = inputs
    _need_matrices(x, attrs["_node_name"])
    n = min(x.shape[-2:])
    if d.shape != x.shape[:-2] + (n,):
        raise InvalidArgumentError(f"diagonal must have shape {shape_str(x.shape[:-2] + (n,))} for "
                                   f"input of shape {shape_str(x.shape)}, got "
                                   f"{shape_str(d.shape)} (node '{attrs['_node_name']}')")
    out = np.array(x, copy=True, order="C")
    out[..., np.arange(n), np.arange(n)] = d
    return [out]


@register("MatrixBandPart", dtypes=ALL)
def matrix_band_part(ctx: Any, inputs: list, attrs: dict) -> list:
    x, num_lower, num_upper = inputs
    node = attrs["_node_name"]
    _need_matrices(x, node)
    lower, upper = int(num_lower), int(num_upper)
    rows, cols = x.shape[-2:]
    if lower > rows or upper > cols:
        raise InvalidArgumentError(f"num_lower ({lower}) must be <= {rows} rows and num_upper "
                                   f"({upper}) <= {cols} columns; use -1 to keep a whole triangle "
                                   f"(node '{node}')")
    below = np.arange(rows)[:, None] - np.arange(cols)[None, :]   # i - j
    keep = ((lower < 0) | (below <= lower)) & ((upper < 0) | (-below <= upper))
    return [np.where(keep, x, np.zeros((), x.dtype))]


@register("Diag", dtypes=ALL)
def diag(ctx: Any, inputs: list, attrs: dict) -> list:
    d = _need_diagonal(inputs[0], attrs["_node_name"])
    out = np.zeros((d.size, d.size), d.dtype)
    out[np.arange(d.size), np.arange(d.size)] = d.reshape(-1)
    return [out.reshape(d.shape * 2)]


@register("DiagPart", dtypes=ALL)
def diag_part(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    half = x.ndim // 2
    if x.ndim == 0 or x.ndim % 2 or x.shape[:half] != x.shape[half:]:
        raise InvalidArgumentError(f"input must have an even rank >= 2 with shape [d1..dk, d1..dk], "
                                   f"got {shape_str(x.shape)} (node '{attrs['_node_name']}')")
    size = int(np.prod(x.shape[:half]))
    return [np.ascontiguousarray(x.reshape(size, size).diagonal()).reshape(x.shape[:half])]
