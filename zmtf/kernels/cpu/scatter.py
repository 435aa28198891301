"""ScatterUpdate/Add/Sub/Mul/Div/Max/Min: update rows of a variable in place, under its lock;
ScatterNdUpdate/Add/Sub: the same at N-d indices (elements or slices).

Like AssignAdd (state.py), the output is the stored array itself. Repeated indices add up
for ScatterAdd/ScatterSub (``np.add.at``: unbuffered); for ScatterUpdate the last row
written for an index wins, as TF's sequential CPU loop does. Every index is checked before
anything is written, so a bad index leaves the variable untouched.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, NUMERIC, quiet_fp, shape_str
from zmtf.kernels.cpu.partition import first_outside, last_wins, slice_str
from zmtf.kernels.cpu.state import _read_writable, _ref
from zmtf.kernels.cpu.sparse_rows import add_rows, as_rows, fits
from zmtf.kernels.registry import register

_RowUpdate = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def _rows_for(var: np.ndarray, indices: np.ndarray, updates: np.ndarray, node: str) -> np.ndarray:
    """``updates`` as one row per index: [indices.size] + var.shape[1:] (a scalar broadcasts)."""
    shape = (indices.size,) + var.shape[1:]
    if updates.ndim == 0:
        return np.broadcast_to(updates.astype(var.dtype), shape)
    if updates.shape != indices.shape + var.shape[1:]:
        raise InvalidArgumentError(
            f"Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], "
            f"got updates.shape {shape_str(updates.shape)}, indices.shape {shape_str(indices.shape)}, "
            f"params.shape {shape_str(var.shape)} (node '{node}')")
    return updates.reshape(shape).astype(var.dtype, copy=False)


def _scatter(inputs: list, attrs: dict, apply: _RowUpdate) -> list:
    node = attrs["_node_name"]
    ref, indices, updates = _ref(inputs[0], node), inputs[1], inputs[2]
    with ref.store.lock(ref.name), quiet_fp():
        var = _read_writable(ref)
        if var.ndim == 0:
            raise InvalidArgumentError(f"params must be at least 1-D, got shape [] (variable "
                                       f"'{ref.name}', node '{node}')")
        ids = indices.reshape(-1)
        rows = _rows_for(var, indices, updates, node)
        bad = first_outside(ids, var.shape[0])
        if bad is not None:
            raise InvalidArgumentError(f"indices{slice_str(indices.shape, bad)} = {ids[bad]} is not in "
                                       f"[0, {var.shape[0]}) (variable '{ref.name}', node '{node}')")
        apply(var, ids, rows)
        return [var]


def _update_rows(var: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> None:
    targets, sources = last_wins(ids)
    var[targets] = rows[sources]


@register("ScatterUpdate", dtypes=ALL)
def scatter_update(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterUpdate(ref, indices, updates): ref[indices[i]] = updates[i]; the last wins."""
    return _scatter(inputs, attrs, _update_rows)


