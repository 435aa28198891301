"""The set kernels of ``tf.sets``: each operand becomes a map from a group (a position of all
but the last axis, as a flat index) to its set of elements; the result is assembled in
row-major order of the groups, each set's elements ascending, as TF's SparseTensor output.

Sparse operands are checked as TF checks them with ``validate_indices``: indices inside the
dense shape and in strictly increasing row-major order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.registry import register

Groups = dict[int, set]


def _dense_groups(x: np.ndarray, node: str) -> tuple[tuple[int, ...], Groups]:
    if x.ndim < 2:
        raise InvalidArgumentError(f"a dense set operand must have rank >= 2, got shape "
                                   f"{shape_str(x.shape)} (node '{node}')")
    rows = x.reshape(-1, x.shape[-1]) if x.size else np.zeros((int(np.prod(x.shape[:-1])), 0), x.dtype)
    return x.shape[:-1], {i: set(row.tolist()) for i, row in enumerate(rows) if row.size}


def _sparse_groups(indices: np.ndarray, values: np.ndarray, shape: np.ndarray, validate: bool,
                   node: str) -> tuple[tuple[int, ...], Groups]:
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2 or indices.ndim != 2 or indices.shape[1] != len(shape) \
            or values.shape != (indices.shape[0],):
        raise InvalidArgumentError(f"a sparse set operand needs rank >= 2 and indices [N, rank] "
                                   f"with N values, got indices {shape_str(indices.shape)}, "
                                   f"values {shape_str(values.shape)} and dense_shape "
                                   f"{shape_str(shape)} (node '{node}')")
    if validate and len(indices):
        _validate(indices, shape, node)
    groups: Groups = {}
    if len(indices):
        flat = np.ravel_multi_index(tuple(indices[:, :-1].T), shape[:-1], mode="clip")
        for key, value in zip(flat.tolist(), values.tolist()):
            groups.setdefault(key, set()).add(value)
    return shape[:-1], groups


def _validate(indices: np.ndarray, shape: tuple[int, ...], node: str) -> None:
    outside = np.flatnonzero(((indices < 0) | (indices >= np.array(shape))).any(axis=1))
    if outside.size:
        i = int(outside[0])
        raise InvalidArgumentError(f"indices[{i}] = {indices[i].tolist()} is out of bounds for "
                                   f"dense_shape {list(shape)} (node '{node}')")
    flat = np.ravel_multi_index(tuple(indices.T), shape)
    steps = np.flatnonzero(np.diff(flat) <= 0)
    if steps.size:
        i = int(steps[0]) + 1
        raise InvalidArgumentError(
            f"indices[{i}] = {indices[i].tolist()} is out of order. Many sparse ops require "
            f"sorted indices. Use `tf.sparse.reorder` to create a correctly ordered copy. "
            f"(node '{node}')")


_COMBINE = {
    "intersection": lambda x, y: x & y,
    "union": lambda x, y: x | y,
    "a-b": lambda x, y: x - y,
    "b-a": lambda x, y: y - x,
}


def _combine(a: tuple[tuple[int, ...], Groups], b: tuple[tuple[int, ...], Groups],
             attrs: dict, dtype: Any) -> list:
    node, operation = attrs["_node_name"], attrs["set_operation"]
    (shape_a, groups_a), (shape_b, groups_b) = a, b
    if shape_a != shape_b:
        raise InvalidArgumentError(f"the sets' shapes (all but the last dimension) must agree, "
                                   f"got {shape_str(shape_a)} and {shape_str(shape_b)} "
                                   f"(node '{node}')")
    combine = _COMBINE.get(operation)
    if combine is None:
        raise InvalidArgumentError(f"Invalid set_operation {operation!r}: use one of "
                                   f"{', '.join(_COMBINE)} (node '{node}')")
    empty: set = set()
    index_rows, value_rows, widest = [], [], 0
    for key in sorted(groups_a.keys() | groups_b.keys()):
        members = sorted(combine(groups_a.get(key, empty), groups_b.get(key, empty)))
        if not members:
            continue
        widest = max(widest, len(members))
        position = list(np.unravel_index(key, shape_a)) if shape_a else []
        index_rows += [[int(p) for p in position] + [j] for j in range(len(members))]
        value_rows += members
    rank = len(shape_a) + 1
    indices = np.array(index_rows, np.int64).reshape(-1, rank)
    values = np.array(value_rows, dtype=dtype) if value_rows else np.zeros(0, dtype)
    return [indices, values, np.array(list(shape_a) + [widest], np.int64)]


@register("DenseToDenseSetOperation")
def dense_to_dense(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    a, b = inputs
    return _combine(_dense_groups(a, node), _dense_groups(b, node), attrs, a.dtype)


@register("DenseToSparseSetOperation")
def dense_to_sparse(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    a = inputs[0]
    b = _sparse_groups(*inputs[1:], attrs["validate_indices"], node)
    return _combine(_dense_groups(a, node), b, attrs, a.dtype)


@register("SparseToSparseSetOperation")
def sparse_to_sparse(ctx: Any, inputs: list, attrs: dict) -> list:
    node, validate = attrs["_node_name"], attrs["validate_indices"]
    a = _sparse_groups(*inputs[:3], validate, node)
    b = _sparse_groups(*inputs[3:], validate, node)
    return _combine(a, b, attrs, inputs[1].dtype)


@register("SetSize")
def set_size(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    shape, groups = _sparse_groups(*inputs, attrs["validate_indices"], node)
    sizes = np.zeros(int(np.prod(shape)), np.int32)
    for key, members in groups.items():
        sizes[key] = len(members)
    return [sizes.reshape(shape)]
