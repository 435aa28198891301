"""Selection kernels: Select, Where, Slice, StridedSlice, GatherV2, Tile, Pad and their gradients.

Slices return copies (C-contiguous, owned): a view would keep a whole variable's storage
alive and alias it. The *Grad kernels build zeros of the input's shape and put (Slice,
StridedSlice) or add (GatherV2: an index may repeat) the incoming gradient in place.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, NUMERIC, check_output_size, empty, int_list, shape_input, shape_str
from zmtf.kernels.cpu.sparse_rows import as_rows, fits, gather_rows
from zmtf.kernels.registry import register


def bound(v: Any, dynamic: Sequence[np.ndarray], node: str) -> Any:
    """A bound of a slice or pad attr: a Python int (or None), or ``["in", k, *index]``, the
    int element at ``index`` of the node's input k + 1 (checked: the attr may come from the wire)."""
    if not isinstance(v, list):
        return v
    if len(v) < 2 or v[0] != "in" or not all(isinstance(i, int) for i in v[1:]) or \
            not 0 <= v[1] < len(dynamic):
        raise InvalidArgumentError(f"a bound refers to input {v!r}, which the node does not have "
                                   f"(node '{node}')")
    source = np.asarray(dynamic[v[1]])
    index = tuple(v[2:])
    if source.dtype.kind not in "iu" or source.ndim != len(index) or \
            not all(0 <= i < d for i, d in zip(index, source.shape)):
        what = "an int scalar" if not index else f"an int tensor with an element at {list(index)}"
        raise InvalidArgumentError(f"input {v[1] + 1} must be {what}, got {source.dtype} "
                                   f"{shape_str(source.shape)} (node '{node}')")
    return int(source[index])


def bounds(values: Sequence[Any], dynamic: Sequence[np.ndarray], node: str) -> list[Any]:
    return [bound(v, dynamic, node) for v in values]


def spec_key(spec: list[list[Any]], dynamic: Sequence[np.ndarray] = (), node: str = "") -> tuple:
    """The numpy index a StridedSlice ``spec`` stands for (format: ops/selection_ops.py);
    its ``["in", k, ...]`` bounds read ``dynamic[k]``."""
    key: list[Any] = []
    for entry in spec:
        kind = entry[0]
        if kind == "i":
            key.append(bound(entry[1], dynamic, node))
        elif kind == "s":
            step = bound(entry[3], dynamic, node)
            if step == 0:
                raise InvalidArgumentError(f"slice step cannot be zero (node '{node}')")
            key.append(slice(bound(entry[1], dynamic, node), bound(entry[2], dynamic, node), step))
        elif kind == "n":
            key.append(None)
        else:
            key.append(Ellipsis)
    return tuple(key)


@register("Select", dtypes=["bool"])   # looked up by its first input, the condition
def select(ctx: Any, inputs: list, attrs: dict) -> list:
    """Select(cond, x, y): x where cond, else y. cond has x's shape, is a vector over x's
    first dimension, or is a scalar that picks all of x or all of y (TF1's rule)."""
    cond, x, y = inputs
    if x.shape != y.shape:
        raise InvalidArgumentError(f"'then' and 'else' must have the same size, got "
                                   f"{shape_str(x.shape)} and {shape_str(y.shape)} "
                                   f"(node '{attrs['_node_name']}')")
    if cond.shape != x.shape and cond.ndim != 0:
        if cond.ndim == 1 and x.ndim >= 1 and cond.shape[0] == x.shape[0]:
            cond = cond.reshape(cond.shape + (1,) * (x.ndim - 1))
        else:
            raise InvalidArgumentError(f"condition must have the shape of x {shape_str(x.shape)} or "
                                       f"be a vector over its first dimension or a scalar, got "
                                       f"{shape_str(cond.shape)} (node '{attrs['_node_name']}')")
    out = empty(ctx, x.shape, x.dtype)
    np.copyto(out, np.where(cond, x, y))
    return [out]


@register("SelectV2", dtypes=["bool"])   # looked up by its first input, the condition
def select_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    """SelectV2(cond, x, y): x where cond, else y, the three broadcast together."""
    cond, x, y = inputs
    try:
        shape = np.broadcast_shapes(cond.shape, x.shape, y.shape)
    except ValueError:
        raise InvalidArgumentError(f"condition {shape_str(cond.shape)}, then {shape_str(x.shape)} "
                                   f"and else {shape_str(y.shape)} are not broadcastable "
                                   f"(node '{attrs['_node_name']}')") from None
    out = empty(ctx, shape, x.dtype)
    np.copyto(out, np.where(cond, x, y))
    return [out]


