"""Selection ops: tf.where, tf.slice, tf.pad, tensor[...] indexing and tf.gather.

``x[1:3, ::2, 0]`` is a StridedSlice whose attr ``spec`` lists one entry per index item, in
a form the graph can serialize: ``["i", k]`` an integer index, ``["s", start, stop, step]``
a slice (None for an open end), ``["n"]`` tf.newaxis, ``["e"]`` an Ellipsis. A bound (in a
spec, or a Slice's begin / size, a Pad's paddings) is a Python int, or ``["in", k, *index]``:
the element at ``index`` of the op's input k + 1, for bounds known only at run time (a loop
counter, ``tf.shape(x)[0] - 1``, a begin tensor). The gradients of Slice, StridedSlice and
GatherV2 are dense ops that scatter the incoming gradient into zeros of the input's shape.
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.strided_slice_spec import strided_slice_to_spec
from zmtf.framework.tensor_shape import TensorShape, broadcast_shape
from zmtf.framework import upper_layers

newaxis = None


# ---- Select / Where ------------------------------------------------------------------------
def _check_select_dtypes(function: str, cond: Tensor, x: Tensor, y: Tensor) -> None:
    if cond.dtype != dtypes.bool_:
        raise TypeError(f"{function}: condition must be bool, got {cond.dtype.name} ({cond.name})")
    if x.dtype != y.dtype:
        raise TypeError(f"{function}: x and y must have the same dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")


@op_def("Select")
def _select_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    cond, x, y = inputs
    _check_select_dtypes("tf.where", cond, x, y)
    shape = x.shape.merge_with(y.shape) if x.shape.is_compatible_with(y.shape) else None
    if shape is None:
        raise ValueError(f"tf.where: x and y must have the same shape, got {x.shape} and {y.shape}")
    return [(x.dtype, shape)]


@op_def("Where")
def _where_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    rank = inputs[0].shape.ndims
    return [(dtypes.int64, TensorShape([None, rank]))]


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """TF1 ``tf.where``: elements of x where condition holds, else of y (same shapes); with
    x and y both None, the int64 coordinates [n, rank] of the true elements."""
    cond = convert_to_tensor(condition)
    if x is None and y is None:
        if cond.dtype != dtypes.bool_:
            raise TypeError(f"tf.where: condition must be bool, got {cond.dtype.name} ({cond.name})")
        return apply_op("Where", [cond], name=name).outputs[0]
    if x is None or y is None:
        raise ValueError("tf.where: give both x and y, or neither")
    xt = convert_to_tensor(x)
    yt = convert_to_tensor(y, dtype=xt.dtype)
    return apply_op("Select", [cond, xt, yt], name=name).outputs[0]


@op_def("SelectV2")
def _select_v2_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    cond, x, y = inputs
    _check_select_dtypes("tf.where_v2", cond, x, y)
    return [(x.dtype, broadcast_shape(cond.shape, broadcast_shape(x.shape, y.shape)))]


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """TF2's ``tf.where``: x where condition holds, else y, all three broadcast together
    (``where_v2(mask, x, 0.0)``); with x and y both None, the coordinates as ``tf.where``."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("tf.where_v2: give both x and y, or neither")
    cond = convert_to_tensor(condition)
    xt = convert_to_tensor(x)
    yt = convert_to_tensor(y, dtype=xt.dtype)
    return apply_op("SelectV2", [cond, xt, yt], name=name).outputs[0]


# ---- bounds: Python ints, or elements of tensor inputs ------------------------------------------
def _holds_tensor(value: Any) -> bool:
    return _is_tensor(value) or (isinstance(value, (list, tuple)) and any(map(_holds_tensor, value)))


