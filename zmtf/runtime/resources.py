"""ResourceContainer: where variable values live between steps (per session, or per worker)."""

from __future__ import annotations

import threading
from typing import Iterator

import numpy as np

from zmtf.framework.errors import FailedPreconditionError


class ResourceContainer:
    """Variable name -> current value, with a lock per variable for read-modify-write ops."""

    def __init__(self) -> None:
        self._values: dict[str, np.ndarray] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._mutex = threading.Lock()

    def read(self, name: str) -> np.ndarray:
        try:
            return self._values[name]
        except KeyError:
            raise FailedPreconditionError(
                None, None,
                f"Attempting to use uninitialized value {name}: run "
                f"sess.run(tf.global_variables_initializer()) (or {name}.initializer) in this "
                f"session before reading it.", node_name=name) from None

    def assign(self, name: str, value: np.ndarray) -> None:
        self._values[name] = value

    def is_initialized(self, name: str) -> bool:
        return name in self._values

    def lock(self, name: str) -> threading.Lock:
        lock = self._locks.get(name)
        if lock is None:
            with self._mutex:
                lock = self._locks.setdefault(name, threading.Lock())
        return lock

    def names(self) -> list[str]:
        return sorted(self._values)

    def clear(self) -> None:
        """Drop every value (tf.Session.reset)."""
        with self._mutex:
            self._values.clear()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._values)
