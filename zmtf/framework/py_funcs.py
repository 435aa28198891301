"""The process-wide table of ``tf.py_func`` functions: token -> function and output dtypes.

A callable cannot cross the wire (no pickle), so, as TF's ``FuncRegistry`` does, py_func files
it here and the graph carries only the token; the PyFunc kernel looks it up. Entries are held
weakly: the graph that uses a function keeps it alive, so a dropped graph frees its functions.
Tokens name this process, so a token never matches another process's function.
"""

from __future__ import annotations

import itertools
import os
import uuid
import weakref
from typing import Any, Callable


class PyFunction:
    """A registered function and the dtype names its outputs must have."""

    __slots__ = ("func", "tout", "token", "__weakref__")

    def __init__(self, func: Callable[..., Any], tout: list[str], token: str) -> None:
        self.func = func
        self.tout = tout
        self.token = token


_REGISTRY: weakref.WeakValueDictionary[str, PyFunction] = weakref.WeakValueDictionary()
_COUNTER = itertools.count()
_PROCESS = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"


def register(func: Callable[..., Any], tout: list[str]) -> PyFunction:
    """File ``func`` under a new token; the caller must keep the returned entry alive."""
    entry = PyFunction(func, tout, f"pyfunc_{next(_COUNTER)}@{_PROCESS}")
    _REGISTRY[entry.token] = entry
    return entry


def registered_function(token: str) -> PyFunction | None:
    """The function filed under ``token`` in this process, or None (another process's)."""
    return _REGISTRY.get(token)
