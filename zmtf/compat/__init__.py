"""``tf.compat``: TF's byte/text helpers, and ``tf.compat.v1``, which is zmtf itself.

Code written for TF 2.x's compatibility layer (``import tensorflow.compat.v1 as tf``) moves
by changing that one line to ``import zmtf.compat.v1 as tf`` (or ``import zmtf as tf``);
``tf.compat.v1.placeholder`` inside TF1 code resolves too. There is no ``v2``: zmtf runs
graphs and sessions only.
"""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any

import numpy as np

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text: Any, encoding: str = "utf-8") -> bytes:
    """``bytes`` as is, ``str`` encoded (bytearray copied); anything else is a TypeError, as in TF."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Any, encoding: str = "utf-8") -> str:
    """``str`` as is, ``bytes`` decoded; anything else is a TypeError, as in TF."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value: Any) -> str:
    """``as_str`` for bytes, ``str(value)`` for anything else."""
    return as_str(value) if isinstance(value, bytes) else str(value)


def path_to_str(path: Any) -> Any:
    """An os.PathLike as its string; anything else unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


def __getattr__(name: str) -> Any:
    if name == "v1":   # imported on first use: zmtf is still initializing when it imports this
        # Not ``from zmtf.compat import v1``: its fromlist step asks hasattr(zmtf.compat, "v1"),
        # which lands back here before the submodule is ever imported (RecursionError).
        # import_module imports zmtf/compat/v1.py, which puts zmtf in its place, and binds
        # zmtf.compat.v1 = zmtf, so later reads never come back here.
        return importlib.import_module("zmtf.compat.v1")
    if name == "v2":
        raise AttributeError("tf.compat.v2 is not in zmtf: zmtf is TensorFlow 1.x's graph API "
                             "(tf.compat.v1, which is zmtf itself)")
    raise AttributeError(f"module 'zmtf.compat' has no attribute {name!r}")
