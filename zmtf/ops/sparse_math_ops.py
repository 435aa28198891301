"""Arithmetic on SparseTensors: ``tf.sparse_tensor_dense_matmul`` (SparseTensorDenseMatMul),
``tf.sparse_reduce_sum`` (SparseReduceSum) and ``tf.sparse_add`` (SparseAdd for two
SparseTensors, SparseTensorDenseAdd for a SparseTensor and a dense tensor), as TF1 builds
them. Their gradients are in sparse_grad.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.sparse_ops import _indices_shape, _sparse_parts
from zmtf.framework.sparse_tensor import SparseTensor, constant_value, convert_to_sparse, is_sparse, known_dims
from zmtf.framework.tensor_shape import TensorShape


# ---- SparseTensorDenseMatMul ---------------------------------------------------------------
@op_def("SparseTensorDenseMatMul")
def _matmul_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, values, a_shape, b = inputs
    _sparse_parts(inputs, "SparseTensorDenseMatMul")
    if values.dtype != b.dtype:
        raise TypeError(f"SparseTensorDenseMatMul: the sparse values are {values.dtype.name} but b "
                        f"is {b.dtype.name}; cast one so both match")
    if b.shape.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {b.shape.ndims} for b ({b.name})")
    a_dims = known_dims(a_shape) or [None, None]
    if attrs["adjoint_a"]:
        a_dims = a_dims[::-1]
    b_dims = b.shape.as_list() if b.shape.ndims == 2 else [None, None]
    if attrs["adjoint_b"]:
        b_dims = b_dims[::-1]
    if a_dims[1] is not None and b_dims[0] is not None and a_dims[1] != b_dims[0]:
        raise ValueError(f"Dimensions must be equal, but are {a_dims[1]} and {b_dims[0]} for "
                         f"SparseTensorDenseMatMul with a of shape {a_dims} and b of "
                         f"shape {b.shape}")
    return [(values.dtype, TensorShape([a_dims[0], b_dims[1]]))]


def sparse_tensor_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: str | None = None) -> Tensor:
    """``sp_a @ b`` for a rank-2 SparseTensor ``sp_a`` and a dense matrix ``b`` (either one
    transposed first with adjoint_a / adjoint_b); duplicate entries of sp_a add up."""
    sp = convert_to_sparse(sp_a, "tf.sparse_tensor_dense_matmul")
    if sp.shape.ndims not in (None, 2):
        raise ValueError(f"sparse_tensor_dense_matmul: sp_a must have rank 2, got {sp.shape}")
    with get_default_graph().name_scope(name or "SparseTensorDenseMatMul"):
        b_t = convert_to_tensor(b, name="b")
        return apply_op("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, b_t],
                        {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)},
                        name="SparseTensorDenseMatMul").outputs[0]


# ---- SparseReduceSum -----------------------------------------------------------------------
@op_def("SparseReduceSum")
def _reduce_sum_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, values, shape, axes = inputs
    _sparse_parts(inputs, "SparseReduceSum")
    known, axes_value = known_dims(shape), constant_value(axes)
    if known is None or axes_value is None:
        return [(values.dtype, TensorShape(None))]
    rank = len(known)
    for axis in axes_value.reshape(-1):
        if not -rank <= axis < rank:
            raise ValueError(f"Invalid reduction dimension {int(axis)}, for input with {rank} "
                             f"dimensions.")
    reduced = {int(a) % rank for a in axes_value.reshape(-1)}
    dims = [1 if d in reduced else n for d, n in enumerate(known)] if attrs["keep_dims"] \
        else [n for d, n in enumerate(known) if d not in reduced]
    return [(values.dtype, TensorShape(dims))]


def sparse_reduce_sum(sp_input: Any, axis: Any = None, keepdims: Any = None,
                      reduction_axes: Any = None, keep_dims: Any = None) -> Tensor:
    """The sum of a SparseTensor over ``axis`` (all axes when None), as a dense tensor."""
    sp = convert_to_sparse(sp_input, "tf.sparse_reduce_sum")
    axis = reduction_axes if axis is None else axis
    keep = bool(keep_dims if keepdims is None else keepdims)
    if axis is None:
        if sp.shape.ndims is None:
            raise ValueError("sparse_reduce_sum over all axes needs a SparseTensor of known rank in "
                             "zmtf; pass axis")
        axis = list(range(sp.shape.ndims))
    axes = convert_to_tensor(np.asarray(axis, np.int32) if not isinstance(axis, Tensor) else axis,
                             name="reduction_axes")
    out = apply_op("SparseReduceSum", [sp.indices, sp.values, sp.dense_shape, axes],
                   {"keep_dims": keep}, name="SparseReduceSum").outputs[0]
    return out


# ---- SparseAdd / SparseTensorDenseAdd --------------------------------------------------------
@op_def("SparseAdd")
def _sparse_add_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _sparse_parts(inputs[:3], "SparseAdd")
    _sparse_parts(inputs[3:6], "SparseAdd")
    a_values, b_values = inputs[1], inputs[4]
    if a_values.dtype != b_values.dtype:
        raise TypeError(f"sparse_add: the values are {a_values.dtype.name} and "
                        f"{b_values.dtype.name}; both SparseTensors need one dtype")
    rank = inputs[2].shape.as_list()[0] if inputs[2].shape.ndims == 1 else None
    return [(dtypes.int64, _indices_shape(rank)), (a_values.dtype, TensorShape([None])),
            (dtypes.int64, inputs[2].shape)]


@op_def("SparseAddGrad")
def _sparse_add_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    grad, a_indices, b_indices, _ = inputs
    return [(grad.dtype, TensorShape([a_indices.shape.as_list()[0] if a_indices.shape.ndims else None])),
            (grad.dtype, TensorShape([b_indices.shape.as_list()[0] if b_indices.shape.ndims else None]))]


@op_def("SparseTensorDenseAdd")
def _sparse_dense_add_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _sparse_parts(inputs, "SparseTensorDenseAdd")
    values, b = inputs[1], inputs[3]
    if values.dtype != b.dtype:
        raise TypeError(f"sparse_add: the sparse values are {values.dtype.name} but the dense "
                        f"operand is {b.dtype.name}")
    return [(b.dtype, b.shape)]


def sparse_add(a: Any, b: Any, threshold: Any = None, thresh: Any = None) -> Any:
    """``a + b``: a SparseTensor when both are sparse (a sum whose magnitude is below
    ``threshold`` is dropped), a dense tensor when one is dense."""
    threshold = thresh if threshold is None else threshold
    if not (is_sparse(a) or is_sparse(b)):
        raise TypeError("sparse_add: at least one of a and b must be a SparseTensor")
    if is_sparse(a) and is_sparse(b):
        sa, sb = convert_to_sparse(a, "tf.sparse_add"), convert_to_sparse(b, "tf.sparse_add")
        if not sa.shape.is_compatible_with(sb.shape):
            raise ValueError(f"Shapes {sa.shape} and {sb.shape} are incompatible")
        thresh_t = convert_to_tensor(0 if threshold is None else threshold,
                                     dtype=sa.dtype, name="threshold")
        op = apply_op("SparseAdd", [sa.indices, sa.values, sa.dense_shape, sb.indices, sb.values,
                                    sb.dense_shape, thresh_t], name="SparseAdd")
        result = SparseTensor(*op.outputs)
        result._shape = sa.shape.merge_with(sb.shape)
        return result
    sp, dense = (a, b) if is_sparse(a) else (b, a)
    sp = convert_to_sparse(sp, "tf.sparse_add")
    dense_t = convert_to_tensor(dense, dtype=sp.dtype, name="b")
    return apply_op("SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, dense_t],
                    name="SparseTensorDenseAdd").outputs[0]


__all__ = ["sparse_add", "sparse_reduce_sum", "sparse_tensor_dense_matmul"]