@register("Where", dtypes=["bool"])
def where(ctx: Any, inputs: list, attrs: dict) -> list:
    """Where(cond): int64 coordinates [n, rank] of the true elements, in row-major order."""
    return [np.argwhere(inputs[0]).astype(np.int64)]


@register("Slice", dtypes=ALL)
def slice_(ctx: Any, inputs: list, attrs: dict) -> list:
    """Slice(x, *bound tensors): TF's bounds checks (no clamping, unlike StridedSlice)."""
    x, node = inputs[0], attrs["_node_name"]
    begin, size = bounds(attrs["begin"], inputs[1:], node), bounds(attrs["size"], inputs[1:], node)
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise InvalidArgumentError(f"Slice (node '{node}'): begin {begin} and size {size} must have "
                                   f"{x.ndim} entries for an input of shape {shape_str(x.shape)}")
    key = []
    for i, (b, s, d) in enumerate(zip(begin, size, x.shape)):
        if not 0 <= b <= d:
            raise InvalidArgumentError(f"Slice (node '{node}'): Expected begin[{i}] in [0, {d}], "
                                       f"but got {b}")
        end = d if s == -1 else b + s
        if not 0 <= end - b <= d - b:
            raise InvalidArgumentError(f"Slice (node '{node}'): Expected size[{i}] in [0, {d - b}], "
                                       f"but got {s}")
        key.append(slice(b, end))
    return [np.ascontiguousarray(x[tuple(key)])]


@register("StridedSlice", dtypes=ALL)
def strided_slice(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    try:
        out = x[spec_key(attrs["spec"], inputs[1:], attrs["_node_name"])]
    except IndexError as error:
        raise InvalidArgumentError(f"slice (node '{attrs['_node_name']}') of shape "
                                   f"{shape_str(x.shape)}: {error}") from None
    return [np.array(out, copy=True, order="C")]


@register("SplitV", dtypes=ALL)
def split_v(ctx: Any, inputs: list, attrs: dict) -> list:
    """SplitV(x) into pieces of ``sizes`` along ``axis`` (attrs): each piece its own copy, as
    StridedSlice's (a view would keep a variable's storage visible to later updates)."""
    x, node = inputs[0], attrs["_node_name"]
    sizes, axis = int_list(attrs["sizes"], "sizes", node), int(attrs["axis"])
    axis += x.ndim if axis < 0 else 0   # a graph from TF may count from the end
    if not 0 <= axis < x.ndim or sum(sizes) != x.shape[axis] or min(sizes, default=0) < 0:
        raise InvalidArgumentError(f"SplitV (node '{node}'): sizes {sizes} must be non-negative "
                                   f"and add up to dimension {axis} of the input "
                                   f"{shape_str(x.shape)}")
    lead = (slice(None),) * axis
    out, offset = [], 0
    for n in sizes:
        out.append(np.array(x[lead + (slice(offset, offset + n),)], copy=True, order="C"))
        offset += n
    return out


@register("GatherV2", dtypes=ALL)
def gather(ctx: Any, inputs: list, attrs: dict) -> list:
    params, indices = inputs
    axis = attrs["axis"] % params.ndim
    if axis == 0 and params.flags.c_contiguous and fits(params, indices):
        # an embedding lookup: one numba pass checks each id and copies its row
        out = empty(ctx, indices.shape + params.shape[1:], params.dtype)
        bad = gather_rows(as_rows(params), indices.reshape(-1), as_rows(out, indices.ndim))
        if bad >= 0:
            _check_indices(indices, params.shape[0], attrs)   # raises, naming the id
        return [out]
    _check_indices(indices, params.shape[axis], attrs)
    return [np.take(params, indices, axis=axis)]


def _check_indices(indices: np.ndarray, limit: int, attrs: dict) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= limit):
        bad = indices[(indices < 0) | (indices >= limit)].flat[0]
        raise InvalidArgumentError(f"indices contains {bad}, which is not in [0, {limit}) "
                                   f"(node '{attrs['_node_name']}')")


@register("SliceGrad", dtypes=NUMERIC)
def slice_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    grad, *dynamic, shape = inputs   # dynamic: the forward op's bound tensors
    out = np.zeros(shape_input(shape, attrs["_node_name"]), grad.dtype)
    begin = bounds(attrs["begin"], dynamic, attrs["_node_name"])
    out[tuple(slice(b, b + n) for b, n in zip(begin, grad.shape))] = grad
    return [out]


@register("StridedSliceGrad", dtypes=NUMERIC)
def strided_slice_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    grad, *dynamic, shape = inputs   # dynamic: the forward op's index tensors
    out = np.zeros(shape_input(shape, attrs["_node_name"]), grad.dtype)
    out[spec_key(attrs["spec"], dynamic, attrs["_node_name"])] = grad
    return [out]


