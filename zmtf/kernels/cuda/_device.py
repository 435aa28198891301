"""The host side of the GPU kernels: allocation, streams, host<->device moves, launches.

This module defines no kernel on purpose. The simulator runs a kernel by swapping, in the
kernel's module, every global that *is* ``numba.cuda`` for a fake module; host code in the
same module running meanwhile on another thread would see the fake (no ``device_array``).
Host helpers live here, where nothing is ever swapped.

Conventions every GPU kernel follows:
* inputs are device arrays (numba ``DeviceNDArray`` or the simulator's ``FakeCUDAArray``),
  C-contiguous: every kernel output is, and Reshape returns views of contiguous arrays;
* outputs come from ``empty`` (the runtime's per-GPU budget when the context has one);
* launches and copies go on ``stream(ctx)``; kernels flatten arrays and grid-stride loop.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
from numba import config
from numba import cuda

from zmtf.framework.errors import InternalError, InvalidArgumentError

#: Running under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): every GPU thread is a
#: Python thread, so launches use few threads and loop (TOOLCHAIN.md section 2).
SIMULATOR: bool = bool(config.ENABLE_CUDASIM)

#: Threads per block for 1-D kernels, and the most blocks one launch gets (the kernels
#: grid-stride, so any count is correct; 2048 x 256 fills an H100 twice over).
_THREADS = 8 if SIMULATOR else 256
_MAX_BLOCKS = 1 if SIMULATOR else 2048


def stream(ctx: Any) -> Any:
    """The context's CUDA stream, or 0 (the default stream) when it has none."""
    value = getattr(ctx, "gpu_stream", None)
    return 0 if value is None else value


