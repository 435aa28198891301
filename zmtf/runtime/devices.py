"""Local devices and their inter-op thread pools.

TF semantics (seed chapter): the first session creates the inter-op pools and later
sessions reuse them, unless ``use_per_session_threads`` is set. So shared pools live in a
process-wide ``SHARED_POOLS``; per-session pools belong to their session.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


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
        self._lock = threading.Lock()

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
                    pool = ThreadPoolExecutor(self._threads, thread_name_prefix=f"zmtf-inter-op-{short}")
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
