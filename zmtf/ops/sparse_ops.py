"""Building and reshaping SparseTensors: ``tf.sparse_placeholder``, ``tf.sparse_tensor_to_dense``
and ``tf.sparse_to_dense`` (both the SparseToDense op), ``tf.sparse_reorder``,
``tf.sparse_reshape``, ``tf.sparse_retain``, ``tf.sparse_fill_empty_rows``, ``tf.sparse_concat``,
``tf.sparse_slice`` and ``tf.sparse_mask``, as TF1 builds them.

Each op takes the three parts of its SparseTensor operands and returns parts; the builders
wrap them back into a SparseTensor with the static shape TF1 gives it.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.composite_ops import placeholder_with_default
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.selection_ops import gather, where
from zmtf.framework.sparse_tensor import SparseTensor, constant_value, convert_to_sparse, known_dims
from zmtf.framework.tensor_shape import TensorShape, as_shape

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)


def _rank_of(dense_shape: Tensor) -> int | None:
    return dense_shape.shape.as_list()[0] if dense_shape.shape.ndims == 1 else None


def _indices_shape(rank: int | None) -> TensorShape:
    return TensorShape([None, rank])


def _check_index(t: Tensor, what: str, allowed: Sequence[dtypes.DType] = (dtypes.int64,)) -> None:
    if t.dtype not in allowed:
        raise TypeError(f"{what} must be {' or '.join(d.name for d in allowed)}, got "
                        f"{t.dtype.name} ({t.name})")


# ---- sparse_placeholder ---------------------------------------------------------------------
def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """A SparseTensor to feed with a SparseTensorValue or an (indices, values, shape) tuple; a
    given ``shape`` (None for unknown dims) is the dense_shape's default, as in TF1."""
    prefix = (lambda part: f"{name}/{part}") if name is not None else (lambda part: None)
    if shape is None:
        dense_shape = array_ops.placeholder(dtypes.int64, [None], name=prefix("shape"))
        known, rank = TensorShape(None), None
    else:
        known = as_shape(shape)
        rank = known.ndims
        default = np.array([-1 if d is None else d for d in known.as_list()], np.int64)
        dense_shape = placeholder_with_default(
            convert_to_tensor(default, dtype=dtypes.int64, name=prefix("shape_default")),
            [rank], name=prefix("shape"))
    values = array_ops.placeholder(dtype, [None], name=prefix("values"))
    indices = array_ops.placeholder(dtypes.int64, [None, rank], name=prefix("indices"))
    result = SparseTensor(indices, values, dense_shape)
    result._shape = known   # the default may hold -1s: the static shape says None there
    return result


# ---- SparseToDense --------------------------------------------------------------------------
@op_def("SparseToDense")
def _sparse_to_dense_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, output_shape, values, default_value = inputs
    _check_index(indices, "sparse_to_dense: sparse_indices", _INDEX_DTYPES)
    if output_shape.dtype != indices.dtype:
        raise TypeError(f"sparse_to_dense: output_shape ({output_shape.dtype.name}) must have the "
                        f"dtype of sparse_indices ({indices.dtype.name})")
    if default_value.dtype != values.dtype:
        raise TypeError(f"sparse_to_dense: default_value is {default_value.dtype.name} but the "
                        f"values are {values.dtype.name}; give a default of the values' dtype")
    if default_value.shape.ndims not in (None, 0):
        raise ValueError(f"sparse_to_dense: default_value must be a scalar, got shape "
                         f"{default_value.shape}")
    known = known_dims(output_shape)
    if known is not None:
        return [(values.dtype, TensorShape(known))]
    rank = 1 if output_shape.shape.ndims == 0 else _rank_of(output_shape)
    return [(values.dtype, TensorShape(None) if rank is None else TensorShape([None] * rank))]


