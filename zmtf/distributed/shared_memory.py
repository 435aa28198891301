"""The same-host fast path: big tensors travel through memfd segments, not over the socket.

Two zmtf processes on one machine (same boot, same network namespace, same user: see
``host_identity``) that both have shared memory on say so in every message header
(``"host": "<machine>/<pid>"``; ``wire/codec.py``); two servers of one process keep to
tcp between them (the pid tells), as their memory is shared already. A sender that has heard it from a peer writes each tensor
of ``THRESHOLD`` bytes or more once into a memfd segment (``SegmentPool.write``) and sends
the descriptor ``{"dtype", "shape", "parts": 0, "shm": [pid, fd, inode]}`` instead of its
bytes. The receiver (``attach``) opens ``/proc/<pid>/fd/<fd>``, checks that it is a zmtf
segment of that inode and big enough, maps it copy-on-write and hands out a read-only array
over the mapping: no copy on the receiving side. A consumer that must own a writable array
(the remote client's fetches) unlocks it instead of copying: a write then copies only the
pages it touches, into its own private ones.

Lifetimes. A memfd has no name: nothing can be left behind in ``/dev/shm``, and the kernel
frees a segment when the last descriptor and mapping of it close, whichever process dies.
The first 4 KiB of a segment are its state, written by the receiver: 1 once it has mapped
the segment, 2 once the array over the mapping was dropped. The sender reuses a segment
whose state is 2 (its pages are already faulted in), closes its own descriptor of one taken
but kept (state 1) after ``KEPT_SECS`` and of one never taken (its receiver died, or the
message was lost) after ``UNCLAIMED_SECS``, and closes free segments idle for ``IDLE_SECS``.
A background thread does that sweep while any segment is open.

Off with ``ZMTF_SHARED_MEMORY=0``, ``set_enabled(False)`` or a server's
``--no-shared-memory``: the process then announces no host, so peers send it everything
over the socket, and it sends nothing through shared memory either.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import stat
import threading
import time
import weakref
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire import tensors as wire_tensors

log = logging.getLogger("zmtf.distributed")

THRESHOLD = 1 << 20      # smaller tensors go over the socket: a segment costs two syscalls
HEADER = 4096            # the state page; the tensor starts page-aligned after it
NAME = "zmtf-shm"        # memfd name: /proc/<pid>/fd/<fd> reads "/memfd:zmtf-shm (deleted)"
TAKEN, RELEASED = b"\x01", b"\x02"
#: madvise(MADV_POPULATE_READ), Linux 5.14: map the segment's pages now, in one call, without
#: breaking copy-on-write (MAP_POPULATE on a private writable mapping would copy every page)
MADV_POPULATE_READ = 22
IDLE_SECS = 2.0          # a free segment unused this long is closed
KEPT_SECS = 2.0          # a receiver keeping the array this long: give up reusing the segment
UNCLAIMED_SECS = 10.0    # never mapped this long: the receiver died or the message was lost
MAX_FREE_BYTES = 1 << 30


def host_identity() -> str | None:
    """This machine, network namespace and user as one token; None where /proc lacks them."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return None
    return hashlib.sha1(f"{boot}:{netns}:{os.getuid()}".encode()).hexdigest()[:20]


def _available() -> bool:
    if not hasattr(os, "memfd_create") or not hasattr(mmap.mmap, "madvise"):
        return False
    try:
        os.close(os.memfd_create(NAME, os.MFD_CLOEXEC))
    except OSError:
        return False
    return True


def set_enabled(on: bool) -> None:
    """Turn the fast path on or off for this process (off: it announces no host identity)."""
    machine = host_identity() if on and _available() else None
    shared = wire_tensors.SHARED
    shared.machine = None if machine is None else f"{machine}/"
    shared.host = None if machine is None else f"{machine}/{os.getpid()}"
    shared.attach = attach if machine is not None else None


def enabled() -> bool:
    return wire_tensors.SHARED.host is not None


def writer_for(endpoint: str) -> Any:
    """The segment writer a socket to ``endpoint`` may use, or None (in-process sockets
    share memory already; off: None)."""
    if not enabled() or endpoint.startswith("inproc://"):
        return None
    return POOL.write


