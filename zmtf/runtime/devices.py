"""Local devices and their inter-op thread pools.

TF semantics (seed chapter): the first session creates the inter-op pools and later
sessions reuse them, unless ``use_per_session_threads`` is set. So shared pools live in a
process-wide ``SHARED_POOLS``; per-session pools belong to their session.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("zmtf.devices")


@dataclass(frozen=True, slots=True)
class LocalDevice:
    """A device this process can run kernels on."""

    name: str            # "/job:localhost/replica:0/task:0/device:CPU:0"
    device_type: str     # "CPU" | "GPU"
    memory_limit: int    # bytes (0: unknown)
    description: str


def default_thread_count() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def local_cpu_device(job: str = "localhost", replica: int = 0, task: int = 0) -> LocalDevice:
    return LocalDevice(f"/job:{job}/replica:{replica}/task:{task}/device:CPU:0", "CPU", 0,
                       f"CPU with {default_thread_count()} cores")


class DevicePools:
    """One inter-op ThreadPoolExecutor per device name, created on first use."""

    def __init__(self, inter_op_threads: int = 0) -> None:
        self._threads = inter_op_threads or default_thread_count()
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._special: dict[str, tuple[int, Any]] = {}  # device -> (threads, initializer)
        self._lock = threading.Lock()

    def configure(self, device: str, threads: int, initializer: Any) -> None:
        """Give ``device`` its own thread count and per-thread setup (a GPU: one queue thread)."""
        with self._lock:
            self._special.setdefault(device, (threads, initializer))

    @property
    def threads(self) -> int:
        return self._threads

    def pool(self, device: str) -> ThreadPoolExecutor:
        pool = self._pools.get(device)
        if pool is None:
            with self._lock:
                pool = self._pools.get(device)
                if pool is None:
                    short = device.rsplit("device:", 1)[-1]
                    threads, initializer = self._special.get(device, (self._threads, None))
                    pool = ThreadPoolExecutor(threads, thread_name_prefix=f"zmtf-inter-op-{short}",
                                              initializer=initializer)
                    self._pools[device] = pool
        return pool

    def shutdown(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True)


class _SharedPools:
    """The process-wide pools: created by the first session that asks, then reused."""

    def __init__(self) -> None:
        self._pools: DevicePools | None = None
        self._lock = threading.Lock()

    def get(self, inter_op_threads: int) -> DevicePools:
        with self._lock:
            if self._pools is None:
                self._pools = DevicePools(inter_op_threads)
            return self._pools


SHARED_POOLS = _SharedPools()


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def local_devices(task_prefix: str, gpu_options: Any, device_count: dict[str, int],
                  pools: DevicePools) -> list[LocalDevice]:
    """This task's devices, GPUs first (the default device is GPU:0 when there is one).

    Each GPU gets a one-thread inter-op queue bound to its CUDA context and its card's memory
    (reserved here, by the first session of the process that uses the card).
    """
    from zmtf.runtime import transfers  # noqa: F401  (registers the host<->GPU copy kernels)
    from zmtf.runtime import gpu_ledger
    from zmtf.runtime.gpu_memory import bind_thread, for_card, simulated_card_bytes
    from zmtf.runtime.gpus import discover

    devices = []
    gpus = discover(gpu_options.visible_device_list, device_count.get("GPU"))
    if gpus:
        from zmtf.kernels import cuda as cuda_kernels  # registers the GPU kernels, once

        if not cuda_kernels.AVAILABLE:
            _warn_once(f"GPU(s) found but zmtf's GPU kernels cannot run: {cuda_kernels.REASON}; "
                       f"running on CPU only")
            gpus = []
    for gpu in gpus:
        name = f"{task_prefix}/device:GPU:{gpu.index}"
        if gpu_ledger.enabled_for(gpu.simulated):   # 0.4 + 0.4 share a card; a third is refused
            gpu_ledger.claim(gpu.card, gpu_options.per_process_gpu_memory_fraction, name)
        total = gpu.total_memory or (simulated_card_bytes() if gpu.simulated else 0)
        memory = for_card(gpu.card, name, total, gpu_options.per_process_gpu_memory_fraction,
                          gpu_options.allow_growth,
                          compute_capability=gpu.compute_capability, driver_index=gpu.driver_index)
        pools.configure(name, 1, lambda i=gpu.driver_index, m=memory, n=name: bind_thread(i, m, n))
        kind = " (simulated)" if gpu.simulated else ""
        devices.append(LocalDevice(name, "GPU", memory.limit,
                                   f"device: {gpu.driver_index}, name: {gpu.name}{kind}, compute "
                                   f"capability: {gpu.compute_capability[0]}.{gpu.compute_capability[1]}"))
    cpus = device_count.get("CPU", 1)
    if cpus < 1:
        raise ValueError("device_count['CPU'] must be at least 1: zmtf always needs the host")
    # device_count={"CPU": n}: n host devices (TF's way to test multi-device placement on one
    # machine); they share the host's inter-op pool and memory
    devices.extend(LocalDevice(f"{task_prefix}/device:CPU:{index}", "CPU", 0,
                               f"CPU with {default_thread_count()} cores")
                   for index in range(int(cpus)))
    return devices
