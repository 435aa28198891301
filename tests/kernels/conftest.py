"""Fixtures for kernel tests: a real dict-backed variable store and a kernel context.

``run(op_type, inputs, **attrs)`` looks the kernel up in the registry exactly as the
runtime does, calls it, and checks the calling convention on every call: the result is a
list of ndarrays (never numpy scalars) and no input was mutated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from zmtf.framework.errors import FailedPreconditionError
from zmtf.kernels import VariableRef, lookup


class DictStore:
    """A variable store: name -> ndarray, one threading.Lock per variable."""

    def __init__(self) -> None:
        self.values: dict[str, np.ndarray] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def read(self, name: str) -> np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized value {name}"
            ) from None

    def assign(self, name: str, value: np.ndarray) -> None:
        self.values[name] = value

    def is_initialized(self, name: str) -> bool:
        return name in self.values

    def lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())


class KernelContext:
    """What the runtime hands a kernel: variable store, per-node generators, thread count."""

    def __init__(self, intra_op_threads: int = 2) -> None:
        self.resources = DictStore()
        self.intra_op_threads = intra_op_threads
        self._generators: dict[str, np.random.Generator] = {}

    def random_generator(self, key: str, seed: int, seed2: int) -> np.random.Generator:
        if key not in self._generators:
            seeded = seed or seed2
            self._generators[key] = np.random.default_rng([seed, seed2] if seeded else None)
        return self._generators[key]


def _snapshot(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def call_kernel(ctx: KernelContext, op_type: str, inputs: list, **attrs: Any) -> list:
    """Run one kernel through the registry and check the calling convention."""
    first = inputs[0] if inputs else None
    if isinstance(first, VariableRef):
        dtype = first.read().dtype.name if first.store.is_initialized(first.name) else None
    elif isinstance(first, np.ndarray):
        dtype = first.dtype.name
    else:
        dtype = attrs.get("dtype")
    kernel = lookup(op_type, "CPU", dtype)
    attrs.setdefault("_node_name", f"test_{op_type.lower()}")
    before = [_snapshot(v) for v in inputs]
    outputs = kernel(ctx, list(inputs), attrs)
    assert isinstance(outputs, list)
    for out in outputs:
        assert type(out) is np.ndarray, f"{op_type} returned {type(out).__name__}"
    for old, new in zip(before, inputs):
        if isinstance(old, np.ndarray) and op_type not in ("Assign",):
            np.testing.assert_array_equal(old, new, err_msg=f"{op_type} mutated an input")
    return outputs


@pytest.fixture
def ctx() -> KernelContext:
    return KernelContext()


@pytest.fixture
def run(ctx: KernelContext) -> Callable[..., list]:
    """run(op_type, inputs, **attrs) -> outputs, with the calling convention checked."""
    return lambda op_type, inputs, **attrs: call_kernel(ctx, op_type, inputs, **attrs)


@pytest.fixture
def make_ctx() -> Callable[..., KernelContext]:
    """A factory for fresh contexts (their own store and generators)."""
    return KernelContext


@pytest.fixture
def run_in() -> Callable[..., list]:
    """run_in(ctx, op_type, inputs, **attrs) -> outputs, for tests that need several contexts."""
    return call_kernel
