"""The same-host fast path: big tensors travel through memfd segments, not over the socket.

Two zmtf processes on one machine (same boot, same network namespace, same user: see
``host_identity``) that both have shared memory on say so in every message header
(``"host": "<machine>/<pid>"``; ``wire/codec.py``); two servers of one process keep to
tcp between them (the pid tells), as their memory is shared already. A sender that has
heard it from a peer writes each tensor of ``THRESHOLD`` bytes or more once into a memfd
segment (``SegmentPool.write``) and sends the descriptor ``{"dtype", "shape", "parts": 0,
"shm": [pid, fd, inode]}`` instead of its bytes. The receiver (``Mappings.attach``) opens
``/proc/<pid>/fd/<fd>``, checks that it is a zmtf segment of that inode and big enough,
maps it shared and read-only and hands out a read-only array over the mapping: no copy on
the receiving side. It keeps the mapping while the sender keeps the segment: the sender
writes its next tensor of that size into the same segment, so a step that reads a big
variable again costs one copy on the sender and nothing else (no open, no page faults, no
unmap). A consumer that must own a writable array (the remote client's fetches) gets a
private copy-on-write mapping instead (``unlocked``): a write copies only the pages it
touches.

A big variable read again unchanged is not even copied: the segment that holds its last copy
is sent again once its receiver is done with it (``SegmentPool._unchanged``). Every kernel
that writes a stored array does so under the variable's lock, which counts its holds
(``runtime/resources.VariableLock``); a copy made while that count stood still and even is
the variable's value until the count moves (``stored_version``).

Big tensors are copied into their segments off the event loop (``OFF_LOOP_COPY_BYTES``):
the message waits in its socket's outbox until the copy is done (``take_copies``,
``distributed/reactor.py``), so a loop sending 256 MB keeps ticking, as it does over tcp.

Lifetimes. A memfd has no name: nothing can be left behind in ``/dev/shm``, and the kernel
frees a segment when the last descriptor and mapping of it close, whichever process dies.
The first 4 KiB of a segment are its state, written by the receiver: 1 while an array over
it is in use, 2 once the last one was dropped. The sender rewrites a segment only in state
2 (so a value never changes under its reader; its pages are faulted in already), closes
its own descriptor of one taken but kept (state 1) after ``KEPT_SECS`` and of one never
taken (its receiver died, or the message was lost) after ``UNCLAIMED_SECS``, and closes
free segments idle for ``IDLE_SECS``. The receiver unmaps a segment unused for
``IDLE_SECS``. A background thread does both sweeps while any segment is open or mapped.

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
from asyncio import _get_running_loop as _running_loop
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.runtime.resources import stored_version
from zmtf.wire import tensors as wire_tensors

log = logging.getLogger("zmtf.distributed")

THRESHOLD = 1 << 20      # smaller tensors go over the socket: a segment costs two syscalls
HEADER = 4096            # the state page; the tensor starts page-aligned after it
NAME = "zmtf-shm"        # memfd name: /proc/<pid>/fd/<fd> reads "/memfd:zmtf-shm (deleted)"
TAKEN, RELEASED = b"\x01", b"\x02"
IDLE_SECS = 2.0          # a free segment unused this long is closed
KEPT_SECS = 2.0          # a receiver keeping the array this long: give up reusing the segment
UNCLAIMED_SECS = 10.0    # never mapped this long: the receiver died or the message was lost
MAX_FREE_BYTES = 1 << 30
#: a copy this big (~2 ms and up) into a segment leaves the event loop for a thread
OFF_LOOP_COPY_BYTES = 16 << 20


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
    if not hasattr(os, "memfd_create"):
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
class _Mapped:
    """A sender's segment as mapped here. It stays mapped between uses: the sender writes
    its next tensor of that size into the same segment, which then costs no open, no page
    faults and no unmap here (about half of a 64 MiB step's time otherwise)."""

    __slots__ = ("fd", "mapping", "size", "uses", "since")

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        # shared and read-only: every use sees what the sender wrote for it; nobody here can
        # write to it (a consumer that needs a writable array gets a private mapping)
        self.mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        self.uses, self.since = 0, 0.0


class Mappings:
    """The segments this process has mapped, by (sender pid, inode); one lock for the loop
    threads that decode and the threads where arrays are dropped."""

    def __init__(self) -> None:
        self._lock = threading.RLock()   # reentrant: a release may run from GC inside attach
        self._kept: dict[tuple[int, int], _Mapped] = {}
        self._uses: dict[int, tuple[weakref.ref[np.ndarray], _Mapped]] = {}  # by id(flat)
        self._closing: list[_Mapped] = []   # unmapped once the last array over them is gone

    def attach(self, index: int, shm: Any, dtype: np.dtype, shape: list[int],
               nbytes: int) -> np.ndarray:
        """A read-only array over the segment ``shm`` = [pid, fd, inode] names; every fact the
        descriptor states is checked first (InvalidArgumentError otherwise)."""
        what = f"tensor {index} ({dtype.name}{shape})"
        if (type(shm) is not list or len(shm) != 3
                or any(type(v) is not int or not 0 <= v < 2**31 for v in shm[:2])
                or type(shm[2]) is not int or not 0 <= shm[2] < 2**63):
            raise InvalidArgumentError(f"{what}: shm must be [pid, fd, inode] ints, got "
                                       f"{wire_tensors.short_repr(shm)}")
        pid, number, inode = shm
        with self._lock:
            segment = self._kept.get((pid, inode))
            opened = segment is None
            if segment is None:
                segment = self._kept[pid, inode] = _open(what, pid, number, inode, nbytes)
            if segment.size < HEADER + nbytes:
                raise _not_the_segment(what, f"/proc/{pid}/fd/{number}", inode, nbytes)
            segment.uses += 1
            if segment.uses == 1:
                _mark(segment.fd, TAKEN)
            flat = np.frombuffer(segment.mapping, dtype=dtype, count=nbytes // dtype.itemsize,
                                 offset=HEADER)
            self._uses[id(flat)] = (weakref.ref(flat), segment)
        if opened:
            _SWEEPER.start()
        # every view of the array keeps ``flat`` (its base) alive: the use ends with the last
        weakref.finalize(flat, self._release, segment, id(flat))
        array = flat.reshape(shape)
        if dtype.kind == "b" and nbytes and flat.view(np.uint8).max() > 1:
            raise InvalidArgumentError(f"{what}: bool bytes must be 0 or 1")
        return array

    def unlocked(self, array: np.ndarray) -> np.ndarray:
        """A writable array of the same value: over a segment, a private (copy-on-write)
        mapping of it, no copy; the segment stays taken while that mapping lives."""
        base = array.base
        entry = self._uses.get(id(base))
        if (not isinstance(base, np.ndarray) or entry is None or entry[0]() is not base
                or not array.flags.c_contiguous
                or array.ctypes.data != base.ctypes.data):
            return array.copy()
        segment = entry[1]
        with self._lock:
            mapping = mmap.mmap(segment.fd, segment.size, flags=mmap.MAP_PRIVATE,
                                prot=mmap.PROT_READ | mmap.PROT_WRITE)
            segment.uses += 1
        weakref.finalize(mapping, self._release, segment, None)
        return np.frombuffer(mapping, dtype=array.dtype, count=array.size,
                             offset=HEADER).reshape(array.shape)

    def _release(self, segment: _Mapped, key: int | None) -> None:
        """A use is over; the last one tells the sender it may write the segment again."""
        with self._lock:
            if key is not None:
                self._uses.pop(key, None)
            segment.uses -= 1
            if segment.uses == 0:
                segment.since = time.monotonic()
                _mark(segment.fd, RELEASED)

    def collect(self, now: float) -> int:
        """Unmap segments unused for IDLE_SECS (their sender has closed them by then or
        will); the number still mapped."""
        with self._lock:
            idle = [key for key, s in self._kept.items()
                    if not s.uses and now - s.since >= IDLE_SECS]
            gone, self._closing = self._closing + [self._kept.pop(key) for key in idle], []
        for segment in gone:   # munmap outside the lock (ms for big ones; no GIL held)
            try:
                segment.mapping.close()
            except BufferError:   # an array over it is still being torn down: next sweep
                with self._lock:
                    self._closing.append(segment)
                continue
            os.close(segment.fd)
        with self._lock:
            return len(self._kept) + len(self._closing)


def _open(what: str, pid: int, number: int, inode: int, nbytes: int) -> _Mapped:
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
            raise _not_the_segment(what, path, inode, nbytes)
        return _Mapped(fd, info.st_size)
    except OSError as error:
        os.close(fd)
        raise InvalidArgumentError(f"{what}: cannot map shared-memory segment {path}: "
                                   f"{error.strerror}") from None
    except BaseException:
        os.close(fd)
        raise


def _not_the_segment(what: str, path: str, inode: int, nbytes: int) -> InvalidArgumentError:
    return InvalidArgumentError(f"{what}: {path} is not the zmtf shared-memory segment of "
                                f"inode {inode} and {nbytes} bytes the descriptor names")


def _mark(fd: int, state: bytes) -> None:
    try:
        os.pwrite(fd, state, 0)
    except OSError:
        pass


# ---- sending -----------------------------------------------------------------------------
class _Segment:
    # source, version: the stored variable array it holds a copy of and that variable's
    # version (resources.stored_version) during the whole copy; None: anything else
    __slots__ = ("fd", "inode", "capacity", "mapping", "since", "source", "version")

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
        self.source: weakref.ref[np.ndarray] | None = None
        self.version = -1

    def holds(self, array: np.ndarray, version: int) -> bool:
        return (self.source is not None and self.source() is array
                and self.version == version)

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

    def write(self, array: np.ndarray) -> list[int]:
        """Copy ``array`` (any layout) into a segment; its [pid, fd, inode] for the descriptor.
        On an event loop a big copy runs on a thread: see ``take_copies``."""
        nbytes = array.nbytes
        version = stored_version(array)
        with self._lock:
            self._collect(time.monotonic())
            segment = self._unchanged(array, version) if version is not None else None
            copied = segment is None
            if segment is None:
                segment = self._fitting(nbytes)
        if segment is None:
            segment = _Segment(nbytes)
        segment.mapping[0] = 0
        if not copied:   # it holds this variable's value still, and its receiver is done
            pass
        elif nbytes >= OFF_LOOP_COPY_BYTES and _running_loop() is not None:
            copies = _pending.__dict__.setdefault("copies", [])
            copies.append(_copier().submit(_copy, segment, array, version))
        else:
            _copy(segment, array, version)
        with self._lock:
            segment.since = time.monotonic()
            self._lent.append(segment)
        _SWEEPER.start()
        return [os.getpid(), segment.fd, segment.inode]

    def _unchanged(self, array: np.ndarray, version: int) -> _Segment | None:
        """(Under the lock.) A free segment that holds a copy of the stored variable array
        ``array`` made at ``version``, which it still has: sending it again needs no copy.
        Only free ones: the receiver of its last use is done with it, so no reader of it
        counts uses another receiver might end."""
        for i, free in enumerate(self._free):
            if free.holds(array, version):
                return self._free.pop(i)
        return None

    def _fitting(self, nbytes: int) -> _Segment | None:
        """(Under the lock.) A free segment for ``nbytes``, one that holds no variable's
        value (``_unchanged``) first."""
        fits = [i for i, free in enumerate(self._free) if nbytes <= free.capacity <= 2 * nbytes]
        for i in fits:
            source = self._free[i].source
            if source is None or source() is None:
                return self._free.pop(i)
        return self._free.pop(fits[0]) if fits else None

    def open_segments(self) -> int:
        with self._lock:
            return len(self._free) + len(self._lent)

    def collect(self, now: float) -> int:
        with self._lock:
            self._collect(now)
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


def _copy(segment: _Segment, array: np.ndarray, version: int | None) -> None:
    """Copy ``array`` into ``segment``; a stored variable's array (``version`` not None) is
    remembered with it when no write to it began or ended during the copy (seqlock: see
    resources.VariableLock), so that an unchanged variable is not copied again."""
    segment.source = None
    out = np.frombuffer(segment.mapping, dtype=array.dtype, count=array.size, offset=HEADER)
    np.copyto(out.reshape(array.shape), array)   # one pass, non-contiguous sources too
    if version is not None and stored_version(array) == version:
        segment.source, segment.version = weakref.ref(array), version


_pending = threading.local()   # .copies: big copies started by this thread, not yet sent
_copier_pool: list[ThreadPoolExecutor] = []


def _copier() -> ThreadPoolExecutor:
    if not _copier_pool:
        _copier_pool.append(ThreadPoolExecutor(2, thread_name_prefix="zmtf-shm-copy"))
    return _copier_pool[0]


def take_copies() -> list[Future[None]]:
    """The copies into segments this thread started since it last asked: the messages that
    name those segments must wait for them (a socket's outbox does)."""
    copies: list[Future[None]] | None = _pending.__dict__.pop("copies", None)
    return copies or []


class _Sweeper:
    """One daemon thread that sweeps both sides every 0.5 s while any segment is open. It
    holds no lock while it sweeps, so ``start`` may be called under any lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started_again = False   # something opened since the last sweep counted

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                self._started_again = True
                return
            self._thread = threading.Thread(target=self._run, name="zmtf-shm-sweep",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            if POOL.collect(now) + MAPPINGS.collect(now):
                continue
            with self._lock:   # nothing open: leave, unless a segment came meanwhile
                if not self._started_again:
                    self._thread = None
                    return
                self._started_again = False


POOL = SegmentPool()
MAPPINGS = Mappings()
attach = MAPPINGS.attach
unlocked = MAPPINGS.unlocked
_SWEEPER = _Sweeper()
set_enabled(os.environ.get("ZMTF_SHARED_MEMORY", "1").strip().lower() not in
            {"0", "false", "no", "off"})

__all__ = ["MAPPINGS", "POOL", "THRESHOLD", "attach", "enabled", "host_identity",
           "set_enabled", "take_copies", "unlocked", "writer_for"]