def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any,
                    default_value: Any = 0, validate_indices: bool = True,
                    name: str | None = None) -> Tensor:
    """The dense tensor of ``output_shape`` holding ``sparse_values`` (a vector or one scalar for
    all) at ``sparse_indices`` (a scalar, a vector of positions in a vector, or [N, rank]) and
    ``default_value`` elsewhere; with validate_indices, indices must be sorted and unique."""
    indices = convert_to_tensor(sparse_indices, name="sparse_indices")
    values = convert_to_tensor(sparse_values, name="sparse_values")
    shape = convert_to_tensor(np.asarray(output_shape, indices.dtype.np)
                              if not isinstance(output_shape, Tensor) else output_shape,
                              name="output_shape")
    default = convert_to_tensor(default_value, dtype=values.dtype, name="default_value")
    return apply_op("SparseToDense", [indices, shape, values, default],
                    {"validate_indices": bool(validate_indices)},
                    name=name or "SparseToDense").outputs[0]


def sparse_tensor_to_dense(sp_input: Any, default_value: Any = None, validate_indices: bool = True,
                           name: str | None = None) -> Tensor:
    """The dense value of a SparseTensor, ``default_value`` (0) where it has no entry."""
    sp = convert_to_sparse(sp_input, "tf.sparse_tensor_to_dense")
    default = 0 if default_value is None else default_value
    out = sparse_to_dense(sp.indices, sp.dense_shape, sp.values, default, validate_indices, name)
    out.set_shape(sp.shape)
    return out


# ---- SparseReorder / SparseReshape ---------------------------------------------------------
def _sparse_parts(inputs: list[Tensor], op: str) -> tuple[Tensor, Tensor, Tensor]:
    indices, values, dense_shape = inputs[:3]
    for tensor, what in ((indices, "indices"), (dense_shape, "dense_shape")):
        _check_index(tensor, f"{op}: {what}")
    return indices, values, dense_shape


@op_def("SparseReorder")
def _sparse_reorder_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, values, _ = _sparse_parts(inputs, "SparseReorder")
    return [(dtypes.int64, indices.shape), (values.dtype, values.shape)]


def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major (lexicographic index) order."""
    sp = convert_to_sparse(sp_input, "tf.sparse_reorder")
    op = apply_op("SparseReorder", [sp.indices, sp.values, sp.dense_shape],
                  name=name or "SparseReorder")
    return _like(sp, op.outputs[0], op.outputs[1], array_ops.identity(sp.dense_shape))


def _like(sp: SparseTensor, indices: Tensor, values: Tensor, dense_shape: Tensor) -> SparseTensor:
    """A SparseTensor from new parts that keeps ``sp``'s static shape."""
    result = SparseTensor(indices, values, dense_shape)
    result._shape = result.shape.merge_with(sp.shape)
    return result


@op_def("SparseReshape")
def _sparse_reshape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, shape, new_shape = inputs
    for tensor, what in ((indices, "input_indices"), (shape, "input_shape"), (new_shape, "new_shape")):
        _check_index(tensor, f"sparse_reshape: {what}")
    rank = _rank_of(new_shape)
    return [(dtypes.int64, TensorShape([indices.shape.as_list()[0] if indices.shape.ndims else None,
                                        rank])),
            (dtypes.int64, TensorShape([rank]))]


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """The same entries seen as a tensor of ``shape`` (one dim may be -1), row-major order kept."""
    sp = convert_to_sparse(sp_input, "tf.sparse_reshape")
    new_shape = convert_to_tensor(shape, dtype=dtypes.int64, name="shape") \
        if isinstance(shape, Tensor) else convert_to_tensor(np.asarray(shape, np.int64), name="shape")
    static = _reshaped_static_shape(sp.shape, constant_value(new_shape))
    op = apply_op("SparseReshape", [sp.indices, sp.dense_shape, new_shape], name=name or "SparseReshape")
    result = SparseTensor(op.outputs[0], array_ops.identity(sp.values), op.outputs[1])
    if static is not None:
        result._shape = static
    return result