def _bound_refs(value: Any, dynamic: list[Tensor], rows: int | None, what: str,
                function: str, pairs: bool = False) -> list[Any]:
    """``value`` (ints per row, or ``[before, after]`` pairs with ``pairs``) as a slice or pad
    attr: Python ints stay ints; a tensor, or a list holding one (auto-packed as TF does),
    becomes an input of the op and each entry ``["in", k, row(, column)]`` an element of it."""
    if not _holds_tensor(value):
        return [[int(a), int(b)] for a, b in value] if pairs else [int(v) for v in value]
    tensor = convert_to_tensor(value, name=what)
    dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
    expected = 2 if pairs else 1
    if not tensor.dtype.is_integer or (dims is not None and len(dims) != expected) or \
            (pairs and dims is not None and dims[1] not in (None, 2)):
        form = "an int tensor of shape [n, 2]" if pairs else "an int vector"
        raise TypeError(f"{function}: {what} must be {form}, got {tensor.dtype.name} "
                        f"{tensor.shape} ({tensor.name})")
    count = dims[0] if dims is not None and dims[0] is not None else rows
    if count is None:
        raise ValueError(f"{function}: the length of {what} ({tensor.name}) must be known: give the "
                         f"input a known rank or {what} a known shape")
    dynamic.append(tensor)
    k = len(dynamic) - 1
    return [[["in", k, i, 0], ["in", k, i, 1]] if pairs else ["in", k, i] for i in range(count)]


def static_bound(value: Any, inputs: Sequence[Tensor]) -> int | None:
    """A bound's value when the graph knows it: an int, or an element of a Const input or of a
    Pack of them (an auto-packed ``[0, t]``); None when it is known only at run time."""
    if not isinstance(value, list):
        return value
    tensor, index = inputs[value[1] + 1], list(value[2:])
    while index and tensor.op.type == "Pack" and tensor.op.attrs.get("axis") == 0:
        tensor = tensor.op.inputs[index.pop(0)]
    if tensor.op.type != "Const":
        return None
    return int(np.asarray(tensor.op.attrs["value"])[tuple(index)])


# ---- Slice -----------------------------------------------------------------------------------
@op_def("Slice")
def _slice_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    begin = [static_bound(b, inputs) for b in attrs["begin"]]
    size = [static_bound(s, inputs) for s in attrs["size"]]
    if x.shape.ndims is not None and len(begin) != x.shape.ndims:
        raise ValueError(f"tf.slice: begin {begin} must have one entry per dimension of "
                         f"{x.name} {x.shape}")
    if len(begin) != len(size):
        raise ValueError(f"tf.slice: begin {begin} and size {size} must have the same length")
    dims = x.shape.as_list() if x.shape.ndims is not None else [None] * len(begin)
    out = []
    for b, s, d in zip(begin, size, dims):
        if (b is not None and (b < 0 or (d is not None and b > d))) or (
                s is not None and (s < -1 or (d is not None and b is not None and b + s > d))):
            raise ValueError(f"tf.slice: begin {begin} / size {size} out of bounds for {x.name} {x.shape}")
        out.append(s if s is not None and s >= 0 else None if d is None or b is None or s is None
                   else d - b)
    return [(x.dtype, TensorShape(out))]


def slice(input_: Any, begin: Any, size: Any,  # noqa: A001 (TF's name)
          name: str | None = None) -> Tensor:
    """``input_[begin[i] : begin[i] + size[i]]`` per dimension; size -1 means "to the end".
    begin and size may be tensors or lists holding tensors (``[0, t]``): out-of-range bounds
    are then an InvalidArgumentError at run time, as in TF."""
    x = convert_to_tensor(input_)
    with get_default_graph().name_scope(name or "Slice") as scope:
        dynamic: list[Tensor] = []
        attrs = {"begin": _bound_refs(begin, dynamic, x.shape.ndims, "begin", "tf.slice"),
                 "size": _bound_refs(size, dynamic, x.shape.ndims, "size", "tf.slice")}
        return apply_op("Slice", [x, *dynamic], attrs, name=scope).outputs[0]


# ---- StridedSlice (tensor[...]) --------------------------------------------------------------
def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_element")


