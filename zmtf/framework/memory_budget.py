"""A server's budget of bytes held for requests in flight: big op outputs of running steps,
and tensors of inbound streams still arriving.

The per-tensor limit (ZMTF_MAX_OUTPUT_BYTES, 4 GiB) bounds one allocation, not their sum:
two concurrent ``tf.fill([900_000_000], 1.0)`` took a worker to 6.8 GB. A ``MemoryBudget``
admits bytes before they are allocated and refuses with ResourceExhaustedError past its
limit; an ``Account`` holds what one step (or one stream) took and gives it all back when
it ends, so a refused request costs nothing and the server keeps serving the others.

Kernels cannot see the step they run for, so the executor names the step's account for the
thread that runs its kernels (``charge_to``), and ``charge`` (called by the kernels' size
check, for outputs of ``CHARGE_MIN_BYTES`` or more only) finds it there. A local session has
no account: nothing is charged, nothing changes. Here (``framework``) because kernels may
import nothing else; pure Python, thread-safe.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from zmtf.framework.errors import ResourceExhaustedError

CHARGE_MIN_BYTES = 1 << 20   # smaller outputs are not worth a lock: the step's count bounds them
SETTING = "max_inflight_bytes"


def physical_memory_bytes() -> int:
    """This machine's memory, or the cgroup's limit when that is lower (a container)."""
    total = 0
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and (not total or int(text) < total):
            total = int(text)
    return total or 8 << 30


def default_limit() -> int:
    """Half of this machine's memory: the other half is for variables, the graph, Python."""
    return physical_memory_bytes() // 2


class MemoryBudget:
    """Bytes admitted against ``limit``; ``take`` refuses past it, ``give`` returns bytes."""

    def __init__(self, limit: int, setting: str = SETTING) -> None:
        self.limit = limit
        self.setting = setting   # the server setting that raises it, named in refusals
        self.held = 0
        self.peak = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int, what: str) -> None:
        """Admit ``nbytes`` for ``what`` (e.g. "output of node 'x'"), or ResourceExhaustedError
        naming the limit and the setting, before anything is allocated."""
        with self._lock:
            if self.held + nbytes > self.limit:
                held = self.held
            else:
                self.held += nbytes
                self.peak = max(self.peak, self.held)
                return
        raise ResourceExhaustedError(
            None, None,
            f"{what} needs {nbytes:,} bytes, but this server already holds {held:,} bytes for "
            f"requests in flight, and its limit is {self.limit:,} bytes ({self.setting}); "
            f"retry when fewer requests run, or raise --{self.setting.replace('_', '-')}")

    def give(self, nbytes: int) -> None:
        with self._lock:
            self.held -= nbytes


class Account:
    """What one step or stream took from a budget; ``close`` gives it all back (once)."""

    __slots__ = ("budget", "held", "closed", "_lock")

    def __init__(self, budget: MemoryBudget) -> None:
        self.budget = budget
        self.held = 0
        self.closed = False
        self._lock = threading.Lock()

    def charge(self, nbytes: int, what: str) -> None:
        """Take ``nbytes`` from the budget for this step (or refuse); a closed account (its
        step already failed, a kernel of it still running) charges nothing."""
        with self._lock:
            if self.closed:
                return
            self.budget.take(nbytes, what)
            self.held += nbytes

    def close(self) -> None:
        with self._lock:
            held, self.held, self.closed = self.held, 0, True
        if held:
            self.budget.give(held)


_current = threading.local()


def charge_to(account: Account | None) -> Account | None:
    """Kernels run on this thread from now on charge ``account`` (None: nobody); returns
    the one before, to put back (the executor does, around the nodes it runs)."""
    previous = getattr(_current, "account", None)
    _current.account = account
    return previous


def current_account() -> Account | None:
    return getattr(_current, "account", None)


def charge(nbytes: int, what: str) -> None:
    """Charge the account of the step this thread runs, if any (a server's step)."""
    if nbytes >= CHARGE_MIN_BYTES:
        account: Any = getattr(_current, "account", None)
        if account is not None:
            account.charge(nbytes, what)


__all__ = ["Account", "MemoryBudget", "charge", "charge_to", "current_account", "default_limit"]