def _reshaped_static_shape(old: TensorShape, new: np.ndarray | None) -> TensorShape | None:
    """TF1's graph-time check and inference of the reshaped shape when both are known."""
    if new is None:
        return None
    dims = [int(d) for d in new.reshape(-1)]
    if dims.count(-1) > 1:
        raise ValueError(f"At most one dimension can be inferred (-1). Found: "
                         f"[{' '.join(str(d) for d in dims)}]")
    if not old.is_fully_defined():
        return TensorShape([None if d == -1 else d for d in dims])
    total, known = int(np.prod(old.as_list(), dtype=np.int64)), int(np.prod([d for d in dims if d != -1],
                                                                           dtype=np.int64))
    if -1 in dims:
        if known == 0 or total % known:
            shown = [None if d == -1 else d for d in dims]
            raise ValueError(f"Cannot reshape a tensor with {total} elements to shape {shown} "
                             f"({known} elements).")
        dims = [total // known if d == -1 else d for d in dims]
    elif known != total:
        raise ValueError(f"Cannot reshape a tensor with {total} elements to shape {dims} "
                         f"({known} elements).")
    return TensorShape(dims)


# ---- compositions: retain, mask -------------------------------------------------------------
def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries whose ``to_retain`` (a bool vector, one per entry) is True, order kept."""
    sp = convert_to_sparse(sp_input, "tf.sparse_retain")
    keep = convert_to_tensor(to_retain)
    if keep.shape.ndims not in (None, 1):
        raise ValueError(f"to_retain must be a vector, got shape {keep.shape}")
    kept = array_ops.reshape(where(keep), [-1])
    return _like(sp, gather(sp.indices, kept), gather(sp.values, kept),
                 array_ops.identity(sp.dense_shape))


def sparse_mask(a: IndexedSlices, mask_indices: Any, name: str | None = None) -> IndexedSlices:
    """The slices of ``a`` whose index is not in ``mask_indices``."""
    with get_default_graph().name_scope(name or "sparse_mask"):
        mask = math_ops.cast(convert_to_tensor(mask_indices), a.indices.dtype)
        hit = math_ops.reduce_any(math_ops.equal(array_ops.expand_dims(a.indices, 1),
                                                 array_ops.expand_dims(mask, 0)), axis=1)
        kept = array_ops.reshape(where(math_ops.logical_not(hit)), [-1])
        return IndexedSlices(gather(a.values, kept), gather(a.indices, kept), a.dense_shape)


# ---- SparseFillEmptyRows / SparseConcat / SparseSlice ---------------------------------------
@op_def("SparseFillEmptyRows")
def _fill_empty_rows_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, values, _, default = inputs
    if default.dtype != values.dtype:
        raise TypeError(f"sparse_fill_empty_rows: default_value is {default.dtype.name} but the "
                        f"values are {values.dtype.name}")
    rank = indices.shape.as_list()[1] if indices.shape.ndims == 2 else None
    return [(dtypes.int64, _indices_shape(rank)), (values.dtype, TensorShape([None])),
            (dtypes.bool_, TensorShape([None])), (dtypes.int64, TensorShape([None]))]


def sparse_fill_empty_rows(sp_input: Any, default_value: Any,
                           name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """(the SparseTensor with ``default_value`` at [row, 0, ...] of each row that has no entry,
    a bool vector saying which rows were empty). Entries come out ordered by row."""
    sp = convert_to_sparse(sp_input, "tf.sparse_fill_empty_rows")
    with get_default_graph().name_scope(name or "SparseFillEmptyRows"):
        default = convert_to_tensor(default_value, dtype=sp.dtype, name="default_value")
        op = apply_op("SparseFillEmptyRows", [sp.indices, sp.values, sp.dense_shape, default],
                      name="SparseFillEmptyRows")
        empty_rows = op.outputs[2]
        if sp.shape.ndims:
            empty_rows.set_shape([sp.shape.as_list()[0]])
        return _like(sp, op.outputs[0], op.outputs[1], sp.dense_shape), empty_rows


@op_def("SparseConcat")
def _sparse_concat_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    n = attrs["N"]
    values = inputs[n:2 * n]
    if len({v.dtype for v in values}) > 1:
        raise TypeError(f"sparse_concat: every SparseTensor must have one dtype, got "
                        f"{[v.dtype.name for v in values]}")
    rank = next((r for r in map(_rank_of, inputs[2 * n:]) if r is not None), None)
    return [(dtypes.int64, _indices_shape(rank)), (values[0].dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def sparse_concat(axis: Any, sp_inputs: Sequence[Any], name: str | None = None,
                  expand_nonconcat_dim: bool = False, concat_dim: Any = None) -> SparseTensor:
    """The SparseTensors joined along ``axis``; with expand_nonconcat_dim the other dims grow to
    the largest input's, else they must match."""
    axis = concat_dim if concat_dim is not None else axis
    sps = [convert_to_sparse(s, "tf.sparse_concat") for s in sp_inputs]
    if not sps:
        raise ValueError("sparse_concat: sp_inputs is empty")
    shapes = [s.dense_shape for s in sps]
    if expand_nonconcat_dim:
        largest = math_ops.reduce_max(array_ops.stack(shapes), axis=0)
        rank = _rank_of(shapes[0])
        if rank is None:
            raise ValueError("sparse_concat(expand_nonconcat_dim=True) needs inputs of known rank")
        along = int(axis) % rank
        mask = np.arange(rank) == along
        shapes = [math_ops.add(math_ops.multiply(s, mask.astype(np.int64)),
                               math_ops.multiply(largest, (~mask).astype(np.int64))) for s in shapes]
    op = apply_op("SparseConcat", [s.indices for s in sps] + [s.values for s in sps] + shapes,
                  {"concat_dim": int(axis), "N": len(sps)}, name=name or "SparseConcat")
    result = SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])
    result._shape = _concat_static_shape([s.shape for s in sps], int(axis), expand_nonconcat_dim)
    return result


