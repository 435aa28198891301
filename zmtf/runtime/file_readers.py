"""FileReader: the state behind one TF1 reader (tf.TFRecordReader, TextLineReader,
WholeFileReader) on a device, between steps.

A reader reads the records of one file (its "work unit") at a time; when that file is
spent, the next read takes the next file name from a queue of names. That dequeue may have
to wait for a queue runner, so nothing here blocks a thread: reads are served one at a
time in arrival order (TF serializes them with a mutex), and the head read parks a
callback on the queue like any dequeue; when a name arrives the callback goes on serving.
A closed, empty queue ends the read with its OutOfRangeError, which is how training loops
end. ``read_up_to`` stops at the end of a file once it has something, as TF's does, so a
batch never mixes files. A file that fails (missing: NotFoundError; damaged record:
DataLossError) fails that read and is dropped: the next read takes the next name.

It lives in the device's ResourceContainer (resources.py); the kernels are
kernels/cpu/readers.py. Callbacks run after the lock is released (parking.py's rule).
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, OpError
from zmtf.runtime.parking import Done
from zmtf.runtime.record_formats import Format, Record


@dataclass(eq=False, slots=True)
class _Read:
    """One pending read of up to ``count`` records (``scalar``: read(), not read_up_to())."""

    queue: Any
    count: int
    scalar: bool
    done: Done
    keys: list[bytes] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)

    def outputs(self) -> list[np.ndarray]:
        if self.scalar:
            return [_strings((), self.keys), _strings((), self.values)]
        return [_strings((len(self.keys),), self.keys), _strings((len(self.values),), self.values)]


@dataclass(eq=False, slots=True)
class _Arrival:
    """The answer to one dequeue of a file name, and whether its caller stopped waiting."""

    result: tuple[Any, BaseException | None] | None = None
    detached: bool = False


class FileReader:
    """Where one reader stands: its current file, its counters and the reads waiting."""

    resource_kind = "Reader"

    def __init__(self, name: str, op_type: str, records: Format) -> None:
        self.name = name
        self.op_type = op_type
        self._records = records
        self._lock = threading.Lock()
        self._reads: deque[_Read] = deque()
        self._serving = False                      # one thread serves the reads at a time
        self._work: Iterator[Record] | None = None  # the rest of the current file
        self._parked: tuple[_Read, Any, Any] | None = None  # (read, queue, its waiter)
        self.produced = 0
        self.completed = 0

    # ---- what the kernels call ---------------------------------------------------------
    def read(self, queue: Any, count: int, scalar: bool, done: Done) -> _Read | None:
        """``done([keys, values], None)`` once the records are read; the read if it waits."""
        request = _Read(queue, count, scalar, done)
        with self._lock:
            self._reads.append(request)
            serve = not self._serving
            self._serving = True
        if serve:
            self._serve()
        with self._lock:
            return request if request in self._reads else None

    def reset(self) -> None:
        """Forget the current file and the counters (ReaderReset)."""
        with self._lock:
            self._work, self.produced, self.completed = None, 0, 0

    def cancel(self, request: _Read, error: BaseException) -> None:
        """Withdraw a read whose step aborted (and its wait on the queue, if it has one)."""
        with self._lock:
            if request not in self._reads:
                return
            self._reads.remove(request)
            parked = self._parked if self._parked and self._parked[0] is request else None
        request.done(None, error)
        if parked is not None:
            parked[1].cancel(parked[2], error)   # its callback then serves the next read

    def cancel_all(self, error: BaseException) -> None:
        """Fail every waiting read (the session closed or was reset)."""
        with self._lock:
            reads, self._reads = list(self._reads), deque()
            parked, self._parked = self._parked, None
        for request in reads:
            request.done(None, copy.copy(error))
        if parked is not None:
            parked[1].cancel(parked[2], copy.copy(error))

    # ---- serving ----------------------------------------------------------------------
    def _serve(self) -> None:
        """Serve the reads in order until none is left or the first waits for a file name."""
        while True:
            with self._lock:
                if not self._reads:
                    self._serving = False
                    return
                request = self._reads[0]
                error = None
                try:
                    finished = self._fill(request)
                except OpError as failure:   # missing file, damaged record: drop the file
                    self._work, finished, error = None, True, failure
                if finished:
                    self._reads.popleft()
            if finished:
                request.done(None if error else request.outputs(), error)
            elif self._wait_for_work(request):
                return   # the dequeue's callback serves on

    def _fill(self, request: _Read) -> bool:
        """Move records of the current file into ``request`` (under the lock); whether it
        is finished: it has ``count`` records, or the file ended after giving it some."""
        while self._work is not None and len(request.keys) < request.count:
            record = next(self._work, None)
            if record is None:
                self._work = None
                self.completed += 1
                break
            request.keys.append(record[0])
            request.values.append(record[1])
            self.produced += 1
        return len(request.keys) == request.count or bool(request.keys)

    def _wait_for_work(self, request: _Read) -> bool:
        """Dequeue the next file name; True if that waits (the callback serves on later)."""
        arrival = _Arrival()

        def arrived(outputs: Any, error: BaseException | None) -> None:
            with self._lock:
                arrival.result = (outputs, error)
                if not arrival.detached:
                    return   # answered at once: the dequeuing thread goes on
                self._parked = None
            self._start_work(request, outputs, error)
            self._serve()

        waiter = request.queue.dequeue(1, False, arrived)
        with self._lock:
            if arrival.result is None:
                arrival.detached = True
                self._parked = (request, request.queue, waiter)
                return True
        self._start_work(request, *arrival.result)
        return False

    def _start_work(self, request: _Read, outputs: Any, error: BaseException | None) -> None:
        """Make the dequeued name the current file; a dequeue error (OutOfRangeError once the
        queue is closed and empty) or a bad element fails ``request``, if it still waits."""
        if error is None:
            error = self._check_work(outputs)
        with self._lock:
            if error is None:
                self._work = self._records(outputs[0].reshape(()).item())
                return
            pending = bool(self._reads) and self._reads[0] is request
            if pending:
                self._reads.popleft()
        if pending:
            request.done(None, error)

    def _check_work(self, outputs: Any) -> BaseException | None:
        if (len(outputs) != 1 or np.asarray(outputs[0]).dtype != object
                or np.asarray(outputs[0]).size != 1):
            return InvalidArgumentError(
                f"reader '{self.name}' expects a queue of single string elements (file names, "
                f"as tf.train.string_input_producer makes), got components "
                f"{[(np.asarray(o).dtype.name, list(np.shape(o))) for o in outputs]}")
        name = np.asarray(outputs[0]).reshape(()).item()
        if not isinstance(name, bytes):
            return InvalidArgumentError(f"reader '{self.name}' got a file name that is not a "
                                        f"string: {name!r}")
        return None


def _strings(shape: tuple[int, ...], items: list[bytes]) -> np.ndarray:
    """A tf.string array of ``shape`` holding ``items`` (a 0-d one for a scalar)."""
    out = np.empty(shape, object)
    if shape == ():
        out[()] = items[0]
    else:
        out[:] = items
    return out