# ---- receiving ---------------------------------------------------------------------------
def attach(index: int, shm: Any, dtype: np.dtype, shape: list[int], nbytes: int) -> np.ndarray:
    """A read-only array over the segment ``shm`` = [pid, fd, inode] names; every fact the
    descriptor states is checked first (InvalidArgumentError otherwise)."""
    what = f"tensor {index} ({dtype.name}{shape})"
    if (type(shm) is not list or len(shm) != 3
            or any(type(v) is not int or not 0 <= v < 2**31 for v in shm[:2])
            or type(shm[2]) is not int or not 0 <= shm[2] < 2**63):
        raise InvalidArgumentError(f"{what}: shm must be [pid, fd, inode] ints, got "
                                   f"{wire_tensors.short_repr(shm)}")
    pid, number, inode = shm
    path = f"/proc/{pid}/fd/{number}"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as error:
        raise InvalidArgumentError(
            f"{what}: shared-memory segment {pid}/{number} cannot be opened ({error.strerror}); "
            f"its sender exited or gave it up") from None
    try:
        info = os.fstat(fd)
        if (info.st_ino != inode or not stat.S_ISREG(info.st_mode)
                or info.st_size < HEADER + nbytes
                or not os.readlink(path).startswith(f"/memfd:{NAME}")):
            raise InvalidArgumentError(
                f"{what}: {path} is not the zmtf shared-memory segment of inode {inode} and "
                f"{nbytes} bytes the descriptor names")
        # private: the sender reuses the segment only once this mapping is gone (state 2),
        # so it never changes under us, and a consumer's writes stay its own
        mapping = mmap.mmap(fd, HEADER + nbytes, flags=mmap.MAP_PRIVATE,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            mapping.madvise(MADV_POPULATE_READ)
        except OSError:
            pass   # an older kernel: the pages are mapped on first touch instead
        os.pwrite(fd, TAKEN, 0)
    except OSError as error:
        os.close(fd)
        raise InvalidArgumentError(f"{what}: cannot map shared-memory segment {path}: "
                                   f"{error.strerror}") from None
    except BaseException:
        os.close(fd)
        raise
    weakref.finalize(mapping, _release, fd)
    array = np.frombuffer(mapping, dtype=dtype, count=nbytes // dtype.itemsize,
                          offset=HEADER).reshape(shape)
    if dtype.kind == "b" and nbytes and array.view(np.uint8).max() > 1:
        raise InvalidArgumentError(f"{what}: bool bytes must be 0 or 1")
    array.flags.writeable = False   # a decoded tensor is a value (wire/tensors.py)
    return array


def _release(fd: int) -> None:
    """The array over a segment is gone: tell the sender it may reuse it, close ours."""
    try:
        os.pwrite(fd, RELEASED, 0)
    except OSError:
        pass
    os.close(fd)


# ---- sending -----------------------------------------------------------------------------
class _Segment:
    __slots__ = ("fd", "inode", "capacity", "mapping", "since")

    def __init__(self, capacity: int) -> None:
        self.fd = os.memfd_create(NAME, os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, HEADER + capacity)
            self.mapping = mmap.mmap(self.fd, HEADER + capacity)
        except BaseException:
            os.close(self.fd)
            raise
        self.inode = os.fstat(self.fd).st_ino
        self.capacity = capacity
        self.since = 0.0

    def state(self) -> int:
        return self.mapping[0]

    def close(self) -> None:
        self.mapping.close()
        os.close(self.fd)


class SegmentPool:
    """This process's outgoing segments: lent to a receiver, or free for the next tensor."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[_Segment] = []
        self._lent: list[_Segment] = []
        self._sweeper: threading.Thread | None = None

    def write(self, array: np.ndarray) -> list[int]:
        """Copy ``array`` (any layout) into a segment; its [pid, fd, inode] for the descriptor."""
        nbytes = array.nbytes
        with self._lock:
            self._collect(time.monotonic())
            segment = None
            for i, free in enumerate(self._free):
                if nbytes <= free.capacity <= 2 * nbytes:
                    segment = self._free.pop(i)
                    break
        if segment is None:
            segment = _Segment(nbytes)
        segment.mapping[0] = 0
        out = np.frombuffer(segment.mapping, dtype=array.dtype, count=array.size, offset=HEADER)
        np.copyto(out.reshape(array.shape), array)   # one pass, non-contiguous sources too
        del out
        with self._lock:
            segment.since = time.monotonic()
            self._lent.append(segment)
            if self._sweeper is None:
                self._sweeper = threading.Thread(target=self._sweep, name="zmtf-shm-sweep",
                                                 daemon=True)
                self._sweeper.start()
        return [os.getpid(), segment.fd, segment.inode]

    def open_segments(self) -> int:
        with self._lock:
            return len(self._free) + len(self._lent)

    def _collect(self, now: float) -> None:
        """(Under the lock.) Released segments become free; give up on overdue ones."""
        lent = []
        for segment in self._lent:
            state = segment.state()
            if state == RELEASED[0]:
                segment.since = now
                self._free.append(segment)
            elif now - segment.since >= (KEPT_SECS if state == TAKEN[0] else UNCLAIMED_SECS):
                segment.close()
            else:
                lent.append(segment)
        self._lent = lent
        free, total = [], 0
        for segment in sorted(self._free, key=lambda s: -s.since):
            total += segment.capacity
            if now - segment.since >= IDLE_SECS or total > MAX_FREE_BYTES:
                segment.close()
            else:
                free.append(segment)
        self._free = free

    def _sweep(self) -> None:
        while True:
            time.sleep(0.5)
            with self._lock:
                self._collect(time.monotonic())
                if not self._free and not self._lent:
                    self._sweeper = None
                    return


POOL = SegmentPool()
set_enabled(os.environ.get("ZMTF_SHARED_MEMORY", "1").strip().lower() not in
            {"0", "false", "no", "off"})

__all__ = ["POOL", "THRESHOLD", "attach", "enabled", "host_identity", "set_enabled",
           "writer_for"]
