"""Atomic file replacement: a temp file beside the target, fsynced, then renamed over it.

Checkpoints, the "checkpoint" state file and ``.meta`` graphs are all written this way, so
a crash leaves the old file or the new one under the final name, never a partial one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import IO, Any


def atomic_write(path: str, write: Callable[[IO[bytes]], Any]) -> None:
    """``write`` into a temp file beside ``path``, fsync it, then rename it over ``path``.

    On any error the temp file is removed and ``path`` is untouched. A ``path`` that exists
    and is not a regular file (``/dev/null``, a FIFO) is written in place, as TF would write
    it: renaming over it would replace the device node with a file.
    """
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        with open(path, "wb") as f:
            write(f)
        return
    folder = os.path.dirname(path) or "."
    prefix = f".{os.path.basename(path)}."
    fd, temp_path = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["atomic_write"]
