"""tf.train.Coordinator: one stop flag for a group of threads, and the first error they hit."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Any, Iterator, Sequence

from zmtf.framework.errors import OutOfRangeError

_log = logging.getLogger("zmtf.training")


class Coordinator:
    """``coord.request_stop()`` asks every thread to stop; ``coord.join(threads)`` waits for them.

    An exception passed to ``request_stop`` (or raised inside ``stop_on_exception``) is
    re-raised by ``join``; OutOfRangeError counts as a normal end, as in TF.
    """

    def __init__(self, clean_stop_exception_types: Sequence[type] | None = None) -> None:
        """``clean_stop_exception_types``: errors that end the threads normally (default
        OutOfRangeError; ``[]``, as MonitoredSession passes, makes every error count)."""
        self._clean_stop = tuple((OutOfRangeError,) if clean_stop_exception_types is None
                                 else clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info: tuple[Any, ...] | None = None
        self._registered_threads: set[threading.Thread] = set()
        self._joined = False

    def request_stop(self, ex: BaseException | tuple[Any, ...] | None = None) -> None:
        """Ask the threads to stop; the exception given with the first stop request (unless a
        clean-stop type) is kept for join(). After join() nobody would see it, so, as TF, it is
        raised here instead."""
        with self._lock:
            info = self._exc_info_of(ex)
            if self._joined and info is not None:
                raise info[1].with_traceback(info[2])
            if not self._stop_event.is_set():
                if info is not None and self._exc_info is None:
                    _log.info("Error reported to Coordinator: %s, %s", info[0], info[1])
                    self._exc_info = info
                self._stop_event.set()

    def _exc_info_of(self, ex: BaseException | tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        """(type, value, traceback) of ``ex`` (an exception or a sys.exc_info() tuple); None
        for no exception or a clean-stop one."""
        if ex is None:
            return None
        info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
        if len(info) != 3 or not isinstance(info[1], BaseException):
            try:
                raise ValueError(f"ex must be an exception or a sys.exc_info() tuple: {ex!r:.200}")
            except ValueError as error:
                return (ValueError, error, error.__traceback__)
        return None if isinstance(info[1], self._clean_stop) else info

    def clear_stop(self) -> None:
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        return self._stop_event.wait(timeout)

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """``with coord.stop_on_exception():`` turns an exception into request_stop(ex)."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - recorded for join()
            self.request_stop(sys.exc_info())

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Sequence[threading.Thread] | None = None,
             stop_grace_period_secs: float = 120, ignore_live_threads: bool = False) -> None:
        """Wait for stop, then for the threads; re-raise the recorded exception, if any."""
        with self._lock:
            threads = list(self._registered_threads | set(threads or ()))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.05):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            exc_info = self._exc_info
        if exc_info is not None:
            raise exc_info[1].with_traceback(exc_info[2])
        if alive and not ignore_live_threads:
            raise RuntimeError(
                f"Coordinator stopped with threads still running: {' '.join(alive)}. A thread "
                f"blocked in Session.run (a queue runner waiting in a dequeue or take_grad) is "
                f"released by closing its session; close it before join(), or pass "
                f"ignore_live_threads=True")

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        with self._lock:
            exc_info = self._exc_info
        if exc_info is not None:
            raise exc_info[1].with_traceback(exc_info[2])

