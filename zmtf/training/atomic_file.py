"""Atomic file replacement: a temp file beside the target, fsynced, then renamed over it.

Checkpoints, the "checkpoint" state file and ``.meta`` graphs are all written this way, so
a crash leaves the old file or the new one under the final name, never a partial one. A
process killed mid-write leaves its temp file, named ``.<target>.<pid>-<random>.tmp``: the
writer's pid in the name lets ``remove_stale_temps`` (the Saver's next save) tell a dead
writer's leftovers from a live writer's file in progress.
"""

from __future__ import annotations

import os
import re
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
    prefix = f".{os.path.basename(path)}.{os.getpid()}-"
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


# exactly what mkstemp makes of atomic_write's prefix and suffix (its 8 random characters)
_TEMP_NAME = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]+)-[a-z0-9_]{8}\.tmp")


def remove_stale_temps(folder: str, is_target: Callable[[str], bool]) -> list[str]:
    """Remove the temp files of writers that died mid-write, in ``folder``: only files
    atomic_write names, for targets ``is_target(name)`` accepts, whose writer process is
    gone from this host. Returns the paths removed."""
    removed = []
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.fullmatch(entry.name)
        if match is None or not is_target(match["target"]) or _alive(int(match["pid"])):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            pass   # another saver removed it first, or it is not ours to remove
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2**31   # another user's live process (a huge number is no pid at all)
    return True


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


__all__ = ["atomic_write", "remove_stale_temps"]
