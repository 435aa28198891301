"""Per-GPU memory budgets: ``per_process_gpu_memory_fraction`` and ``allow_growth``.

zmtf does not grab a GPU's memory up front (TF's default): it accounts for the bytes its
device arrays hold and refuses an allocation past the budget with a ResourceExhaustedError
that names the budget, what is in use and the request; between processes the fraction is
a claim in ``gpu_ledger`` (two at 0.4 share a card, a third is refused). With
``allow_growth`` freed blocks are kept and reused for later allocations of the same size
(TF never gives memory back either; kept blocks count against the budget and are given
back only when a new size would not fit otherwise); without it they go back to the driver
when their array dies.
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
        self.in_use = 0        # bytes held by live device arrays
        self.kept = 0          # bytes of freed blocks kept for reuse (allow_growth)
        self._kept: dict[int, list[Any]] = defaultdict(list)   # nbytes -> freed blocks
        self._lock = threading.Lock()

    def empty(self, shape: Any, dtype: Any, stream: Any = 0) -> Any:
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        with self._lock:
            block = self._reuse(nbytes)
            if block is None:
                self._make_room(nbytes, dtype, shape)
            self.in_use += nbytes
        try:
            array = _allocate(shape, dtype, stream) if block is None else _view(block, shape, dtype, stream)
        except BaseException:
            self._release(nbytes, None)
            raise
        weakref.finalize(array, self._release, nbytes, _block_of(array) if self.allow_growth else None)
        return array

    def _reuse(self, nbytes: int) -> Any:
        """A kept block of exactly ``nbytes`` (allow_growth), or None."""
        blocks = self._kept.get(nbytes)
        if not blocks:
            return None
        self.kept -= nbytes
        return blocks.pop()

    def _make_room(self, nbytes: int, dtype: np.dtype, shape: tuple) -> None:
        if not self.limit or self.in_use + self.kept + nbytes <= self.limit:
            return
        if self.kept:   # give kept blocks of other sizes back to the driver, then try again
            self._kept.clear()
            self.kept = 0
        if self.in_use + nbytes > self.limit:
            raise ResourceExhaustedError(
                None, None,
                f"OOM on {self.device}: allocating {nbytes} bytes ({dtype.name}{list(shape)}) "
                f"would exceed this process's budget of {self.limit} bytes "
                f"({self.in_use} in use). Raise gpu_options.per_process_gpu_memory_fraction, "
                f"use smaller batches, or place some ops on the CPU.")

    def _release(self, nbytes: int, block: Any) -> None:
        """An array died: its bytes leave the budget, or (allow_growth) its block is kept."""
        with self._lock:
            self.in_use -= nbytes
            if block is not None:
                self._kept[nbytes].append(block)
                self.kept += nbytes


def _allocate(shape: tuple, dtype: np.dtype, stream: Any) -> Any:
    from numba import cuda

    return cuda.device_array(shape, dtype, stream=stream)


def _block_of(array: Any) -> Any:
    """The memory under a device array: numba's allocation, or the simulator's numpy array."""
    data = getattr(array, "gpu_data", None) if not _simulated(array) else None
    return data if data is not None else array._ary


def _view(block: Any, shape: tuple, dtype: np.dtype, stream: Any) -> Any:
    """A new device array of ``shape`` over a kept block of exactly its size."""
    if isinstance(block, np.ndarray):   # the simulator's card
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(block.reshape(-1).view(np.uint8).view(dtype).reshape(shape), stream=stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    strides, step = [], dtype.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return DeviceNDArray(shape, tuple(reversed(strides)), dtype, stream=stream, gpu_data=block)


def _simulated(array: Any) -> bool:
    return type(array).__name__ == "FakeCUDAArray"


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
