"""TF1's small loop helpers: ``tf.train.LooperThread`` and ``tf.train.basic_train_loop``."""

from __future__ import annotations

import threading
from typing import Any, Callable

from zmtf.framework.errors import AbortedError


class LooperThread(threading.Thread):
    """A thread that calls ``target`` (or ``run_loop``) every ``timer_interval_secs``
    seconds, or back to back when that is None, until the coordinator says stop; an
    exception stops the coordinator, which reports it to whoever joins it."""

    def __init__(self, coord: Any, timer_interval_secs: float | None, target: Callable[..., Any] | None = None,
                 args: Any = None, kwargs: Any = None) -> None:
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        super().__init__(daemon=True)
        self._coord, self._interval = coord, timer_interval_secs
        self._target_fn, self._args, self._kwargs = target, tuple(args or ()), dict(kwargs or {})
        coord.register_thread(self)

    @classmethod
    def loop(cls, coord: Any, timer_interval_secs: float | None, target: Callable[..., Any],
             args: Any = None, kwargs: Any = None) -> LooperThread:
        """Start a LooperThread that calls ``target(*args, **kwargs)`` and return it."""
        looper = cls(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._interval is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                # wait_for_stop returns True once a stop is requested: the timer and the
                # stop signal in one call, so a stop never waits out a long interval
                while not self._coord.wait_for_stop(self._interval):
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once before the first ``run_loop``."""

    def stop_loop(self) -> None:
        """Called once after the last ``run_loop``."""

    def run_loop(self) -> None:
        if self._target_fn is not None:
            self._target_fn(*self._args, **self._kwargs)


def basic_train_loop(supervisor: Any, train_step_fn: Callable[..., Any], args: Any = None,
                     kwargs: Any = None, master: str = "") -> None:
    """Call ``train_step_fn(sess, *args, **kwargs)`` in a ``supervisor.managed_session`` until
    the supervisor says stop; an AbortedError (a task restarted) starts a new session."""
    args, kwargs = list(args or ()), dict(kwargs or {})
    retry = True
    while retry:
        retry = False
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
        except AbortedError:
            retry = True
