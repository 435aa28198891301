"""Per-GPU memory: a caching allocator under ``per_process_gpu_memory_fraction``.

zmtf does not grab a GPU's memory up front (TF's default): it accounts for the bytes its
device arrays hold and refuses an allocation past the budget with a ResourceExhaustedError
that names the budget, what is in use and the request; between processes the fraction is
a claim in ``gpu_ledger`` (two at 0.4 share a card, a third is refused).

A freed block is kept and reused for a later allocation of its size class, as TF's BFC
allocator never gives memory back: ``cudaMalloc`` costs ~50 us on an H100, more than most
kernels of a training step, and a step allocates the same sizes every time. Sizes round up
to a class (512 bytes, then eighths of a power of two: at most 12.5% slack). Kept bytes
count against the budget and are given back to the driver when a request would not fit
otherwise, or when the driver itself runs out. ``allow_growth`` is accepted: zmtf always
grows on demand, with or without it.
"""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict
from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import ResourceExhaustedError


def size_class(nbytes: int) -> int:
    """The bytes a block for ``nbytes`` holds: a multiple of 512, then within 1/8 of a
    power of two, so blocks of nearby sizes are shared and little is wasted."""
    if nbytes <= 4096:
        return max(512, -(-nbytes // 512) * 512)
    step = 1 << (nbytes.bit_length() - 4)   # an eighth of the power of two at or above
    return -(-nbytes // step) * step


class GpuMemory:
    """The budget of one GPU in this process; ``empty`` allocates device arrays within it."""

    def __init__(self, device: str, total: int, fraction: float, allow_growth: bool) -> None:
        self.device = device
        self.limit = int(total * fraction) if fraction > 0 and total > 0 else total  # 0: unbounded
        self.allow_growth = allow_growth
        self.in_use = 0        # bytes (size classes) held by live device arrays
        self.kept = 0          # bytes of freed blocks kept for reuse
        self._kept: dict[int, list[Any]] = defaultdict(list)   # size class -> freed blocks
        self._lock = threading.RLock()   # NOTE: re-entrant: a GC finalizer may run under it

    def empty(self, shape: Any, dtype: Any, stream: Any = 0) -> Any:
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0:
            return _allocate_empty(shape, dtype, stream)
        size = size_class(nbytes)
        with self._lock:
            block = self._reuse(size)
            if block is None:
                self._make_room(size, nbytes, dtype, shape)
            self.in_use += size
        try:
            if block is None:
                block = self._new_block(size, nbytes, dtype, shape)
            return _array_over(block, shape, dtype, stream, lambda: self._release(size, block))
        except BaseException:
            self._release(size, None)
            raise

    def _reuse(self, size: int) -> Any:
        blocks = self._kept.get(size)
        if not blocks:
            return None
        self.kept -= size
        return blocks.pop()

    def _make_room(self, size: int, nbytes: int, dtype: np.dtype, shape: tuple) -> None:
        if not self.limit or self.in_use + self.kept + size <= self.limit:
            return
        self._drop_kept()
        if self.in_use + size > self.limit:
            raise ResourceExhaustedError(
                None, None,
                f"OOM on {self.device}: allocating {nbytes} bytes ({dtype.name}{list(shape)}) "
                f"would exceed this process's budget of {self.limit} bytes "
                f"({self.in_use} in use). Raise gpu_options.per_process_gpu_memory_fraction, "
                f"use smaller batches, or place some ops on the CPU.")

    def _drop_kept(self) -> None:
        """Give every kept block back to the driver."""
        with self._lock:
            self._kept.clear()
            self.kept = 0

    def _new_block(self, size: int, nbytes: int, dtype: np.dtype, shape: tuple) -> Any:
        """A fresh block from the driver; when it is out of memory, kept blocks go back and
        it is asked once more before the request fails."""
        try:
            return _allocate_block(size)
        except Exception as first:  # noqa: BLE001 - numba's CudaAPIError: out of memory
            if not self.kept:
                raise _driver_oom(self.device, nbytes, dtype, shape, first) from first
            self._drop_kept()
            try:
                return _allocate_block(size)
            except Exception as error:  # noqa: BLE001
                raise _driver_oom(self.device, nbytes, dtype, shape, error) from error

    def _release(self, size: int, block: Any) -> None:
        """An array died: its block is kept for reuse (or, on a failed allocation, its bytes
        simply leave the budget)."""
        with self._lock:
            self.in_use -= size
            if block is not None:
                self._kept[size].append(block)
                self.kept += size


def _driver_oom(device: str, nbytes: int, dtype: np.dtype, shape: tuple,
                error: BaseException) -> ResourceExhaustedError:
    return ResourceExhaustedError(
        None, None,
        f"OOM on {device}: the CUDA driver could not allocate {nbytes} bytes "
        f"({dtype.name}{list(shape)}): {error}. Other processes may hold the card's memory; "
        f"use smaller batches or place some ops on the CPU.")


def _simulated() -> bool:
    from numba import config

    # numba sets its config attributes from the environment at import time, so no stub
    # declares them: read it by name
    return bool(getattr(config, "ENABLE_CUDASIM"))


def _allocate_block(size: int) -> Any:
    """``size`` bytes of device memory: numba's allocation, or on the simulator's card a
    numpy buffer."""
    if _simulated():
        return np.empty(size, np.uint8)
    from numba import cuda

    return cuda.current_context().memalloc(size)


def _allocate_empty(shape: tuple, dtype: np.dtype, stream: Any) -> Any:
    from numba import cuda

    return cuda.device_array(shape, dtype, stream=stream)


def _array_over(block: Any, shape: tuple, dtype: np.dtype, stream: Any,
                on_free: Callable[[], None]) -> Any:
    """A C-contiguous device array of ``shape`` at the start of ``block``; ``on_free`` runs
    once the array and every view of it (a reshape, a slice) are gone.

    Each allocation gets its own memory object that all derived arrays keep alive, as
    numba's own allocations do: a finalizer on the array object alone would hand the block
    back while a reshape of it still reads the memory.
    """
    if isinstance(block, np.ndarray):   # the simulator's card
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        owner = _HostMemory(block, dtype, shape)
        weakref.finalize(owner, on_free)
        return FakeCUDAArray(np.asarray(owner), stream=stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    from numba.cuda.cudadrv.driver import AutoFreePointer

    key = object()

    def freed() -> None:
        del _live_memory[key]
        on_free()

    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    # NOTE: as numba's own memalloc: the arrays hold counted references (own()); when the
    # count falls to zero the pointer frees itself, which runs ``freed``. Until then it must
    # be held strongly somewhere, as numba's context holds its allocations.
    memory = AutoFreePointer(block.context, block.device_pointer, nbytes, finalizer=freed)
    _live_memory[key] = memory
    strides, step = [], dtype.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return DeviceNDArray(shape, tuple(reversed(strides)), dtype, stream=stream, gpu_data=memory.own())


#: Allocations handed out and not yet freed (see _array_over).
_live_memory: dict[object, Any] = {}


class _HostMemory:
    """The simulator's stand-in for one allocation: numpy arrays made from it (and every
    view of those) keep it alive, since it is their base."""

    def __init__(self, block: np.ndarray, dtype: np.dtype, shape: tuple) -> None:
        self._block = block
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.__array_interface__ = {
            "shape": shape, "typestr": dtype.str, "version": 3,
            "data": (block.__array_interface__["data"][0], False),
            "strides": None,
        }
        assert nbytes <= block.nbytes


_thread = threading.local()


def bind_thread(driver_index: int, memory: GpuMemory) -> None:
    """Pool-thread initializer of a GPU: select its CUDA context, give it a stream and budget."""
    from numba import cuda

    cuda.select_device(driver_index)
    _thread.memory = memory
    _thread.stream = cuda.stream()


def current_memory() -> GpuMemory | None:
    return getattr(_thread, "memory", None)


def on_gpu_thread(device: str) -> bool:
    """Whether the calling thread is ``device``'s GPU thread (bound by ``bind_thread``)."""
    memory = getattr(_thread, "memory", None)
    return memory is not None and memory.device == device


def current_stream() -> Any:
    return getattr(_thread, "stream", 0)
