"""Cross-process GPU shares: ``per_process_gpu_memory_fraction`` as a claim on the card.

TF makes the fraction real by allocating it when the session starts: a third process at
0.4 fails in the driver ("3 x 0.4 > 1", as the seed chapter says). zmtf allocates on
demand, so processes claim their share in a ledger instead: a directory per card holding
one file per process, each locked with ``flock`` for as long as its process lives. A claim
sums the live claims of the others (a file whose lock can be taken belongs to a dead
process and is removed), under a lock on the directory; when the total would pass 1.0 it
is refused with a ResourceExhaustedError that names the holders. The kernel drops a lock
when its process dies, so a crashed process frees its share at once.

The ledger counts zmtf processes only; what other programs hold, the driver decides.
Where: ``ZMTF_GPU_LEDGER_DIR`` or ``<tmp>/zmtf-gpu-ledger-<uid>``. Real cards always use
it; numba's simulated card only when ``ZMTF_GPU_LEDGER_DIR`` is set (tests, examples), so
unrelated simulator runs on one machine do not share a fake card.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import threading
from pathlib import Path

from zmtf.framework.errors import ResourceExhaustedError

_lock = threading.Lock()
_claims: dict[str, tuple[int, float]] = {}   # card key -> (locked fd of our file, fraction)


def ledger_dir() -> Path:
    explicit = os.environ.get("ZMTF_GPU_LEDGER_DIR")
    if explicit:
        return Path(explicit)
    return Path(tempfile.gettempdir()) / f"zmtf-gpu-ledger-{os.getuid()}"


def enabled_for(simulated: bool) -> bool:
    return not simulated or bool(os.environ.get("ZMTF_GPU_LEDGER_DIR"))


def claim(card: str, fraction: float, device: str) -> None:
    """Record that this process may use ``fraction`` of ``card`` (a stable id, e.g. its
    UUID), or raise ResourceExhaustedError if the live claims of others leave less."""
    if fraction <= 0:
        return
    with _lock:
        held = _claims.get(card)
        if held is not None and held[1] >= fraction:
            return
        directory = ledger_dir() / re.sub(r"[^A-Za-z0-9_.-]", "_", card)
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / ".lock", "a+") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)
            holders = _live_claims(directory)
            others = sum(f for _, f in holders)
            if others + fraction > 1.0 + 1e-9:
                listed = ", ".join(f"pid {pid}: {f:g}" for pid, f in holders)
                raise ResourceExhaustedError(
                    None, None,
                    f"{device}: per_process_gpu_memory_fraction {fraction:g} cannot be granted: "
                    f"other zmtf processes hold {others:g} of this card ({listed}), and "
                    f"{others:g} + {fraction:g} > 1. Lower the fraction or stop one of them.")
            fd = held[0] if held is not None else _open_own(directory)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{fraction!r}\n".encode(), 0)
            _claims[card] = (fd, fraction)


def _open_own(directory: Path) -> int:
    fd = os.open(directory / str(os.getpid()), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # ours: nobody else opens it
    return fd


def _live_claims(directory: Path) -> list[tuple[int, float]]:
    """(pid, fraction) of every other process whose claim file is still locked."""
    live = []
    for entry in directory.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fd = os.open(entry, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:   # its process is alive and holds the lock
            try:
                live.append((int(entry.name), float(os.pread(fd, 64, 0).decode().strip() or 0)))
            except ValueError:
                live.append((int(entry.name), 0.0))
        else:                     # nobody holds it: the process died; forget its claim
            entry.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return live


def claimed(card: str) -> float:
    """This process's claim on ``card`` (0 if none)."""
    with _lock:
        held = _claims.get(card)
        return held[1] if held else 0.0
