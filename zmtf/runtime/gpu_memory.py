"""Per-GPU memory budgets: ``per_process_gpu_memory_fraction`` and ``allow_growth``.

zmtf does not grab a GPU's memory up front (TF's default): it accounts for the bytes its
device arrays hold and refuses an allocation past the budget with a ResourceExhaustedError
that names the budget, what is in use and the request. With ``allow_growth`` freed blocks
are kept and reused for later allocations of the same size (TF never gives memory back
either); without it they go back to the driver when their array dies.
"""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict
from typing import Any

import numpy as np

from zmtf.framework.errors import ResourceExhaustedError


class GpuMemory:
    """The budget of one GPU in this process; ``empty`` allocates device arrays within it."""

    def __init__(self, device: str, total: int, fraction: float, allow_growth: bool) -> None:
        self.device = device
        self.limit = int(total * fraction) if fraction > 0 and total > 0 else total  # 0: unbounded
        self.allow_growth = allow_growth
        self.in_use = 0
        self._kept: dict[int, list[Any]] = defaultdict(list)
        self._lock = threading.Lock()

    def empty(self, shape: Any, dtype: Any, stream: Any = 0) -> Any:
        from numba import cuda

        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        with self._lock:
            if self.limit and self.in_use + nbytes > self.limit:
                raise ResourceExhaustedError(
                    None, None,
                    f"OOM on {self.device}: allocating {nbytes} bytes ({dtype.name}{list(shape)}) "
                    f"would exceed this process's budget of {self.limit} bytes "
                    f"({self.in_use} in use). Raise gpu_options.per_process_gpu_memory_fraction, "
                    f"use smaller batches, or place some ops on the CPU.")
            self.in_use += nbytes
        array = cuda.device_array(shape, dtype, stream=stream)
        weakref.finalize(array, self._release, nbytes)
        return array

    def _release(self, nbytes: int) -> None:
        with self._lock:
            self.in_use -= nbytes


_thread = threading.local()


def bind_thread(driver_index: int, memory: GpuMemory) -> None:
    """Pool-thread initializer of a GPU: select its CUDA context, give it a stream and budget."""
    from numba import cuda

    cuda.select_device(driver_index)
    _thread.memory = memory
    _thread.stream = cuda.stream()


def current_memory() -> GpuMemory | None:
    return getattr(_thread, "memory", None)


def current_stream() -> Any:
    return getattr(_thread, "stream", 0)
