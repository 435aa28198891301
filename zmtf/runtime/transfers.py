"""Host<->GPU copy kernels, for the copy nodes placement.plan inserts on device-crossing
edges. They run on the GPU's own queue, so copies and kernels of one GPU stay ordered."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.kernels.registry import register


def _stream(ctx: Any) -> Any:
    return getattr(ctx, "gpu_stream", 0) or 0


@register("_HostToDevice", "GPU")
def host_to_device(ctx: Any, inputs: list, attrs: dict) -> list:
    """Copy a host array to the current GPU (into the GPU's memory budget)."""
    from numba import cuda

    host = np.asarray(inputs[0])
    if not host.flags.c_contiguous:
        host = host.copy()  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    allocate = getattr(ctx, "gpu_empty", None)
    if allocate is None:
        return [cuda.to_device(host, stream=_stream(ctx))]
    device = allocate(host.shape, host.dtype)
    device.copy_to_device(host, stream=_stream(ctx))
    return [device]


@register("_DeviceToHost", "GPU")
def device_to_host(ctx: Any, inputs: list, attrs: dict) -> list:
    """Copy a device array back to the host (the stream is synchronized first)."""
    value = inputs[0]
    if isinstance(value, np.ndarray):
        return [value]
    stream = _stream(ctx)
    host = value.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    return [np.asarray(host).reshape(value.shape)]  # a 0-d array can come back as (1,)