def _spec_of(key: Any, dynamic: list[Tensor] | None = None) -> list[list[Any]]:
    """The graph's form of ``x[key]``. A scalar tensor used as an index or a slice bound (a
    loop counter, ``tf.shape(x)[0] - 1``) goes into ``dynamic`` and the spec holds
    ``["in", k]``: the StridedSlice op's input k + 1."""
    items = key if isinstance(key, tuple) else (key,)
    spec: list[list[Any]] = []

    def ref(value: Any) -> Any:
        if dynamic is None:
            raise TypeError("tensor[...]: this slice's bounds must be Python ints")
        tensor = convert_to_tensor(value)
        if not tensor.dtype.is_integer or tensor.shape.ndims not in (None, 0):
            raise TypeError(f"tensor[...]: a tensor index must be an int32 or int64 scalar, got "
                            f"{tensor.dtype.name} {tensor.shape} ({tensor.name})")
        dynamic.append(tensor)
        return ["in", len(dynamic) - 1]

    for item in items:
        if item is None:
            spec.append(["n"])
        elif item is Ellipsis:
            spec.append(["e"])
        elif isinstance(item, bool):
            raise TypeError("tensor[...]: bool indices are not supported (use tf.boolean_mask "
                            "in TF; zmtf has tf.where)")
        elif isinstance(item, int) or (hasattr(item, "__index__") and not _is_tensor(item)):
            spec.append(["i", int(item)])
        elif _is_tensor(item):
            spec.append(["i", ref(item)])
        elif isinstance(item, builtins.slice):
            parts = [item.start, item.stop, item.step]
            if any(p is not None and not _is_tensor(p) and not hasattr(p, "__index__") for p in parts):
                raise TypeError(f"tensor[...]: slice bounds must be ints or int tensors, got {item}")
            if item.step is not None and not _is_tensor(item.step) and int(item.step) == 0:
                raise ValueError("tensor[...]: slice step cannot be zero")
            spec.append(["s", *[None if p is None else ref(p) if _is_tensor(p) else int(p)
                                for p in parts]])
        else:
            raise TypeError(f"tensor[...]: only ints, slices of ints, tf.newaxis and ... are "
                            f"supported as indices in zmtf, got {type(item).__name__}")
    if sum(1 for s in spec if s[0] == "e") > 1:
        raise ValueError("tensor[...]: an index can only have a single ellipsis ('...')")
    return spec


@op_def("StridedSlice")
def _strided_slice_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, spec = inputs[0], attrs["spec"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    consuming = sum(1 for s in spec if s[0] in ("i", "s"))
    if consuming > len(dims):
        raise ValueError(f"tensor[...]: too many indices ({consuming}) for {x.name} of rank {len(dims)}")
    out: list[int | None] = []
    axis = 0
    for entry in spec:
        kind = entry[0]
        if kind == "n":
            out.append(1)
        elif kind == "e":
            skip = len(dims) - consuming
            out.extend(dims[axis:axis + skip])
            axis += skip
        elif kind == "i":
            d, k = dims[axis], entry[1]
            if d is not None and isinstance(k, int) and not -d <= k < d:
                raise ValueError(f"tensor[...]: index {k} is out of bounds for dimension {axis} "
                                 f"of {x.name} with size {d}")
            axis += 1
        else:
            d = dims[axis]
            dynamic = any(isinstance(p, list) for p in entry[1:])
            out.append(None if d is None or dynamic else len(range(*builtins.slice(*entry[1:]).indices(d))))
            axis += 1
    out.extend(dims[axis:])
    return [(x.dtype, TensorShape(out))]


def getitem(x: Any, key: Any, name: str | None = None) -> Tensor:
    """``x[key]`` for ints, slices (with steps), tf.newaxis and ``...``: numpy's basic
    indexing; indices and slice bounds may be int scalar tensors."""
    dynamic: list[Tensor] = []
    spec = _spec_of(key, dynamic)
    return strided_slice_spec(convert_to_tensor(x), spec, name, dynamic)


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None, name: str | None = None) -> Tensor:
    """TF's ``tf.strided_slice(x, begin, end, strides, masks)``: the same op as ``x[...]``,
    its bounds given per dimension (ints, int vectors, or lists holding int tensors); bit i of
    a mask makes dimension i's entry the full start / end, ``...``, tf.newaxis, or the single
    index ``begin[i]``."""
    x = convert_to_tensor(input_)
    with get_default_graph().name_scope(name or "StridedSlice") as scope:
        dynamic: list[Tensor] = []
        rows = [_bound_refs(v, dynamic, None, what, "tf.strided_slice")
                for v, what in ((begin, "begin"), (end, "end"))]
        steps = [1] * len(rows[0]) if strides is None else \
            _bound_refs(strides, dynamic, len(rows[0]), "strides", "tf.strided_slice")
        if not len(rows[0]) == len(rows[1]) == len(steps):
            raise ValueError(f"tf.strided_slice: begin {rows[0]}, end {rows[1]} and strides {steps} "
                             f"must have the same length")
        if bin(ellipsis_mask & ((1 << len(steps)) - 1)).count("1") > 1:
            raise ValueError("tf.strided_slice: Multiple ellipses in slice spec not allowed")
        masks = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
                 "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
        spec = strided_slice_to_spec(rows[0], rows[1], steps, masks)
        return strided_slice_spec(x, spec, scope, dynamic)