def _add_at(var: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> None:
    """``np.add.at(var, ids, rows)``, as one numba pass over the rows where the dtypes allow."""
    if var.flags.c_contiguous and fits(var, rows, ids):
        add_rows(as_rows(var), ids, as_rows(rows), var.dtype.type(1))
    else:
        np.add.at(var, ids, rows)


def _subtract_at(var: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> None:
    if var.flags.c_contiguous and fits(var, rows, ids):
        add_rows(as_rows(var), ids, as_rows(rows), var.dtype.type(-1))
    else:
        np.subtract.at(var, ids, rows)


@register("ScatterAdd", dtypes=NUMERIC)
def scatter_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterAdd(ref, indices, updates): ref[indices[i]] += updates[i]; duplicates add up."""
    return _scatter(inputs, attrs, _add_at)


@register("ScatterSub", dtypes=NUMERIC)
def scatter_sub(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterSub(ref, indices, updates): ref[indices[i]] -= updates[i]; duplicates subtract."""
    return _scatter(inputs, attrs, _subtract_at)


@register("ScatterMul", dtypes=NUMERIC)
def scatter_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterMul(ref, indices, updates): ref[indices[i]] *= updates[i]."""
    return _scatter(inputs, attrs, np.multiply.at)


def _divide_at(var: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> None:
    if var.dtype.kind == "f":
        np.divide.at(var, ids, rows)
        return
    for i, row in zip(ids, rows):   # ints: C's truncating division, as TF's kernel
        if np.any(row == 0):
            raise InvalidArgumentError("scatter_div: integer division by zero")
        var[i] = (np.trunc(var[i] / row)).astype(var.dtype)


@register("ScatterDiv", dtypes=NUMERIC)
def scatter_div(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterDiv(ref, indices, updates): ref[indices[i]] /= updates[i]."""
    return _scatter(inputs, attrs, _divide_at)


@register("ScatterMax", dtypes=NUMERIC)
def scatter_max(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterMax(ref, indices, updates): ref[indices[i]] = max(ref[indices[i]], updates[i])."""
    return _scatter(inputs, attrs, np.maximum.at)


@register("ScatterMin", dtypes=NUMERIC)
def scatter_min(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterMin(ref, indices, updates): ref[indices[i]] = min(ref[indices[i]], updates[i])."""
    return _scatter(inputs, attrs, np.minimum.at)


def nd_positions(shape: tuple, indices: np.ndarray, updates: np.ndarray, node: str,
                 what: str) -> tuple[np.ndarray, np.ndarray]:
    """(flat positions into shape[:K], updates as one slice per index) for N-d indices
    [..., K]; InvalidArgumentError naming the first bad index or a wrong updates shape."""
    depth = indices.shape[-1] if indices.ndim else 0
    if indices.ndim < 1 or depth > len(shape):
        raise InvalidArgumentError(f"indices must be at least 1-D with indices.shape[-1] <= "
                                   f"rank of {what} ({len(shape)}), got {shape_str(indices.shape)} "
                                   f"(node '{node}')")
    wanted = indices.shape[:-1] + tuple(shape[depth:])
    if updates.shape != wanted:
        raise InvalidArgumentError(f"updates must have shape indices.shape[:-1] + "
                                   f"{what}.shape[indices.shape[-1]:] = {shape_str(wanted)}, got "
                                   f"{shape_str(updates.shape)} (node '{node}')")
    coords = indices.reshape(-1, depth)
    outer = shape[:depth]
    bad = first_true_row((coords < 0) | (coords >= np.array(outer, dtype=np.int64)))
    if bad is not None:
        raise InvalidArgumentError(f"indices[{bad}] = {coords[bad].tolist()} does not index into "
                                   f"{what} of shape {shape_str(shape)} (node '{node}')")
    flat = np.ravel_multi_index(tuple(coords.T), outer) if depth else np.zeros(len(coords), np.int64)
    return flat, updates.reshape((len(coords),) + tuple(shape[depth:]))


def first_true_row(mask: np.ndarray) -> int | None:
    rows = mask.any(axis=1)
    return int(np.argmax(rows)) if rows.any() else None


def _scatter_nd(inputs: list, attrs: dict, apply: _RowUpdate) -> list:
    node = attrs["_node_name"]
    ref, indices, updates = _ref(inputs[0], node), np.asarray(inputs[1]), np.asarray(inputs[2])
    with ref.store.lock(ref.name), quiet_fp():
        var = _read_writable(ref)
        flat, rows = nd_positions(var.shape, indices, updates.astype(var.dtype, copy=False), node,
                                  f"variable '{ref.name}'")
        depth = indices.shape[-1]
        view = var.reshape((-1,) + var.shape[depth:])
        if not np.shares_memory(view, var):
            raise InvalidArgumentError(f"variable '{ref.name}' is not contiguous (node '{node}')")
        apply(view, flat, rows)
        return [var]


@register("ScatterNdUpdate", dtypes=ALL)
def scatter_nd_update(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterNdUpdate(ref, indices, updates): ref[indices[i]] = updates[i]; the last wins."""
    return _scatter_nd(inputs, attrs, _update_rows)


@register("ScatterNdAdd", dtypes=NUMERIC)
def scatter_nd_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterNdAdd(ref, indices, updates): ref[indices[i]] += updates[i]."""
    return _scatter_nd(inputs, attrs, np.add.at)


@register("ScatterNdSub", dtypes=NUMERIC)
def scatter_nd_sub(ctx: Any, inputs: list, attrs: dict) -> list:
    """ScatterNdSub(ref, indices, updates): ref[indices[i]] -= updates[i]."""
    return _scatter_nd(inputs, attrs, np.subtract.at)


def _tensor_scatter(inputs: list, attrs: dict, apply: _RowUpdate) -> list:
    tensor, indices, updates = (np.asarray(v) for v in inputs)
    out = np.array(tensor, copy=True)
    if indices.size == 0 and indices.ndim >= 1 and updates.size == 0:
        return [out]
    with quiet_fp():
        flat, rows = nd_positions(out.shape, indices, updates.astype(out.dtype, copy=False),
                                  attrs["_node_name"], "tensor")
        apply(out.reshape((-1,) + out.shape[indices.shape[-1]:]), flat, rows)
    return [out]


@register("TensorScatterUpdate", dtypes=ALL)
def tensor_scatter_update(ctx: Any, inputs: list, attrs: dict) -> list:
    """TensorScatterUpdate(tensor, indices, updates): a copy with updates written in."""
    return _tensor_scatter(inputs, attrs, _update_rows)


@register("TensorScatterAdd", dtypes=NUMERIC)
def tensor_scatter_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """TensorScatterAdd(tensor, indices, updates): a copy with updates added."""
    return _tensor_scatter(inputs, attrs, np.add.at)


@register("TensorScatterSub", dtypes=NUMERIC)
def tensor_scatter_sub(ctx: Any, inputs: list, attrs: dict) -> list:
    """TensorScatterSub(tensor, indices, updates): a copy with updates subtracted."""
    return _tensor_scatter(inputs, attrs, np.subtract.at)


@register("TensorScatterMax", dtypes=NUMERIC)
def tensor_scatter_max(ctx: Any, inputs: list, attrs: dict) -> list:
    """TensorScatterMax(tensor, indices, updates): a copy with the elementwise maxima."""
    return _tensor_scatter(inputs, attrs, np.maximum.at)


@register("TensorScatterMin", dtypes=NUMERIC)
def tensor_scatter_min(ctx: Any, inputs: list, attrs: dict) -> list:
    """TensorScatterMin(tensor, indices, updates): a copy with the elementwise minima."""
    return _tensor_scatter(inputs, attrs, np.minimum.at)
