"""Kernels of the SparseTensor ops that build, order and reshape them: SparseToDense,
SparseReorder, SparseReshape, SparseFillEmptyRows, SparseConcat, SparseSlice and SparseSliceGrad.

A SparseTensor is its int64 ``indices`` [N, rank], ``values`` [N] and ``dense_shape`` [rank];
``validate`` holds the checks TF's kernels make, with TF's messages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import check_output_size
from zmtf.kernels.registry import register


def index_str(row: np.ndarray) -> str:
    return "[" + ",".join(str(int(v)) for v in row) + "]"


def check_parts(indices: np.ndarray, values: np.ndarray, shape: np.ndarray, node: str) -> None:
    """The three parts agree: indices [N, rank], values [N], shape [rank]."""
    if indices.ndim != 2 or values.ndim != 1 or shape.ndim != 1:
        raise InvalidArgumentError(f"Input indices should be a matrix, values a vector and shape a "
                                   f"vector, got shapes {list(indices.shape)}, {list(values.shape)} "
                                   f"and {list(shape.shape)} (node '{node}')")
    if indices.shape[0] != values.shape[0] or indices.shape[1] != shape.shape[0]:
        raise InvalidArgumentError(f"Number of entries and rank do not match: indices "
                                   f"{list(indices.shape)}, values {list(values.shape)}, shape "
                                   f"{list(shape.shape)} (node '{node}')")


def validate(indices: np.ndarray, shape: np.ndarray, node: str, unique: bool = True) -> None:
    """TF's SparseTensor index validation: in bounds, in row-major order, not repeated."""
    for n in range(indices.shape[0]):
        row = indices[n]
        if (row < 0).any() or (row >= shape).any():
            raise InvalidArgumentError(f"indices[{n}] = {index_str(row)} is out of bounds: need 0 "
                                       f"<= index < {index_str(shape)} (node '{node}')")
        if n == 0:
            continue
        order = _compare(indices[n - 1], row)
        if order > 0:
            raise InvalidArgumentError(
                f"indices[{n}] = {index_str(row)} is out of order. Many sparse ops require sorted "
                f"indices.\n    Use `tf.sparse.reorder` to create a correctly ordered copy. (node "
                f"'{node}')")
        if order == 0 and unique:
            raise InvalidArgumentError(f"indices[{n}] = {index_str(row)} is repeated (node '{node}')")


def _compare(a: np.ndarray, b: np.ndarray) -> int:
    differ = np.flatnonzero(a != b)
    return 0 if not differ.size else (1 if a[differ[0]] > b[differ[0]] else -1)


def row_major_order(indices: np.ndarray) -> np.ndarray:
    """The stable permutation that sorts index rows lexicographically."""
    if indices.shape[0] == 0 or indices.shape[1] == 0:
        return np.arange(indices.shape[0])
    return np.lexsort(indices.T[::-1])


@register("SparseToDense")
def sparse_to_dense(ctx: Any, inputs: list, attrs: dict) -> list:
    indices, shape, values, default = inputs
    node = attrs["_node_name"]
    shape = np.asarray(shape).reshape(-1).astype(np.int64)
    indices = np.asarray(indices).astype(np.int64)
    indices = indices.reshape(-1, 1) if indices.ndim < 2 else indices
    if indices.shape[1] != shape.size:
        raise InvalidArgumentError(f"sparse_indices has {indices.shape[1]} columns but output_shape "
                                   f"has {shape.size} dims (node '{node}')")
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != indices.shape[0]):
        raise InvalidArgumentError(f"sparse_values has incorrect shape {list(values.shape)}, should "
                                   f"be [] or [{indices.shape[0]}] (node '{node}')")
    if (shape < 0).any():
        raise InvalidArgumentError(f"output_shape has negative dims {shape.tolist()} (node '{node}')")
    if attrs.get("validate_indices", True):
        validate(indices, shape, node)
    else:
        _check_bounds(indices, shape, node)
    check_output_size(shape.tolist(), values.dtype, node)
    out = np.full(tuple(shape), default, dtype=values.dtype)
    out[tuple(indices.T)] = values
    return [out]


def _check_bounds(indices: np.ndarray, shape: np.ndarray, node: str) -> None:
    bad = np.flatnonzero(((indices < 0) | (indices >= shape)).any(axis=1))
    if bad.size:
        n = int(bad[0])
        raise InvalidArgumentError(f"indices[{n}] = {index_str(indices[n])} is out of bounds: need "
                                   f"0 <= index < {index_str(shape)} (node '{node}')")


@register("SparseReorder")
def sparse_reorder(ctx: Any, inputs: list, attrs: dict) -> list:
    indices, values, shape = inputs
    check_parts(indices, values, shape, attrs["_node_name"])
    _check_bounds(indices, shape, attrs["_node_name"])
    order = row_major_order(indices)
    return [indices[order], values[order]]