def strided_slice_spec(x: Tensor, spec: list[list[Any]], name: str | None = None,
                       dynamic: Sequence[Tensor] = ()) -> Tensor:
    """A StridedSlice from a spec already in the graph's form (gradients build these); the
    spec's ``["in", k]`` entries read ``dynamic[k]``."""
    return apply_op("StridedSlice", [x, *dynamic], {"spec": spec}, name=name or "strided_slice").outputs[0]


# ---- Gather ----------------------------------------------------------------------------------
@op_def("GatherV2")
def _gather_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    params, indices = inputs
    if not indices.dtype.is_integer:
        raise TypeError(f"tf.gather: indices must be int32 or int64, got {indices.dtype.name}")
    if params.shape.ndims is None or indices.shape.ndims is None:
        return [(params.dtype, TensorShape(None))]
    dims = params.shape.as_list()
    axis = attrs["axis"] % len(dims) if dims else 0
    return [(params.dtype, TensorShape(dims[:axis] + indices.shape.as_list() + dims[axis + 1:]))]


def gather(params: Any, indices: Any, axis: int = 0, name: str | None = None) -> Tensor:
    """Slices of ``params`` along ``axis`` at ``indices`` (an index out of range is an
    InvalidArgumentError at run time, as in TF on CPU)."""
    p = convert_to_tensor(params)
    i = convert_to_tensor(indices)
    if p.shape.ndims == 0:
        raise ValueError(f"tf.gather: params {p.name} must have rank >= 1")
    return apply_op("GatherV2", [p, i], {"axis": int(axis)}, name=name).outputs[0]


def scatter_rows(values: Tensor, indices: Tensor, dense_shape: Tensor) -> Tensor:
    """Zeros of ``dense_shape`` plus ``values[i]`` added at row ``indices[i]``: a dense
    IndexedSlices (repeated indices add up)."""
    static = None
    if dense_shape.op.type == "Const":
        static = [int(d) for d in dense_shape.op.attrs["value"].reshape(-1)]
    return apply_op("GatherGrad", [values, indices, dense_shape], {"axis": 0, "_static_shape": static},
                    name="densify").outputs[0]


