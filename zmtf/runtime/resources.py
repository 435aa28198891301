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
        self._storage_ids: set[int] = set()  # id() of every stored array, see holds()
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
        old = self._values.get(name)
        self._values[name] = value
        self._storage_ids.add(id(value))
        if old is not None and old is not value:
            self._storage_ids.discard(id(old))

    def holds(self, array: object) -> bool:
        """Whether ``array`` is (a view of) a stored value: reads alias storage, fetches must copy."""
        while array is not None:
            if id(array) in self._storage_ids:
                return True
            array = getattr(array, "base", None)
        return False

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
            self._storage_ids.clear()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._values)
