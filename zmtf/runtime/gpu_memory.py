"""Per-GPU memory as TF promises: a reservation sub-allocated best fit (runtime.bfc).

``per_process_gpu_memory_fraction`` = f reserves f x the card's total memory up front, as
one device allocation, so other programs cannot take it; tensors are chunks of it. With
``allow_growth`` the reservation starts at 1 MiB and grows by doubling regions on demand,
never past the fraction when both are set. Neither set: TF's default, most of the card's
free memory (all but a headroom for the driver and other programs: 225 MiB below 2 GiB,
else 500/1050/1536 MiB for compute capability <= 6 / 7 / >= 8). An allocation that does not
fit is a ResourceExhaustedError naming the device, the request and what is in use; the
step fails, the server does not.

One allocator per physical card per process, as TF's process-wide GPU allocator: the first
session (or server) that uses the card sets its options, later ones share it (a warning
says so when their memory options differ). ``memory_stats(device)`` reads its accounting.
Numba's simulated card reports unbounded memory; zmtf gives it ``SIMULATED_CARD_BYTES``
(1 GiB, or ``ZMTF_CUDASIM_MEMORY_BYTES``), reserved as a numpy buffer (virtual memory
until touched).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import Any

import numpy as np

from zmtf.framework.errors import ResourceExhaustedError
from zmtf.runtime.bfc import ALIGNMENT, BestFitAllocator, Chunk, Exhausted, MemoryStats

log = logging.getLogger("zmtf.devices")

#: The simulated card's memory (numba's simulator reports ``inf``).
SIMULATED_CARD_BYTES = 1 << 30
_MIB = 1 << 20


def simulated_card_bytes() -> int:
    text = os.environ.get("ZMTF_CUDASIM_MEMORY_BYTES", "").strip()
    if not text:
        return SIMULATED_CARD_BYTES
    if not text.isdigit() or int(text) <= 0:
        raise ValueError(f"ZMTF_CUDASIM_MEMORY_BYTES={text!r}: expected the simulated GPU's "
                         f"memory as a positive number of bytes, e.g. {SIMULATED_CARD_BYTES}")
    return int(text)


def system_headroom(available: int, compute_capability: tuple[int, int]) -> int:
    """What TF's default leaves to the driver and other programs when it takes a card."""
    if available < 2 << 30:
        return 225 * _MIB
    major = compute_capability[0]
    return 500 * _MIB if major <= 6 else 1050 * _MIB if major <= 7 else 1536 * _MIB


def memory_limit(total: int, available: int, fraction: float,
                 compute_capability: tuple[int, int]) -> int:
    """The bytes this process may use on a card (TF: the fraction of the *total* memory, or
    the free memory less the headroom)."""
    if fraction > 0:
        return int(total * fraction)
    return max(0, available - system_headroom(available, compute_capability))


class DeviceOutOfMemory(Exception):
    """The device (or the simulator's host) could not give a region."""