def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: int | None = None) -> Tensor:
    """The entries of ``tensor`` where the bool ``mask`` (shaped like its leading dimensions)
    holds, in row-major order: ``tensor[mask]`` in numpy. A gather of the true positions, so
    its gradient is a gather's (sparse along axis 0)."""
    if axis not in (None, 0):
        raise ValueError(f"tf.boolean_mask: zmtf supports axis=0 only, got axis={axis}")
    x, m = convert_to_tensor(tensor), convert_to_tensor(mask)
    if m.dtype != dtypes.bool_:
        raise TypeError(f"tf.boolean_mask: mask must be bool, got {m.dtype.name} ({m.name})")
    k = m.shape.ndims
    if k is None or k == 0:
        raise ValueError(f"tf.boolean_mask: the mask's rank must be known and at least 1 ({m.name})")
    if x.shape.ndims is not None and x.shape.ndims < k:
        raise ValueError(f"tf.boolean_mask: mask of rank {k} for a tensor of rank {x.shape.ndims}")
    with get_default_graph().name_scope(name):
        if k > 1:
            rest = x.shape.as_list()[k:] if x.shape.ndims is not None else None
            if rest is None or None in rest:
                raise ValueError(f"tf.boolean_mask: with a mask of rank {k}, the tensor's dimensions "
                                 f"after the first {k} must be known, got {x.shape}")
            x = array_ops.reshape(x, [-1] + rest)
            m = array_ops.reshape(m, [-1])
        return gather(x, array_ops.reshape(where(m), [-1]))


# ---- the gradient helpers: scatter a gradient into zeros of the input's shape ----------------
@op_def("SliceGrad", "StridedSliceGrad", "GatherGrad", "TileGrad", "MirrorPadGrad")
def _scatter_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    grad = inputs[0]
    known = attrs.get("_static_shape")
    return [(grad.dtype, TensorShape(known) if known is not None else TensorShape(None))]


Tensor.__getitem__ = lambda self, key: getitem(self, key)  # type: ignore[method-assign]


# ---- split / unstack (static slices), tile, pad --------------------------------------------
def _axis_size(x: Tensor, axis: int, what: str) -> tuple[int, int]:
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"{what}: the rank of {x.name} must be known")
    axis = axis % rank
    size = x.shape.as_list()[axis]
    return axis, size


def _along_axis(axis: int, item: list) -> list[list]:
    return [["s", None, None, None]] * axis + [item]


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    """The slices of ``value`` along ``axis`` (its size there must be known, or ``num`` given)."""
    x = convert_to_tensor(value)
    axis, size = _axis_size(x, axis, "tf.unstack")
    count = size if size is not None else num
    if count is None:
        raise ValueError(f"tf.unstack: cannot infer num from shape {x.shape}; pass num=")
    return [strided_slice_spec(x, _along_axis(axis, ["i", i]), name=name) for i in range(count)]


def split(value: Any, num_or_size_splits: Any, axis: int = 0, num: int | None = None,
          name: str = "split") -> list[Tensor]:
    """``value`` cut along ``axis`` into equal pieces (an int) or pieces of the given sizes
    (a list; one entry may be -1 for the rest)."""
    x = convert_to_tensor(value)
    axis, size = _axis_size(x, axis, "tf.split")
    if isinstance(num_or_size_splits, int):
        pieces = num_or_size_splits
        if size is None or pieces <= 0 or size % pieces:
            raise ValueError(f"tf.split: dimension {axis} of {x.name} ({size}) must be evenly "
                             f"divisible by {pieces}")
        sizes = [size // pieces] * pieces
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if sizes.count(-1) > 1:
            raise ValueError("tf.split: at most one size may be -1")
        if -1 in sizes:
            if size is None:
                raise ValueError(f"tf.split: a -1 size needs dimension {axis} of {x.name} known")
            sizes[sizes.index(-1)] = size - (sum(sizes) + 1)
        if size is not None and sum(sizes) != size:
            raise ValueError(f"tf.split: sizes {sizes} do not add up to dimension {axis} ({size})")
    if len(sizes) == 1:
        return [strided_slice_spec(x, _along_axis(axis, ["s", 0, sizes[0], None]), name=name)]
    # one node with a concat for its gradient, as TF's SplitV: an LSTM cell's gates cost one
    # node forward and one back, not a slice each and an AddN of zero-padded slice gradients
    attrs = {"sizes": sizes, "axis": axis, "num_split": len(sizes)}
    return list(apply_op("SplitV", [x], attrs, name=name).outputs)


@op_def("SplitV")
def _split_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))] * len(attrs["sizes"])
    dims = x.shape.as_list()
    axis = attrs["axis"] % len(dims)   # a graph from TF may count from the end
    return [(x.dtype, TensorShape(dims[:axis] + [n] + dims[axis + 1:])) for n in attrs["sizes"]]


