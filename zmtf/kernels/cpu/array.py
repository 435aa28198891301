"""Array kernels: Identity, Const, Reshape, Shape/Size/Rank, Transpose, Cast, Fill, *Like,
ExpandDims, Squeeze, ConcatV2, Pack, BroadcastTo, NoOp.

Shape-only ops (Reshape, ExpandDims, Squeeze) return views of their input, which is safe
because kernels never mutate inputs. Ops documented as copies (Transpose, BroadcastTo)
return new C-contiguous arrays.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, first_input_or_attr, int_list, normalize_axis
from zmtf.kernels.cpu.common import check_output_size, dtype_attr, quiet_fp, shape_input, shape_str
from zmtf.kernels.cpu.state import VariableRef
from zmtf.kernels.registry import register

_print_log = logging.getLogger("zmtf.print")


@register("NoOp")
def no_op(ctx: Any, inputs: list, attrs: dict) -> list:
    """NoOp(): nothing; used for control dependencies."""
    return []


@register("Const")
def const(ctx: Any, inputs: list, attrs: dict) -> list:
    """Const(): ``attrs["value"]`` itself, not a copy.

    The same array is returned on every run and shared by all consumers: it is read-only
    by contract (kernels never mutate inputs), and the graph should store it with
    ``writeable=False`` so a bug cannot corrupt it silently.
    """
    return [attrs["value"]]


const.constant_output = True  # type: ignore[attr-defined] # the executor evaluates it once per plan


@register("Print")
def print_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Print(input, data...): input itself; logs the message and the data (first_n times)."""
    count = attrs.setdefault("_printed", [0])
    if attrs["first_n"] < 0 or count[0] < attrs["first_n"]:
        count[0] += 1
        shown = " ".join(np.array2string(np.asarray(d), threshold=attrs["summarize"],
                                         edgeitems=attrs["summarize"]) for d in inputs[1:])
        _print_log.info("%s%s", attrs["message"], shown)
    return [inputs[0]]


@register("Assert")
def assert_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Assert(condition, data...): nothing, or InvalidArgumentError with the data."""
    if np.all(inputs[0]):
        return []
    values = iter(inputs[1:])
    shown = []
    for text in attrs["texts"]:
        if text is not None:
            shown.append(text)
        else:
            shown.append(np.array2string(np.asarray(next(values)), threshold=attrs["summarize"],
                                         edgeitems=attrs["summarize"]))
    raise InvalidArgumentError(f"assertion failed: [{'] ['.join(shown)}]")


@register("Range", dtypes=("int32", "int64", "float32", "float64"))
def range_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Range(start, limit, delta): TF's checks, then np.arange in the op's dtype."""
    start, limit, delta = (np.asarray(v).item() for v in inputs)
    if delta == 0:
        raise InvalidArgumentError(f"Requires delta != 0: {delta}")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        relation = "start <= limit when delta > 0" if delta > 0 else "start >= limit when delta < 0"
        raise InvalidArgumentError(f"Requires {relation}: {start}/{limit}")
    count = math.ceil((limit - start) / delta) if math.isfinite((limit - start) / delta) else -1
    if count < 0:
        raise InvalidArgumentError(f"Requires finite start, limit and delta: {start}/{limit}/{delta} "
                                   f"(node '{attrs['_node_name']}')")
    dtype = dtype_attr(attrs, "dtype", attrs["_node_name"], ("int32", "int64", "float32", "float64"))
    check_output_size([count], dtype, attrs["_node_name"])
    return [np.arange(start, limit, delta).astype(dtype, copy=False)]


@register("CheckNumerics", dtypes=("float16", "float32", "float64"))
def check_numerics(ctx: Any, inputs: list, attrs: dict) -> list:
    """CheckNumerics(x): x itself, unless it holds a NaN or an Inf."""
    x = np.asarray(inputs[0])
    if not np.isfinite(x).all():
        kind = "NaN" if np.isnan(x).any() else "Inf"
        raise InvalidArgumentError(f"{attrs['message']} : Tensor had {kind} values")
    return [inputs[0]]


@register("Identity")
@register("_ReadVariableRef")
@register("StopGradient")
@register("Snapshot")
def identity(ctx: Any, inputs: list, attrs: dict) -> list:
    """Identity(x): x itself; for a VariableRef, the variable's current stored array.

    The read is not copied (TF1 ref-read semantics): the runtime copies a fetched value
    that aliases the variable store (runtime.executor.fetched).
    """
    x = inputs[0]
    if isinstance(x, VariableRef):
        return [x.read()]  # aliases storage, as TF1 ref reads; fetches copy (executor.fetched)
    return [x]


@register("IdentityN")
def identity_n(ctx: Any, inputs: list, attrs: dict) -> list:
    """IdentityN(x, y, ...): each input itself (the node tf.custom_gradient hangs its gradient on)."""
    return [x.read() if isinstance(x, VariableRef) else x for x in inputs]