class GpuMemory:
    """The memory of one GPU in this process; ``empty`` allocates device arrays within it."""

    def __init__(self, device: str, total: int, fraction: float, allow_growth: bool, *,
                 available: int | None = None, compute_capability: tuple[int, int] = (0, 0),
                 driver_index: int = 0) -> None:
        self.device = device
        self.fraction = fraction
        self.allow_growth = allow_growth
        self.driver_index = driver_index
        self.allocator_name = f"GPU_{driver_index}_bfc"
        if available is None or total <= 0:
            free, known = _memory_info(driver_index, total)
            total = total if total > 0 else known
            available = free if available is None else available
        self.limit = memory_limit(total, available, fraction, compute_capability)
        self._regions: dict[int, Any] = {}   # base address -> the device allocation
        self._allocator = BestFitAllocator(self.limit, self._new_region, allow_growth=allow_growth)
        if not allow_growth:
            try:
                reserved = self._allocator.reserve()
            except Exception as error:  # noqa: BLE001 - numba's CudaAPIError: out of memory
                raise ResourceExhaustedError(
                    None, None,
                    f"{device}: could not reserve {self.limit} bytes of GPU memory "
                    f"({_options(fraction, allow_growth)}): {error}. Other programs may hold the "
                    f"card's memory; lower per_process_gpu_memory_fraction or set "
                    f"allow_growth.") from error
            if reserved < self.limit // ALIGNMENT * ALIGNMENT:
                log.warning("%s: the CUDA driver gave %d of the %d bytes asked for (other "
                            "programs hold the rest); this process uses %d", device, reserved,
                            self.limit, reserved)
        self.limit = self._allocator.limit   # in whole 256-byte chunks

    def stats(self) -> MemoryStats:
        return self._allocator.stats()

    def empty(self, shape: Any, dtype: Any, stream: Any = 0) -> Any:
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0:
            return _allocate_empty(shape, dtype, stream)
        try:
            chunk = self._allocator.allocate(nbytes)
        except Exhausted as full:
            raise self._oom(shape, dtype, full) from None
        except DeviceOutOfMemory as error:   # the driver could not give a growth region
            raise ResourceExhaustedError(
                None, None,
                f"OOM when allocating tensor with shape{list(shape)} and type {dtype.name} on "
                f"{current_device(self.device)} by allocator {self.allocator_name}: the CUDA "
                f"driver could not grow the reservation: {error}. Other programs may hold the "
                f"card's memory; use smaller batches or place some ops on the CPU.") from error
        try:
            return self._array_over(chunk, nbytes, shape, dtype, stream)
        except BaseException:
            self._allocator.free(chunk)
            raise

    def _oom(self, shape: tuple, dtype: np.dtype, full: Exhausted) -> ResourceExhaustedError:
        s = full.stats
        return ResourceExhaustedError(
            None, None,
            f"OOM when allocating tensor with shape{list(shape)} and type {dtype.name} on "
            f"{current_device(self.device)} by allocator {self.allocator_name}: "
            f"{full.requested} bytes requested (rounded to {full.size}); {s.bytes_in_use} bytes "
            f"in use of a limit of {s.bytes_limit} ({_options(self.fraction, self.allow_growth)}); "
            f"{s.bytes_reserved} reserved, largest free chunk {s.largest_free_block_bytes} of "
            f"{s.bytes_free} free. Raise gpu_options.per_process_gpu_memory_fraction, use smaller "
            f"batches, or place some ops on the CPU.")

    def _new_region(self, size: int) -> int:
        """``size`` bytes from the device (a numpy buffer on the simulator's card); its
        aligned base address."""
        try:
            return self._allocate_region(size)
        except Exception as error:  # noqa: BLE001 - numba's CudaAPIError, numpy's MemoryError
            raise DeviceOutOfMemory(f"{size} bytes: {error}") from error

    def _allocate_region(self, size: int) -> int:
        if _simulated():
            buffer = np.empty(size + ALIGNMENT, np.uint8)
            address = buffer.__array_interface__["data"][0]
            base = address + (-address) % ALIGNMENT
            self._regions[base] = (buffer, base - address)
            return base
        from numba import cuda

        with cuda.gpus[self.driver_index]:
            memory = cuda.current_context().memalloc(size)
        base = int(memory.device_pointer_value)
        self._regions[base] = memory
        return base

    def _array_over(self, chunk: Chunk, nbytes: int, shape: tuple, dtype: np.dtype,
                    stream: Any) -> Any:
        """A C-contiguous device array of ``shape`` on ``chunk``; the chunk goes back once the
        array and every view of it (a reshape, a slice) are gone.

        Each allocation gets its own memory object that all derived arrays keep alive, as
        numba's own allocations do: a finalizer on the array object alone would hand the
        chunk back while a reshape of it still reads the memory.
        """
        region = self._regions[chunk.region]
        free = self._allocator.free
        if isinstance(region, tuple):   # the simulator's card
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

            owner = _HostMemory(region[0], chunk.address, nbytes, dtype, shape)
            weakref.finalize(owner, free, chunk)
            return FakeCUDAArray(np.asarray(owner), stream=stream)
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        from numba.cuda.cudadrv.driver import AutoFreePointer

        key = object()

        def freed() -> None:
            del _live_memory[key]
            free(chunk)

        offset = chunk.address - chunk.region
        pointer = region.view(offset, offset + nbytes).device_pointer
        # NOTE: as numba's own memalloc: the arrays hold counted references (own()); when the
        # count falls to zero the pointer frees itself, which runs ``freed``. Until then it must
        # be held strongly somewhere, as numba's context holds its allocations.
        memory = AutoFreePointer(region.context, pointer, nbytes, finalizer=freed)
        _live_memory[key] = memory
        strides, step = [], dtype.itemsize
        for d in reversed(shape):
            strides.append(step)
            step *= max(d, 1)
        return DeviceNDArray(shape, tuple(reversed(strides)), dtype, stream=stream,
                             gpu_data=memory.own())


def _options(fraction: float, allow_growth: bool) -> str:
    return (f"per_process_gpu_memory_fraction={fraction:g}, "
            f"allow_growth={'true' if allow_growth else 'false'}")


