"""``tf.gfile``: TF1's file API, on local paths only.

TF1 scripts use it for every file they touch (checkpoint dirs, vocabularies, exported graphs).
zmtf keeps TF's names and TF's typed errors (a missing file is NotFoundError, not
FileNotFoundError) so that ``except tf.errors.NotFoundError`` in a script still catches it.
A ``gs://`` or ``hdfs://`` path raises UnimplementedError: zmtf has no remote file systems.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob as _glob
import os
import shutil
from typing import Any, Iterator

from zmtf.framework.errors import (
    AlreadyExistsError, FailedPreconditionError, InvalidArgumentError, NotFoundError, OpError,
    PermissionDeniedError, UnimplementedError, UnknownError,
)

_ERROR_BY_ERRNO: dict[int, type[OpError]] = {
    errno.ENOENT: NotFoundError,
    errno.EEXIST: AlreadyExistsError,
    errno.EACCES: PermissionDeniedError,
    errno.EPERM: PermissionDeniedError,
    errno.EISDIR: FailedPreconditionError,
    errno.ENOTDIR: FailedPreconditionError,
    errno.ENOTEMPTY: FailedPreconditionError,
}


def _local(path: str | os.PathLike) -> str:
    """The path as a local file name; a URL-style path raises UnimplementedError naming it."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    scheme, sep, _ = path.partition("://")
    if sep and scheme != "file":
        raise UnimplementedError(
            f"File system scheme '{scheme}' not implemented (file: '{path}'): zmtf's tf.gfile "
            "reads local paths only; copy the file to local disk first")
    return path[len("file://"):] if sep else path


@contextlib.contextmanager
def _typed_errors() -> Iterator[None]:
    """Re-raise an OSError as the OpError TF raises for the same failure."""
    try:
        yield
    except OSError as e:
        cls = _ERROR_BY_ERRNO.get(e.errno or 0, UnknownError)
        raise cls(None, None, f"{e.filename}; {e.strerror}") from e


def Exists(filename: str) -> bool:
    """True if the file or directory exists."""
    return os.path.exists(_local(filename))


def IsDirectory(dirname: str) -> bool:
    """True if the path is an existing directory."""
    return os.path.isdir(_local(dirname))


def MkDir(dirname: str) -> None:
    """Create one directory; its parent must exist (NotFoundError otherwise). An existing one is fine."""
    path = _local(dirname)
    with _typed_errors():
        if not os.path.isdir(path):
            os.mkdir(path)


def MakeDirs(dirname: str) -> None:
    """Create a directory and any missing parents; FailedPreconditionError if a file is in the way."""
    path = _local(dirname)
    if os.path.exists(path) and not os.path.isdir(path):
        raise FailedPreconditionError(None, None, f"{path} is not a directory")
    with _typed_errors():
        os.makedirs(path, exist_ok=True)


def Remove(filename: str) -> None:
    """Delete one file; a directory raises FailedPreconditionError (use DeleteRecursively)."""
    with _typed_errors():
        os.remove(_local(filename))


def DeleteRecursively(dirname: str) -> None:
    """Delete a directory and everything under it (or a single file)."""
    path = _local(dirname)
    if not os.path.exists(path):
        raise NotFoundError(None, None, f"{path} not found")
    with _typed_errors():
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _transfer(action: Any, oldpath: str, newpath: str, overwrite: bool) -> None:
    """``action(old, new)`` once old exists (NotFoundError) and new may be replaced."""
    old, new = _local(oldpath), _local(newpath)
    with _typed_errors():
        os.stat(old)
    if not overwrite and os.path.exists(new):
        raise AlreadyExistsError(None, None, f"file already exists: {new}; pass overwrite=True "
                                             "to replace it")
    with _typed_errors():
        action(old, new)


def Rename(oldname: str, newname: str, overwrite: bool = False) -> None:
    """Move a file; AlreadyExistsError if the target exists and ``overwrite`` is False."""
    _transfer(os.replace, oldname, newname, overwrite)