@register("SparseReshape")
def sparse_reshape(ctx: Any, inputs: list, attrs: dict) -> list:
    indices, shape, new_shape = (np.asarray(x, np.int64) for x in inputs)
    node = attrs["_node_name"]
    total = int(np.prod(shape))
    unknown = np.flatnonzero(new_shape == -1)
    if unknown.size > 1:
        raise InvalidArgumentError(f"only one output dimension may be -1, not both {unknown[0]} and "
                                   f"{unknown[1]} (node '{node}')")
    known = int(np.prod(new_shape[new_shape != -1]))
    out_shape = new_shape.copy()
    if unknown.size:
        if known == 0 or total % known:
            raise InvalidArgumentError(f"Input to reshape is a SparseTensor with {total} dense "
                                       f"values, but the requested shape requires a multiple of "
                                       f"{known}. (node '{node}')")
        out_shape[unknown[0]] = total // known
    elif known != total:
        raise InvalidArgumentError(f"Input to reshape is a tensor with {total} dense values, but the "
                                   f"requested shape has {known}. (node '{node}')")
    if indices.shape[0] == 0:
        return [np.zeros((0, out_shape.size), np.int64), out_shape]
    linear = np.ravel_multi_index(tuple(indices.T), tuple(shape))
    return [np.stack(np.unravel_index(linear, tuple(out_shape)), axis=1).astype(np.int64), out_shape]


@register("SparseFillEmptyRows")
def sparse_fill_empty_rows(ctx: Any, inputs: list, attrs: dict) -> list:
    indices, values, shape, default = inputs
    node = attrs["_node_name"]
    check_parts(indices, values, shape, node)
    if shape.size == 0:
        raise InvalidArgumentError(f"dense_shape must be at least a vector, got a scalar shape "
                                   f"(node '{node}')")
    row_count = int(shape[0])
    rows = indices[:, 0]
    for n in np.flatnonzero((rows < 0) | (rows >= row_count))[:1]:
        relation = f"{int(rows[n])} < 0" if rows[n] < 0 else f"{int(rows[n])} >= {row_count}"
        raise InvalidArgumentError(f"indices({n}, 0) is invalid: {relation} (node '{node}')")
    empty = np.bincount(rows, minlength=row_count) == 0 if row_count else np.zeros(0, bool)
    empty_rows = np.flatnonzero(empty)
    added = np.zeros((empty_rows.size, indices.shape[1]), np.int64)
    added[:, 0] = empty_rows
    order = np.argsort(np.concatenate([rows, empty_rows]), kind="stable")
    all_indices = np.concatenate([indices, added])[order]
    all_values = np.concatenate([values, np.full(empty_rows.size, default, values.dtype)])[order]
    position = np.empty(order.size, np.int64)
    position[order] = np.arange(order.size)
    return [all_indices, all_values, empty, position[:indices.shape[0]]]


@register("SparseConcat")
def sparse_concat(ctx: Any, inputs: list, attrs: dict) -> list:
    n, node = attrs["N"], attrs["_node_name"]
    indices, values, shapes = inputs[:n], inputs[n:2 * n], inputs[2 * n:]
    rank = shapes[0].size
    axis = attrs["concat_dim"]
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"Concat dimension must be in range [{-rank}, {rank}), got "
                                   f"{axis} (node '{node}')")
    axis %= rank
    offsets, total = [], 0
    for position, shape in enumerate(shapes):
        check_parts(indices[position], values[position], shape, node)
        for d in range(rank):
            if d != axis and shape[d] != shapes[0][d]:
                raise InvalidArgumentError(f"Input shapes must match: expected {int(shapes[0][d])} "
                                           f"for dimension {d} but got {int(shape[d])} at position "
                                           f"{position} (node '{node}')")
        offsets.append(total)
        total += int(shape[axis])
    shifted = [ix.copy() for ix in indices]
    for ix, offset in zip(shifted, offsets):
        ix[:, axis] += offset
    out_indices = np.concatenate(shifted) if n else np.zeros((0, rank), np.int64)
    out_values = np.concatenate(values)
    order = row_major_order(out_indices)
    out_shape = shapes[0].copy()
    out_shape[axis] = total
    return [out_indices[order], out_values[order], out_shape]


def _slice_box(inputs: list, node: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the entries inside the box, start, the box's end clipped to the shape)."""
    indices, shape, start, size = inputs
    for part, what in ((start, "start"), (size, "size")):
        if part.ndim != 1 or part.size != shape.size:
            raise InvalidArgumentError(f"Expected {what} to be a vector of length {shape.size} but "
                                       f"got length {part.size} (node '{node}')")
    end = np.minimum(start + size, shape)
    inside = ((indices >= start) & (indices < end)).all(axis=1)
    return inside, start, end


@register("SparseSlice")
def sparse_slice(ctx: Any, inputs: list, attrs: dict) -> list:
    indices, values, shape, start, size = inputs
    check_parts(indices, values, shape, attrs["_node_name"])
    inside, start, end = _slice_box([indices, shape, start, size], attrs["_node_name"])
    return [indices[inside] - start, values[inside], np.maximum(end - start, 0)]


@register("SparseSliceGrad")
def sparse_slice_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """Each sliced entry's gradient goes back to the input entry it came from (the slice kept
    the input order, so one pass pairs them, as TF's kernel does)."""
    grad, indices, start, out_indices = inputs
    out = np.zeros(indices.shape[0], grad.dtype)
    wanted = out_indices + start
    j = 0
    for i in range(indices.shape[0]):
        if j < wanted.shape[0] and (indices[i] == wanted[j]).all():
            out[i] = grad[j]
            j += 1
    if j != wanted.shape[0]:
        raise InvalidArgumentError(f"SparseSliceGrad: output index {index_str(out_indices[j])} has no "
                                   f"input entry (node '{attrs['_node_name']}')")
    return [out]