def _simulated() -> bool:
    from numba import config

    # numba sets its config attributes from the environment at import time, so no stub
    # declares them: read it by name
    return bool(getattr(config, "ENABLE_CUDASIM"))


def _memory_info(driver_index: int, total: int) -> tuple[int, int]:
    """(free, total) bytes of the card now; the simulator's card: all of ``total`` free."""
    if _simulated():
        return total, total
    from numba import cuda

    with cuda.gpus[driver_index]:
        info = cuda.current_context().get_memory_info()
    return int(info.free), int(info.total)


def _allocate_empty(shape: tuple, dtype: np.dtype, stream: Any) -> Any:
    from numba import cuda

    return cuda.device_array(shape, dtype, stream=stream)


#: Allocations handed out and not yet freed (see _array_over).
_live_memory: dict[object, Any] = {}


class _HostMemory:
    """The simulator's stand-in for one allocation: numpy arrays made from it (and every
    view of those) keep it alive, since it is their base."""

    def __init__(self, region: np.ndarray, address: int, nbytes: int, dtype: np.dtype,
                 shape: tuple) -> None:
        start = region.__array_interface__["data"][0]
        assert start <= address and address + nbytes <= start + region.nbytes
        self._region = region
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "version": 3,
                                    "data": (address, False), "strides": None}


_thread = threading.local()


def bind_thread(driver_index: int, memory: GpuMemory, device: str = "") -> None:
    """Pool-thread initializer of a GPU: select its CUDA context, give it a stream and its
    card's memory; ``device`` is the name its nodes are placed on."""
    from numba import cuda

    cuda.select_device(driver_index)
    _thread.memory = memory
    _thread.device = device or memory.device
    _thread.stream = cuda.stream()


def current_memory() -> GpuMemory | None:
    return getattr(_thread, "memory", None)


def current_device(default: str = "") -> str:
    """The device the calling GPU thread runs nodes for (``default`` off GPU threads)."""
    return getattr(_thread, "device", default)


def on_gpu_thread(device: str) -> bool:
    """Whether the calling thread is ``device``'s GPU thread (bound by ``bind_thread``)."""
    return getattr(_thread, "device", None) == device


def current_stream() -> Any:
    return getattr(_thread, "stream", 0)


_cards_lock = threading.Lock()
_cards: dict[str, GpuMemory] = {}        # card id -> this process's allocator for it
_devices: dict[str, GpuMemory] = {}      # device name -> its card's allocator


def for_card(card: str, device: str, total: int, fraction: float, allow_growth: bool, *,
             available: int | None = None, compute_capability: tuple[int, int] = (0, 0),
             driver_index: int = 0) -> GpuMemory:
    """This process's allocator of ``card``, made (and its reservation taken) by the first
    caller; later callers share it, as TF's process-wide GPU allocator."""
    with _cards_lock:
        memory = _cards.get(card)
        if memory is None:
            memory = GpuMemory(device, total, fraction, allow_growth, available=available,
                               compute_capability=compute_capability, driver_index=driver_index)
            _cards[card] = memory
            log.info("Created device %s with %d MB memory (%s, %s)", device, memory.limit // _MIB,
                     "grown on demand" if allow_growth else "reserved up front",
                     _options(fraction, allow_growth))
        elif (memory.fraction, memory.allow_growth) != (fraction, allow_growth):
            log.warning("%s: gpu_options (%s) ignored: this process already set up the card's "
                        "memory with %s; as in TF, the first session's memory options hold for "
                        "the process", device, _options(fraction, allow_growth),
                        _options(memory.fraction, memory.allow_growth))
        _devices[device] = memory
        return memory


def memory_stats(device: str = "GPU:0") -> dict[str, float]:
    """Accounting of the GPU ``device`` ("GPU:0", "/gpu:0" or a full device name) in this
    process: TF's AllocatorStats fields (bytes in use, peak, limit, reserved, largest free
    chunk, fragmentation = 1 - largest free chunk / free bytes). KeyError names the GPUs
    known when ``device`` is none of them."""
    memory = _devices.get(device)
    if memory is None:
        short = device.rsplit("device:", 1)[-1].lstrip("/").upper()
        matches = [m for name, m in _devices.items() if name.upper().endswith("/DEVICE:" + short)]
        if not matches:
            raise KeyError(f"no GPU named {device!r} in this process (known: "
                           f"{sorted(_devices) or 'none yet: no session has used a GPU'})")
        memory = matches[0]
    return memory.stats().as_dict()