def Copy(oldpath: str, newpath: str, overwrite: bool = False) -> None:
    """Copy a file; AlreadyExistsError if the target exists and ``overwrite`` is False."""
    _transfer(shutil.copyfile, oldpath, newpath, overwrite)


def Glob(filename: str) -> list[str]:
    """The paths that match a glob pattern (an empty list if none do)."""
    return _glob.glob(_local(filename))


def ListDirectory(dirname: str) -> list[str]:
    """The names (not paths) in a directory; NotFoundError if it is not one."""
    path = _local(dirname)
    if not os.path.isdir(path):
        raise NotFoundError(None, None, f"Could not find directory {path}")
    with _typed_errors():
        return os.listdir(path)


def Walk(top: str, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirname, subdirs, files)`` for each directory under ``top``, parents first if in_order."""
    yield from os.walk(_local(top), topdown=in_order)


@dataclasses.dataclass(frozen=True, slots=True)
class FileStatistics:
    """What Stat returns: size in bytes, modification time in ns, and whether it is a directory."""

    length: int
    mtime_nsec: int
    is_directory: bool

    @property
    def mtime_nsecs(self) -> int:
        """TF 1.x's older spelling of ``mtime_nsec``."""
        return self.mtime_nsec


def Stat(filename: str) -> FileStatistics:
    """Size, mtime and kind of a file; NotFoundError if it is missing."""
    path = _local(filename)
    with _typed_errors():
        st = os.stat(path)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(path))


_MODES = ("r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "w+", "wb+", "a+", "ab+")


class GFile:
    """A file with TF's API: ``read`` returns str in text modes and bytes in "b" modes.

    Opening is lazy as in TF: ``GFile(missing)`` succeeds, and the first read raises
    NotFoundError. ``write`` takes str or bytes in any mode.
    """

    _file = None  # set before __init__ can fail, for __del__

    def __init__(self, name: str, mode: str = "r") -> None:
        if mode not in _MODES:
            raise InvalidArgumentError(None, None, f"mode {mode!r} is not 'r' or 'w' or 'a' or 'r+' "
                                                   "or 'w+' or 'a+' (with an optional 'b')")
        self.name = _local(name)
        self.mode = mode
        self._binary = "b" in mode
        self._file = None

    def _opened(self, for_write: bool) -> object:
        allowed = "+" in self.mode or (self.mode[0] in "wa") == for_write
        if not allowed:
            kind = "writing" if for_write else "reading"
            raise PermissionDeniedError(None, None, f"File isn't open for {kind}: {self.name} "
                                                    f"(mode {self.mode!r})")
        if self._file is None:
            with _typed_errors():
                self._file = open(self.name, self.mode.replace("b", "") + "b")
        return self._file

    def _decoded(self, data: bytes) -> str | bytes:
        return data if self._binary else data.decode("utf-8")

    def read(self, n: int = -1) -> str | bytes:
        """Read ``n`` bytes (all of the rest if n < 0)."""
        return self._decoded(self._opened(False).read(n))

    def readline(self) -> str | bytes:
        """The next line, with its newline; empty at the end."""
        return self._decoded(self._opened(False).readline())

    def readlines(self) -> list:
        """All remaining lines."""
        return [self._decoded(line) for line in self._opened(False).readlines()]

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> str | bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def write(self, file_content: str | bytes) -> None:
        """Append to the file (str is written as UTF-8)."""
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._opened(True).write(file_content)

    def size(self) -> int:
        """The file's length in bytes."""
        self.flush()
        return Stat(self.name).length

    def _any_direction(self) -> Any:
        return self._opened(for_write=self.mode[0] in "wa" and "+" not in self.mode)

    def tell(self) -> int:
        """The current position in bytes."""
        return self._any_direction().tell()

    def seek(self, offset: int = 0, whence: int = 0) -> None:
        """Move to ``offset`` (from the start, or as ``whence`` says)."""
        self._any_direction().seek(offset, whence)

    def flush(self) -> None:
        """Push written bytes to the OS."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Close the file; a later read opens it again from the start, as TF's does."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:  # a script's bare GFile(p).read() must not leak the handle
        self.close()

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


Open = GFile
FastGFile = GFile

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]
