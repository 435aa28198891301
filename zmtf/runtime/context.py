"""KernelContext: what kernels may touch besides their inputs (variables, RNGs, threads)."""

from __future__ import annotations

import threading

import numpy as np

from zmtf.runtime.buffer_pool import BufferPool
from zmtf.runtime.gpu_memory import current_memory, current_stream
from zmtf.runtime.resources import ResourceContainer


#: One simulated kernel launch at a time in the whole process: the simulator cannot run two,
#: even from two servers' GPU:0 of an in-process cluster. Unused on a real GPU.
SIMULATOR_LAUNCH_LOCK = threading.Lock()


class KernelContext:
    """Per-session state shared by kernels: the variable store and per-node random generators."""

    __slots__ = ("resources", "intra_op_threads", "pool", "empty", "gpu_const_cache", "executor",
                 "_generators", "_lock")

    def __init__(self, resources: ResourceContainer, intra_op_threads: int,
                 pool: BufferPool | None = None) -> None:
        self.resources = resources
        self.intra_op_threads = intra_op_threads
        self.pool = pool or BufferPool()
        self.empty = self.pool.empty  # output buffers: big ones reuse memory
        self.gpu_const_cache: dict[tuple[str, int], object] = {}
        #: the Executor that runs this context's steps: loop kernels run subgraphs on it
        self.executor: object = None
        self._generators: dict[str, np.random.Generator] = {}
        self._lock = threading.Lock()

    def gpu_empty(self, shape: object, dtype: object) -> object:
        """A device array on the calling GPU thread's device, within that GPU's budget."""
        memory = current_memory()
        if memory is None:
            from numba import cuda

            return cuda.device_array(shape, dtype)
        return memory.empty(shape, dtype, current_stream())

    @property
    def gpu_stream(self) -> object:
        return current_stream()

    @property
    def gpu_launch_lock(self) -> threading.Lock:
        """Held around kernel launches under numba's simulator (kernels.cuda._device)."""
        return SIMULATOR_LAUNCH_LOCK

    def random_generator(self, key: str, seed: int, seed2: int) -> np.random.Generator:
        """One generator per node, so repeated runs draw fresh numbers; seeded ones repeat per session."""
        generator = self._generators.get(key)
        if generator is None:
            with self._lock:
                generator = self._generators.get(key)
                if generator is None:
                    seeded = seed != 0 or seed2 != 0
                    generator = np.random.default_rng([seed, seed2] if seeded else None)
                    self._generators[key] = generator
        return generator