@register("Reshape", dtypes=ALL)
def reshape(ctx: Any, inputs: list, attrs: dict) -> list:
    """Reshape(x, shape): one dimension may be -1 and is inferred."""
    x, shape_arr = inputs
    node_name = attrs["_node_name"]
    dims = int_list(shape_arr, "shape", node_name)
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise InvalidArgumentError(
            f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]} "
            f"(node '{node_name}')"
        )
    if any(d < -1 for d in dims):
        raise InvalidArgumentError(
            f"Size {dims.index(min(dims))} must be non-negative, not {min(dims)} "
            f"(node '{node_name}')"
        )
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0:
            raise InvalidArgumentError(
                "Reshape cannot infer the missing input size for an empty tensor unless all "
                f"specified input sizes are non-zero (node '{node_name}')"
            )
        if x.size % known:
            raise InvalidArgumentError(
                f"Input to reshape is a tensor with {x.size} values, but the requested shape "
                f"requires a multiple of {known} (node '{node_name}')"
            )
        dims[unknown[0]] = x.size // known
    elif known != x.size:
        raise InvalidArgumentError(
            f"Input to reshape is a tensor with {x.size} values, but the requested shape has "
            f"{known} (node '{node_name}')"
        )
    return [x.reshape(dims)]


@register("Shape", dtypes=ALL)
def shape(ctx: Any, inputs: list, attrs: dict) -> list:
    """Shape(x) -> 1-D ``out_type`` (int32 by default)."""
    return [np.asarray(inputs[0].shape, dtype=_index_type(attrs))]


@register("Size", dtypes=ALL)
def size(ctx: Any, inputs: list, attrs: dict) -> list:
    """Size(x) -> 0-d ``out_type`` (int32 by default)."""
    return [np.asarray(inputs[0].size, dtype=_index_type(attrs))]


def _index_type(attrs: dict) -> np.dtype:
    return dtype_attr(attrs, "out_type", attrs["_node_name"], ("int32", "int64"),
                      attrs.get("out_type") or "int32")


@register("Rank", dtypes=ALL)
def rank(ctx: Any, inputs: list, attrs: dict) -> list:
    """Rank(x) -> 0-d int32."""
    return [np.asarray(inputs[0].ndim, dtype=np.int32)]


@register("Transpose", dtypes=ALL)
def transpose(ctx: Any, inputs: list, attrs: dict) -> list:
    """Transpose(x) by ``perm`` (attr or input 1; None reverses the axes); a contiguous copy."""
    x = inputs[0]
    perm = first_input_or_attr(inputs, 1, attrs, "perm")
    if perm is None:
        perm_list = list(range(x.ndim))[::-1]
    else:
        perm_list = int_list(perm, "perm", attrs["_node_name"])
        if sorted(p % x.ndim if x.ndim else p for p in perm_list) != list(range(x.ndim)):
            raise InvalidArgumentError(
                f"Transpose (node '{attrs['_node_name']}'): perm {perm_list} is not a "
                f"permutation of the {x.ndim} dimensions of shape {shape_str(x.shape)}"
            )
    return [np.ascontiguousarray(np.transpose(x, perm_list))]


@register("Cast", dtypes=ALL)
def cast(ctx: Any, inputs: list, attrs: dict) -> list:
    """Cast(x) to ``DstT``: float -> int truncates, nonzero -> True; same dtype returns x."""
    x = inputs[0]
    target = np.dtype(as_dtype(attrs["DstT"]).name)
    if x.dtype == target:
        return [x]
    with quiet_fp():  # NaN/inf -> int is undefined in TF too; numpy would warn
        return [x.astype(target)]


@register("Fill", dtypes=["int32", "int64"])
def fill(ctx: Any, inputs: list, attrs: dict) -> list:
    """Fill(dims, value): an array of shape ``dims`` filled with the 0-d ``value``."""
    dims_arr, value = inputs
    if np.ndim(value) != 0:
        raise InvalidArgumentError(
            f"value must be a scalar, got shape {shape_str(np.shape(value))} "
            f"(node '{attrs['_node_name']}')"
        )
    value = np.asarray(value)
    dims = shape_input(dims_arr, attrs["_node_name"], value.dtype)
    return [np.full(dims, value, dtype=value.dtype)]


@register("ZerosLike", dtypes=ALL)
def zeros_like(ctx: Any, inputs: list, attrs: dict) -> list:
    """ZerosLike(x): zeros of x's shape and dtype."""
    return [np.zeros_like(inputs[0])]


@register("OnesLike", dtypes=ALL)
def ones_like(ctx: Any, inputs: list, attrs: dict) -> list:
    """OnesLike(x): ones of x's shape and dtype."""
    return [np.ones_like(inputs[0])]


@register("ExpandDims", dtypes=ALL)
def expand_dims(ctx: Any, inputs: list, attrs: dict) -> list:
    """ExpandDims(x) at ``axis`` (attr or input 1), in [-rank-1, rank]."""
    x = inputs[0]
    axis = int(np.asarray(first_input_or_attr(inputs, 1, attrs, "axis", 0)))
    axis = normalize_axis(axis, x.ndim + 1, attrs["_node_name"])
    return [np.expand_dims(x, axis)]


