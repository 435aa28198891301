"""Array kernels on the GPU: NoOp, Const, Identity/Snapshot, Reshape, Shape, Cast,
ZerosLike, OnesLike, Fill, BroadcastTo.

Reshape returns a view of its (contiguous) input, and Identity the input itself, as on
CPU: kernels never mutate their inputs. Shape-like inputs (Reshape's shape, Fill's dims,
BroadcastTo's shape) are a few ints and are read on the host even when they live on the
device; Shape's output is an int32 (``out_type``) device array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu import array as cpu_array
from zmtf.kernels.cpu.common import shape_input, shape_str
from zmtf.kernels.cpu.state import VariableRef
from zmtf.kernels.cuda import _device
from zmtf.kernels.cuda._plan import broadcast_plan
from zmtf.kernels.registry import register

#: dtypes of the kernels that move data without arithmetic (float16 for float16 variables)
DATA: tuple[str, ...] = ("float16", "float32", "float64", "int32", "int64", "bool")


@cuda.jit
def fill_kernel(out, value):  # type: ignore[no-untyped-def]
    """out[:] = value (a scalar argument of out's dtype)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


@cuda.jit
def fill_from_kernel(out, source):  # type: ignore[no-untyped-def]
    """out[:] = source[0] (a one-element device array: the value never visits the host)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = source[0]


@cuda.jit
def cast_kernel(x, out):  # type: ignore[no-untyped-def]
    """out[:] = x[:] converted to out's dtype (float -> int truncates, nonzero -> True)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[i]


@cuda.jit
def nonzero_kernel(x, out):  # type: ignore[no-untyped-def]
    """out[:] = x[:] != 0 (NaN -> True). NOTE: cast_kernel's float16 -> bool emits IR
    that NVVM rejects ("floating point constant invalid for type"); a compare does not."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[i] != 0


@cuda.jit
def gather_kernel(x, out, dims, x_strides):  # type: ignore[no-untyped-def]
    """out[i] = x[offset of i]: a broadcast copy (see _plan.broadcast_plan)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        rest = i
        xi = 0
        for d in range(dims.size - 1, -1, -1):
            q = rest // dims[d]
            xi += (rest - q * dims[d]) * x_strides[d]
            rest = q
        out[i] = x[xi]


def fill_with(ctx: Any, out: Any, value: Any) -> Any:
    """Fill the device array ``out`` with the host scalar ``value``; returns ``out``."""
    _device.launch(ctx, fill_kernel, out.size, _device.flat(out), np.dtype(out.dtype).type(value))
    return out


@register("NoOp", "GPU")
def no_op(ctx: Any, inputs: list, attrs: dict) -> list:
    """NoOp(): nothing; used for control dependencies."""
    return []


@register("Const", "GPU", DATA)
def const(ctx: Any, inputs: list, attrs: dict) -> list:
    """Const(): ``attrs["value"]`` copied to the device once per (node, context).

    The copy is cached in ``ctx.gpu_const_cache`` (a dict) when the context has one, keyed
    by node name and the value's identity (the entry keeps the value alive, so the id
    cannot be reused); without a cache each call copies. Consumers share the device array
    and must not mutate it (kernels never mutate inputs).
    """
    value = attrs["value"]
    cache = getattr(ctx, "gpu_const_cache", None)
    if not isinstance(cache, dict):
        return [_device.to_device(ctx, value)]
    key = (attrs["_node_name"], id(value))
    entry = cache.get(key)
    if entry is None or entry[0] is not value:
        entry = (value, _device.to_device(ctx, value))
        cache[key] = entry  # NOTE: a race here only copies twice; both copies are equal
        if np.size(value) <= 64:   # an axis list or a shape: to_host reads it with no wait
            cache[("host", id(entry[1]))] = np.asarray(value)
    return [entry[1]]


@register("Identity", "GPU", DATA)
@register("_ReadVariableRef", "GPU", DATA)
@register("StopGradient", "GPU", DATA)
@register("Snapshot", "GPU", DATA)
def identity(ctx: Any, inputs: list, attrs: dict) -> list:
    """Identity(x): x itself; for a VariableRef, the stored device array (no copy, TF1 ref
    read). A variable holding a host array (restored on the host) is copied to the device."""
    x = inputs[0]
    if isinstance(x, VariableRef):
        return [_device.on_device(ctx, x.read())]
    return [x]


@register("Reshape", "GPU", DATA)
def reshape(ctx: Any, inputs: list, attrs: dict) -> list:
    """Reshape(x, shape): a view of x; one dimension of ``shape`` may be -1."""
    x, shape_arr = inputs
    # The CPU kernel validates, infers -1 and calls x.reshape(dims): device arrays have it.
    return cpu_array.reshape(ctx, [x, _device.to_host(ctx, shape_arr)], attrs)


@register("Shape", "GPU", DATA)
def shape(ctx: Any, inputs: list, attrs: dict) -> list:
    """Shape(x) -> 1-D ``out_type`` (int32 by default) device array, shared by every Shape
    of that value in the context (its consumers read it back with no device read)."""
    dtype = np.dtype(as_dtype(attrs.get("out_type") or "int32").name)
    return [_device.small_constant(ctx, tuple(inputs[0].shape), dtype)]


@register("Cast", "GPU", DATA)
def cast(ctx: Any, inputs: list, attrs: dict) -> list:
    """Cast(x) to ``DstT``: float -> int truncates, nonzero -> True; same dtype returns x."""
    x = inputs[0]
    target = np.dtype(as_dtype(attrs["DstT"]).name)
    if x.dtype == target:
        return [x]
    out = _device.empty(ctx, x.shape, target)
    kernel = nonzero_kernel if target == np.bool_ else cast_kernel
    _device.launch(ctx, kernel, out.size, _device.flat(x), _device.flat(out))
    return [out]


@register("ZerosLike", "GPU", DATA)
def zeros_like(ctx: Any, inputs: list, attrs: dict) -> list:
    """ZerosLike(x): zeros of x's shape and dtype."""
    x = inputs[0]
    return [fill_with(ctx, _device.empty(ctx, x.shape, x.dtype), 0)]


@register("OnesLike", "GPU", DATA)
def ones_like(ctx: Any, inputs: list, attrs: dict) -> list:
    """OnesLike(x): ones of x's shape and dtype."""
    x = inputs[0]
    return [fill_with(ctx, _device.empty(ctx, x.shape, x.dtype), 1)]


@register("Fill", "GPU", ["int32", "int64"])
def fill(ctx: Any, inputs: list, attrs: dict) -> list:
    """Fill(dims, value): an array of shape ``dims`` filled with the 0-d ``value``."""
    dims_arr, value = inputs
    node_name = attrs["_node_name"]
    if value.ndim != 0:
        raise InvalidArgumentError(
            f"value must be a scalar, got shape {shape_str(value.shape)} (node '{node_name}')"
        )
    dims = shape_input(_device.to_host(ctx, dims_arr), node_name)
    out = _device.empty(ctx, dims, value.dtype)
    source = _device.scalar_view(value, ctx, f"value of node '{node_name}'")
    _device.launch(ctx, fill_from_kernel, out.size, _device.flat(out), source)
    return [out]


@register("BroadcastTo", "GPU", DATA)
def broadcast_to(ctx: Any, inputs: list, attrs: dict) -> list:
    """BroadcastTo(x, shape): x broadcast numpy-style to ``shape``, as a new array."""
    x, shape_arr = inputs
    target = shape_input(_device.to_host(ctx, shape_arr), attrs["_node_name"])
    try:
        plan = broadcast_plan([x.shape], target)
    except ValueError:
        raise InvalidArgumentError(
            f"Incompatible shapes: {shape_str(x.shape)} vs. {shape_str(target)} "
            f"(node '{attrs['_node_name']}': BroadcastTo)"
        ) from None
    out = _device.empty(ctx, target, x.dtype)
    if out.size:
        dims, strides = (plan.dims, plan.strides[0]) if plan.dims else ((1,), (0,))
        _device.launch(
            ctx, gather_kernel, out.size, _device.flat(x), _device.flat(out),
            _device.index_array(ctx, dims), _device.index_array(ctx, strides),
        )
    return [out]