@register("GatherGrad", dtypes=NUMERIC)
def gather_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    grad, indices, shape = inputs
    out = np.zeros(shape_input(shape, attrs["_node_name"]), grad.dtype)
    axis = attrs["axis"] % out.ndim
    # move the gathered axis first so repeated indices add up with np.add.at
    moved = np.moveaxis(out, axis, 0)
    g = np.moveaxis(grad.reshape(out.shape[:axis] + (indices.size,) + out.shape[axis + 1:]), axis, 0)
    np.add.at(moved, indices.reshape(-1), g)
    return [out]


@register("Tile", dtypes=ALL)
def tile(ctx: Any, inputs: list, attrs: dict) -> list:
    """Tile(x) by the ``multiples`` attr: one non-negative int per dimension of x."""
    x, node = inputs[0], attrs["_node_name"]
    multiples = int_list(attrs["multiples"], "multiples", node)
    if len(multiples) != x.ndim or any(m < 0 for m in multiples):
        raise InvalidArgumentError(f"Tile (node '{node}'): multiples {multiples} must hold one "
                                   f"non-negative int per dimension of the input "
                                   f"{shape_str(x.shape)}")
    check_output_size([d * m for d, m in zip(x.shape, multiples)], x.dtype, node)
    return [np.tile(x, multiples)]


@register("TileGrad", dtypes=NUMERIC)
def tile_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """Sum the tiled copies: grad viewed as [m0, d0, m1, d1, ...], summed over the m axes."""
    grad, shape = inputs
    dims = shape_input(shape, attrs["_node_name"])
    split = []
    for m, d in zip(attrs["multiples"], dims):
        split += [m, d]
    return [grad.reshape(split).sum(axis=tuple(range(0, 2 * len(dims), 2))).astype(grad.dtype)]


@register("Pad", dtypes=ALL)
def pad(ctx: Any, inputs: list, attrs: dict) -> list:
    x, mode, node = inputs[0], attrs["mode"], attrs["_node_name"]
    pairs = [tuple(bounds(p, inputs[1:], node)) for p in attrs["paddings"]]
    if len(pairs) != x.ndim:
        raise InvalidArgumentError(f"Pad (node '{node}'): {len(pairs)} padding pairs "
                                   f"for an input of rank {x.ndim}")
    for a, b in pairs:
        if a < 0 or b < 0:
            raise InvalidArgumentError(f"Pad (node '{node}'): Paddings must be non-negative: {a} {b}")
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise InvalidArgumentError(f"Pad (node '{node}'): mode {mode!r:.40} is not one of "
                                   f"CONSTANT, REFLECT, SYMMETRIC")
    check_output_size([d + a + b for d, (a, b) in zip(x.shape, pairs)], x.dtype, node)
    if mode == "CONSTANT":
        return [np.pad(x, pairs, mode="constant", constant_values=np.asarray(attrs["constant_values"]).astype(x.dtype))]
    limit = 0 if mode == "REFLECT" else 1
    for (a, b), d in zip(pairs, x.shape):
        if max(a, b) > d - 1 + limit:
            raise InvalidArgumentError(f"Pad (node '{attrs['_node_name']}'): paddings {pairs} must be "
                                       f"less than the dimension size{' minus one' if not limit else ''} "
                                       f"in {mode} mode, input shape {shape_str(x.shape)}")
    return [np.pad(x, pairs, mode=mode.lower())]



@register("MirrorPadGrad", dtypes=NUMERIC)
def mirror_pad_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """The gradient of a REFLECT / SYMMETRIC Pad: axis by axis, each padded entry's gradient
    is added to the entry it mirrors, and the core is kept."""
    grad, node = inputs[0], attrs["_node_name"]
    reflect = attrs["mode"] == "REFLECT"
    out = grad
    for axis, pair in enumerate(attrs["paddings"]):
        before, after = bounds(pair, inputs[1:], node)
        moved = np.moveaxis(out, axis, 0)
        n = moved.shape[0] - before - after
        if n <= 0 or min(before, after) < 0:
            raise InvalidArgumentError(f"MirrorPadGrad (node '{node}'): paddings {before}, {after} "
                                       f"do not fit a gradient of shape {shape_str(grad.shape)}")
        core = moved[before:before + n].copy()
        np.add.at(core, before - np.arange(before) - 1 + reflect, moved[:before])
        np.add.at(core, n - 1 - np.arange(after) - reflect, moved[before + n:])
        out = np.moveaxis(core, 0, axis)
    return [np.ascontiguousarray(out)]