@register("Squeeze", dtypes=ALL)
def squeeze(ctx: Any, inputs: list, attrs: dict) -> list:
    """Squeeze(x): drop the size-1 dims in ``squeeze_dims`` (empty/None: all size-1 dims)."""
    x = inputs[0]
    node_name = attrs["_node_name"]
    dims = attrs.get("squeeze_dims") or attrs.get("axis")
    if not dims:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = {normalize_axis(int(a), x.ndim, node_name) for a in dims}
    for a in sorted(axes):
        if x.shape[a] != 1:
            raise InvalidArgumentError(
                f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]} "
                f"(node '{node_name}', input shape {shape_str(x.shape)})"
            )
    return [x.reshape([d for i, d in enumerate(x.shape) if i not in axes])]


def _check_same_dtype(values: list, op_type: str, node_name: str) -> None:
    for i, v in enumerate(values[1:], start=1):
        if v.dtype != values[0].dtype:
            raise InvalidArgumentError(
                f"{op_type} (node '{node_name}'): values[{i}] has dtype {v.dtype.name}, "
                f"values[0] has {values[0].dtype.name}; all inputs must have the same dtype"
            )


@register("ConcatV2", dtypes=ALL)
def concat_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    """ConcatV2(x0, ..., xn) along ``axis`` (attr; without it, the last input as in TF)."""
    node_name = attrs["_node_name"]
    if "axis" in attrs:
        values, axis = inputs, int(attrs["axis"])
    else:
        values, axis = inputs[:-1], int(np.asarray(inputs[-1]))
    first = values[0]
    if first.ndim and -first.ndim <= axis < first.ndim and all(v.dtype == first.dtype for v in values):
        try:   # the common case first: numpy checks the shapes as it goes (~2 us less a call)
            return [np.concatenate(values, axis=axis)]
        except ValueError:
            pass   # the checks below say what does not fit, as TF words it
    _check_same_dtype(values, "ConcatV2", node_name)
    if first.ndim == 0:
        raise InvalidArgumentError(
            f"Can't concatenate scalars (use tf.stack instead) (node '{node_name}')"
        )
    axis = normalize_axis(axis, first.ndim, node_name)
    for i, v in enumerate(values[1:], start=1):
        if v.ndim != first.ndim or any(
            a != b for d, (a, b) in enumerate(zip(v.shape, first.shape)) if d != axis
        ):
            raise InvalidArgumentError(
                "ConcatOp : Dimensions of inputs should match: "
                f"shape[0] = {shape_str(first.shape)} vs. shape[{i}] = {shape_str(v.shape)} "
                f"(node '{node_name}', axis {axis})"
            )
    return [np.concatenate(values, axis=axis)]


@register("Pack", dtypes=ALL)
def pack(ctx: Any, inputs: list, attrs: dict) -> list:
    """Pack(x0, ..., xn) along a new ``axis`` (tf.stack)."""
    node_name = attrs["_node_name"]
    _check_same_dtype(inputs, "Pack", node_name)
    first = inputs[0]
    for i, v in enumerate(inputs[1:], start=1):
        if v.shape != first.shape:
            raise InvalidArgumentError(
                f"Shapes of all inputs must match: values[0].shape = {shape_str(first.shape)} != "
                f"values[{i}].shape = {shape_str(v.shape)} (node '{node_name}')"
            )
    axis = normalize_axis(int(attrs.get("axis", 0)), first.ndim + 1, node_name)
    return [np.stack(inputs, axis=axis)]


@register("BroadcastTo", dtypes=ALL)
def broadcast_to(ctx: Any, inputs: list, attrs: dict) -> list:
    """BroadcastTo(x, shape): x broadcast numpy-style to ``shape``, as a contiguous copy."""
    x, shape_arr = inputs
    target = shape_input(shape_arr, attrs["_node_name"], x.dtype)
    try:
        view = np.broadcast_to(x, target)
    except ValueError:
        raise InvalidArgumentError(
            f"Incompatible shapes: {shape_str(x.shape)} vs. {shape_str(target)} "
            f"(node '{attrs['_node_name']}': BroadcastTo)"
        ) from None
    return [np.array(view, order="C")]


@register("Roll", dtypes=ALL)
def roll(ctx: Any, inputs: list, attrs: dict) -> list:
    """Roll(input, shift, axis): np.roll, after TF's checks (shifts on one axis add up)."""
    x, shift, axis = inputs
    node = attrs["_node_name"]
    if np.ndim(shift) > 1 or np.shape(shift) != np.shape(axis):
        raise InvalidArgumentError(f"shift and axis must be scalars or vectors of one shape, got "
                                   f"{shape_str(np.shape(shift))} and {shape_str(np.shape(axis))} "
                                   f"(node '{node}')")
    if x.ndim == 0:
        raise InvalidArgumentError(f"input must be at least 1-D, got a scalar (node '{node}')")
    axes = [normalize_axis(a, x.ndim, node) for a in int_list(axis, "axis", node)]
    return [np.ascontiguousarray(np.roll(x, int_list(shift, "shift", node), axes))]