def _concat_static_shape(shapes: list[TensorShape], axis: int, expand: bool) -> TensorShape:
    if any(s.ndims is None for s in shapes):
        return TensorShape(None)
    rank = shapes[0].ndims
    along = axis % rank
    dims = []
    for d in range(rank):
        column = [s.as_list()[d] for s in shapes]
        known = None if None in column else column
        if d == along:
            dims.append(None if known is None else sum(known))
        elif expand:
            dims.append(None if known is None else max(known))
        else:
            dims.append(next((c for c in column if c is not None), None))
    return TensorShape(dims)


@op_def("SparseSlice")
def _sparse_slice_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, values, shape, start, size = inputs
    for tensor, what in ((start, "start"), (size, "size")):
        _check_index(tensor, f"sparse_slice: {what}")
    rank = _rank_of(shape)
    return [(dtypes.int64, _indices_shape(rank)), (values.dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


@op_def("SparseSliceGrad")
def _sparse_slice_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    grad, indices = inputs[:2]
    return [(grad.dtype, TensorShape([indices.shape.as_list()[0] if indices.shape.ndims else None]))]


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """The entries inside the box [start, start + size), shifted to start at 0; the dense shape
    is the box clipped to the input's."""
    sp = convert_to_sparse(sp_input, "tf.sparse_slice")
    start_t = convert_to_tensor(np.asarray(start, np.int64) if not isinstance(start, Tensor) else start,
                                name="start")
    size_t = convert_to_tensor(np.asarray(size, np.int64) if not isinstance(size, Tensor) else size,
                               name="size")
    op = apply_op("SparseSlice", [sp.indices, sp.values, sp.dense_shape, start_t, size_t],
                  name=name or "SparseSlice")
    return SparseTensor(*op.outputs)


__all__ = ["sparse_concat", "sparse_fill_empty_rows", "sparse_mask", "sparse_placeholder",
           "sparse_reorder", "sparse_reshape", "sparse_retain", "sparse_slice",
           "sparse_tensor_to_dense", "sparse_to_dense"]