def empty(ctx: Any, shape: Any, dtype: Any) -> Any:
    """An uninitialized device array, from the runtime's GPU budget when the context has one
    (which raises ResourceExhaustedError past the budget)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    allocate = getattr(ctx, "gpu_empty", None)
    if allocate is not None:
        return allocate(shape, dtype)
    return cuda.device_array(shape, dtype, stream=stream(ctx))


def is_device_array(value: Any) -> bool:
    """A numba device array (real or simulated), as opposed to a host ndarray."""
    return not isinstance(value, np.ndarray) and hasattr(value, "copy_to_host")


def to_device(ctx: Any, host: Any, dtype: Any = None) -> Any:
    """A new device array holding a copy of the host array ``host``."""
    host = np.asarray(host, dtype=dtype, order="C")  # NOTE: not ascontiguousarray: 0-d stays 0-d
    device = empty(ctx, host.shape, host.dtype)
    if host.size:
        device.copy_to_device(host, stream=stream(ctx))
    return device


def on_device(ctx: Any, value: Any) -> Any:
    """``value`` itself when it is a device array, else a device copy of it."""
    return value if is_device_array(value) else to_device(ctx, value)


def copy(ctx: Any, value: Any) -> Any:
    """A new device array with the contents of ``value`` (a device or host array)."""
    if not is_device_array(value):
        return to_device(ctx, value)
    out = empty(ctx, value.shape, value.dtype)
    if value.size:
        out.copy_to_device(value, stream=stream(ctx))
    return out


def to_host(ctx: Any, value: Any) -> np.ndarray:
    """A small input (a shape, an axis list) on the host; for device arrays this copies and
    waits. Only for values of a few elements: kernels never pull whole tensors back."""
    if not is_device_array(value):
        return np.asarray(value)
    cache = getattr(ctx, "gpu_const_cache", None)
    known = cache.get(("host", id(value))) if isinstance(cache, dict) else None
    if known is not None:
        return known
    host = value.copy_to_host(stream=stream(ctx))
    if stream(ctx):
        stream(ctx).synchronize()
    return np.asarray(host)


#: Most small constants one context keeps (a graph has a bounded set of shapes; this
#: bounds a program that makes new shapes forever).
_CACHE_LIMIT = 4096


def small_constant(ctx: Any, values: Any, dtype: Any) -> Any:
    """A small read-only device array (a shape, strides, an index list) of ``values``.

    Cached in ``ctx.gpu_const_cache`` per GPU (a GPU's thread has its own stream) with its
    host copy, since a step asks for the same few every time: a device allocation plus a
    copy costs tens of microseconds, and ``to_host`` of a cached one needs no device read
    (which would wait for the GPU). Consumers never mutate inputs, so sharing is safe.
    """
    host = np.asarray(values, dtype=dtype)
    cache = getattr(ctx, "gpu_const_cache", None)
    if not isinstance(cache, dict):
        return to_device(ctx, host)
    key = ("small", id(stream(ctx)), host.dtype.str, host.shape, host.tobytes())
    device = cache.get(key)
    if device is None:
        device = to_device(ctx, host)
        if len(cache) < _CACHE_LIMIT:   # NOTE: a race here only copies twice; both are equal
            cache[key] = device
            cache[("host", id(device))] = host
    return device


def index_array(ctx: Any, values: Any) -> Any:
    """A small int64 device array (shapes, strides) for a kernel's index arithmetic."""
    return small_constant(ctx, np.asarray(values, dtype=np.int64).reshape(-1), np.int64)


def flat(value: Any) -> Any:
    """A 1-D view of a C-contiguous device array (a 0-d array becomes shape (1,))."""
    if isinstance(value, np.ndarray) or not hasattr(value, "is_c_contiguous"):
        raise InternalError(
            f"a GPU kernel got a host value ({type(value).__name__}) where it needs a device "
            f"array; the runtime must copy inputs of GPU nodes to the device"
        )
    if value.ndim != 1 and not value.is_c_contiguous():
        raise InternalError(
            f"GPU kernels take C-contiguous device arrays; got one of shape "
            f"{tuple(value.shape)} with strides {tuple(value.strides)}. This is a bug in the "
            f"kernel that produced it: GPU outputs must be contiguous"
        )
    return value if value.ndim == 1 else value.reshape(value.size)


def scalar_view(value: Any, ctx: Any, what: str, dtype: Any = None) -> Any:
    """A 0-d or 1-element input as a 1-element device array a kernel reads as ``v[0]``; a
    host value is copied over (it is one element). ``what`` names it in errors."""
    if value.size != 1:
        raise InvalidArgumentError(f"{what} must be a scalar, got shape {list(value.shape)}")
    if not is_device_array(value):
        return to_device(ctx, np.asarray(value, dtype=dtype).reshape(1))
    return flat(value)


def blocks_for(count: int, threads: int = _THREADS) -> int:
    """Blocks for ``count`` work items at ``threads`` per block, capped (kernels grid-stride)."""
    return max(1, min(math.ceil(count / threads), _MAX_BLOCKS))


def launching(ctx: Any) -> contextlib.AbstractContextManager[Any]:
    """Hold while launching a kernel: the context's ``gpu_launch_lock`` under the simulator.

    NOTE: the simulator keeps a launch's configuration on the kernel object and swaps module
    globals while a kernel runs, so two launches at once fail ("concurrent simulated kernel
    not supported"), even from two servers' GPU:0 in one process (an in-process cluster).
    The runtime's contexts give one process-wide ``gpu_launch_lock`` under the simulator.
    (Kernels own no locks.) A real GPU needs none: each GPU thread's stream orders its work.
    """
    lock = getattr(ctx, "gpu_launch_lock", None) if SIMULATOR else None
    return contextlib.nullcontext() if lock is None else lock


def launch(ctx: Any, kernel: Any, count: int, *args: Any) -> None:
    """Launch a 1-D grid-stride ``kernel(*args)`` over ``count`` items; nothing if count is 0."""
    if count <= 0:
        return
    threads = min(_THREADS, count)
    with launching(ctx):
        kernel[blocks_for(count, threads), threads, stream(ctx)](*args)


def launch_blocks(ctx: Any, kernel: Any, count: int, threads: int, *args: Any) -> None:
    """Launch ``kernel(*args)`` with a block of ``threads`` per work item, ``count`` items
    (capped; the kernels loop over blocks); nothing if count is 0."""
    if count <= 0:
        return
    with launching(ctx):
        kernel[max(1, min(count, _MAX_BLOCKS)), threads, stream(ctx)](*args)


def parallel_width() -> int:
    """How many threads a launch can usefully keep busy (reductions split work to reach it)."""
    return _THREADS * _MAX_BLOCKS
