"""Gradients of the selection ops: Select routes the gradient, slices and gathers scatter it.

Select's gradient is Select(cond, grad, 0) / Select(cond, 0, grad): exactly zero on the side
not taken (a mask multiply would give NaN where the gradient is inf). Slice, StridedSlice
and GatherV2 along an inner axis send the gradient back dense, into zeros of the input's
shape; GatherV2 along axis 0 sends an IndexedSlices (the rows and their ids), as TF does.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops
from zmtf.ops.math_grad import shape_of, sum_to
from zmtf.ops.selection_ops import getitem, strided_slice_spec, where, where_v2

Grads = list[Tensor | None]

not_differentiable("Where")


def _static(x: Tensor) -> list | None:
    return x.shape.as_list() if x.shape.ndims is not None else None


@gradient("Select")
def _select_grad(op: Operation, grad: Tensor) -> Grads:
    cond = op.inputs[0]
    zeros = array_ops.zeros_like(grad)
    return [None, where(cond, grad, zeros), where(cond, zeros, grad)]


@gradient("SelectV2")
def _select_v2_grad(op: Operation, grad: Tensor) -> Grads:
    cond, x, y = op.inputs  # grad has the broadcast shape: sum it back to each side's shape
    zeros = array_ops.zeros_like(grad)
    return [None, sum_to(where_v2(cond, grad, zeros), x), sum_to(where_v2(cond, zeros, grad), y)]


def _back_to_input(grad_op: str, attr: str, op: Operation, grad: Tensor, x: Tensor,
                   *extra: Tensor) -> Tensor:
    """``grad_op(grad, *extra, shape(x))`` with ``op``'s ``attr``: a gradient shaped like x."""
    attrs = {attr: op.attrs[attr], "_static_shape": _static(x)}
    return apply_op(grad_op, [grad, *extra, shape_of(x)], attrs).outputs[0]


@gradient("Slice")
def _slice_grad(op: Operation, grad: Tensor) -> Grads:
    dynamic = list(op.inputs[1:])   # bound tensors: no gradient
    return [_back_to_input("SliceGrad", "begin", op, grad, op.inputs[0], *dynamic)] + \
        [None] * len(dynamic)


@gradient("StridedSlice")
def _strided_slice_grad(op: Operation, grad: Tensor) -> Grads:
    dynamic = list(op.inputs[1:])   # index tensors: no gradient
    return [_back_to_input("StridedSliceGrad", "spec", op, grad, op.inputs[0], *dynamic)] + \
        [None] * len(dynamic)


@gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op: Operation, grad: Tensor) -> Grads:
    """StridedSliceGrad is linear in the sliced gradient: its own gradient slices again (the
    second derivatives of tf.hessians go through it)."""
    dynamic = list(op.inputs[1:-1])
    return [strided_slice_spec(grad, op.attrs["spec"], dynamic=dynamic)] + [None] * (len(dynamic) + 1)


@gradient("GatherV2")
def _gather_grad(op: Operation, grad: Tensor) -> list[Any]:
    """Along axis 0, TF's sparse gradient: the gathered rows' gradients and their row ids (an
    IndexedSlices), so only those rows travel and get updated; along another axis, dense."""
    params, indices = op.inputs
    if op.attrs["axis"] != 0:
        return [_back_to_input("GatherGrad", "axis", op, grad, params, indices), None]
    dense_shape = shape_of(params)
    rows = array_ops.concat([array_ops.reshape(array_ops.size(indices), [1]),
                             getitem(dense_shape, slice(1, None))], 0) \
        if _static(params) is None or None in _static(params)[1:] else \
        [-1] + _static(params)[1:]
    values = array_ops.reshape(grad, rows)
    return [IndexedSlices(values, array_ops.reshape(indices, [-1]), dense_shape), None]


@gradient("Tile")
def _tile_grad(op: Operation, grad: Tensor) -> Grads:
    return [_back_to_input("TileGrad", "multiples", op, grad, op.inputs[0])]


@gradient("Pad")
def _pad_grad(op: Operation, grad: Tensor) -> Grads:
    x, paddings = op.inputs[0], op.attrs["paddings"]
    dynamic = list(op.inputs[1:])
    if op.attrs["mode"] != "CONSTANT":   # TF's MirrorPadGrad: the mirrored entries add back
        attrs = {"paddings": paddings, "mode": op.attrs["mode"], "_static_shape": _static(x)}
        return [apply_op("MirrorPadGrad", [grad, *dynamic], attrs).outputs[0]] + [None] * len(dynamic)
    if not dynamic:
        spec = [["s", a, -b if b else None, None] for a, b in paddings]
        return [strided_slice_spec(grad, spec)]
    # TF's: slice(grad, paddings[:, 0], shape(x)), the bounds read at run time
    known = _static(x)
    size: list[Any] = known if known is not None and None not in known else \
        [["in", len(dynamic), i] for i in range(len(paddings))]
    inputs = [grad, *dynamic] + ([shape_of(x)] if size is not known else [])
    attrs = {"begin": [pair[0] for pair in paddings], "size": size}
    return [apply_op("Slice", inputs, attrs, name="Slice").outputs[0]] + [None] * len(dynamic)


@gradient("SplitV")
def _split_grad(op: Operation, *grads: Tensor | None) -> Grads:
    """The pieces' gradients concatenated back (zeros for a piece nothing used), as TF's."""
    pieces = [g if g is not None else array_ops.zeros_like(out) for g, out in zip(grads, op.outputs)]
    return [array_ops.concat(pieces, int(op.attrs["axis"]))]
