"""A live progress bar for the training examples (tqdm): the cluster's global step against its
target, with tqdm's rate (steps/s of the whole cluster: the global step's rate) and ETA, and
each worker's own steps/s after it.

Workers (threads) only record their counts (``step``); one thread draws (``refresh``), so
tqdm is driven from one place. The bar goes to stderr and only to a terminal: with
``disable=None`` tqdm draws nothing when stderr is a pipe or a file (CI, ``2> log``), so logs
keep only the examples' own lines.
"""

from __future__ import annotations

import threading
import time

from tqdm import tqdm


class ClusterProgress:
    """The global step of a run from ``first`` to ``target``, and every worker's rate."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workers: dict[int, tuple[float, int]] = {}   # task -> (its start, its steps)
        self._range: tuple[int, int] | None = None
        self._global = 0
        self._bar: tqdm | None = None

    def begin(self, first: int, target: int) -> None:
        """The run goes from global step ``first`` (0, or the checkpoint's) to ``target``."""
        with self._lock:
            self._range, self._global = (first, target), first

    def step(self, task: int, steps: int, global_step: int) -> None:
        """Worker ``task`` has run ``steps`` steps; the last one saw ``global_step``."""
        now = time.perf_counter()
        with self._lock:
            start = self._workers.get(task, (now, 0))[0]
            self._workers[task] = (start, steps)
            self._global = max(self._global, global_step)

    def worker_rates(self) -> dict[int, float]:
        now = time.perf_counter()
        with self._lock:
            return {task: steps / max(now - start, 1e-9)
                    for task, (start, steps) in sorted(self._workers.items())}

    def refresh(self) -> None:
        """Draw the bar (created once the run's range is known); tqdm limits how often."""
        with self._lock:
            if self._range is None:
                return
            first, target = self._range
            current = min(self._global, target)
        if self._bar is None:
            self._bar = tqdm(total=target, initial=first, desc="global step", unit="step",
                             disable=None, dynamic_ncols=True, smoothing=0.1)
        rates = " ".join(f"w{task} {rate:.1f}/s" for task, rate in self.worker_rates().items())
        self._bar.set_postfix_str(rates, refresh=False)
        if current > self._bar.n:
            self._bar.update(current - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self.refresh()
            self._bar.close()
            self._bar = None

    @staticmethod
    def write(line: str) -> None:
        """Print a line above the bar (a plain print when no bar is drawn)."""
        tqdm.write(line)