@op_def("Tile")
def _tile_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, multiples = inputs[0], attrs["multiples"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    if len(multiples) != len(dims):
        raise ValueError(f"tf.tile: multiples {multiples} must have one entry per dimension of "
                         f"{x.name} {x.shape}")
    return [(x.dtype, TensorShape([None if d is None else d * m for d, m in zip(dims, multiples)]))]


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002
    if _is_tensor(multiples) or any(_is_tensor(m) for m in multiples):
        return _tile_dynamic(convert_to_tensor(input), multiples, name)
    values = [int(m) for m in multiples]
    if any(m < 0 for m in values):
        raise ValueError(f"tf.tile: multiples must be >= 0, got {values}")
    return apply_op("Tile", [convert_to_tensor(input)], {"multiples": values}, name=name).outputs[0]


def _tile_dynamic(x: Tensor, multiples: Any, name: str | None) -> Tensor:
    """tf.tile with multiples known only at run time, e.g. ``[tf.shape(y)[0], 1]``: x with a
    unit axis before each of its axes, broadcast to the multiples there, then merged; the
    same values and gradient as a Tile."""
    from zmtf.ops import math_ops

    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"tf.tile with tensor multiples needs the rank of {x.name} known")
    with get_default_graph().name_scope(name or "Tile"):
        m = math_ops.cast(convert_to_tensor(multiples), dtypes.int32)
        dims = array_ops.shape(x)
        spread = array_ops.reshape(x, array_ops.stack([v for d in range(rank) for v in (1, dims[d])]))
        target = array_ops.stack([v for d in range(rank) for v in (m[d], dims[d])])
        return array_ops.reshape(array_ops.broadcast_to(spread, target), m * dims)


_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


@op_def("Pad")
def _pad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    pairs = [[static_bound(v, inputs) for v in pair] for pair in attrs["paddings"]]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    if len(pairs) != len(dims):
        raise ValueError(f"tf.pad: paddings {pairs} must have one [before, after] pair per "
                         f"dimension of {x.name} {x.shape}")
    return [(x.dtype, TensorShape([None if None in (d, a, b) else d + a + b
                                   for d, (a, b) in zip(dims, pairs)]))]


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None,
        constant_values: Any = 0) -> Tensor:
    """``tensor`` with ``paddings[i] = [before, after]`` entries added along dimension i:
    ``constant_values``, or the mirrored entries (REFLECT, SYMMETRIC). paddings may be an int
    tensor of shape [rank, 2] or a list holding int tensors (``[[0, n - tf.shape(x)[0]], [0, 0]]``)."""
    if mode.upper() not in _PAD_MODES:
        raise ValueError(f"tf.pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    x = convert_to_tensor(tensor)
    default = "MirrorPad" if mode.upper() != "CONSTANT" else "PadV2" if constant_values != 0 else "Pad"
    with get_default_graph().name_scope(name or default) as scope:
        dynamic: list[Tensor] = []
        pairs = _bound_refs(paddings, dynamic, x.shape.ndims, "paddings", "tf.pad", pairs=True)
        if any(isinstance(v, int) and v < 0 for pair in pairs for v in pair):
            raise ValueError(f"tf.pad: paddings must be >= 0, got {pairs}")
        attrs = {"paddings": pairs, "mode": mode.upper(), "constant_values": float(constant_values)}
        return apply_op("Pad", [x, *dynamic], attrs, name=scope).outputs[0]

# IndexedSlices (framework/) densifies with this; it may not import this module
upper_layers.register("scatter_rows", scatter_rows)
