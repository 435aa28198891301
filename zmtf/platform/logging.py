"""``tf.logging``: TF1's logging functions, onto Python's logger "tensorflow" (the name TF1
used, so existing logging configuration applies), and in charge of zmtf's own loggers too.

TF1's hooks, savers and session code log through ``tf.logging``; zmtf's log through the
``zmtf.*`` loggers (``zmtf.train``: LoggingTensorHook, ``global_step/sec``, checkpoints). So
``set_verbosity`` sets both "tensorflow" and "zmtf", and both get TF1's handler: stderr, TF1's
format (``INFO:tensorflow:...``; zmtf's lines name their logger, ``INFO:zmtf.train:...``). As
in TF1 nothing is set until asked: the verbosity is the root logger's (WARN by default), and
``logging.basicConfig(level=INFO)`` alone shows INFO too. Unlike TF1, a line is not printed
twice once the root logger has handlers (``basicConfig``): the root's handlers print it.
"""

from __future__ import annotations

import logging as _logging
import sys
from typing import Any

DEBUG, INFO, WARN, ERROR, FATAL = _logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR, _logging.FATAL
_log = _logging.getLogger("tensorflow")
#: the loggers tf.logging's verbosity governs: TensorFlow's, and zmtf's (every ``zmtf.*``)
_GOVERNED = (_log, _logging.getLogger("zmtf"))


class _TFHandler(_logging.Handler):
    """TF1's stderr handler: prints a record unless the root logger's handlers will (the
    record propagates to them), and writes to the ``sys.stderr`` of the moment."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT))

    def emit(self, record: _logging.LogRecord) -> None:
        if _logging.getLogger().handlers and _propagates(record.name):
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging never raises into the caller
            self.handleError(record)


def _propagates(name: str) -> bool:
    """Whether a record of logger ``name`` reaches the root logger's handlers."""
    logger: _logging.Logger | None = _logging.getLogger(name)
    while logger is not None and logger.parent is not None:
        if not logger.propagate:
            return False
        logger = logger.parent
    return True


for _logger in _GOVERNED:
    if not any(isinstance(h, _TFHandler) for h in _logger.handlers):
        _logger.addHandler(_TFHandler())


def set_verbosity(level: int) -> None:
    """The least severe level logged by TensorFlow's and zmtf's loggers."""
    for logger in _GOVERNED:
        logger.setLevel(level)


def get_verbosity() -> int:
    return _log.getEffectiveLevel()


def debug(msg: Any, *args: Any) -> None:
    _log.debug(msg, *args, stacklevel=2)


def info(msg: Any, *args: Any) -> None:
    _log.info(msg, *args, stacklevel=2)


def warning(msg: Any, *args: Any) -> None:
    _log.warning(msg, *args, stacklevel=2)


warn = warning


def error(msg: Any, *args: Any) -> None:
    _log.error(msg, *args, stacklevel=2)


def fatal(msg: Any, *args: Any) -> None:
    _log.critical(msg, *args, stacklevel=2)


def log(level: int, msg: Any, *args: Any) -> None:
    _log.log(level, msg, *args, stacklevel=2)


def vlog(level: int, msg: Any, *args: Any) -> None:
    _log.log(level, msg, *args, stacklevel=2)


def log_if(level: int, msg: Any, condition: bool, *args: Any) -> None:
    if condition:
        _log.log(level, msg, *args, stacklevel=2)


_counts: dict[tuple[str, int], int] = {}   # call site -> calls so far (log_every_n, log_first_n)


def _count_call() -> int:
    """How many times the caller's caller has called before (0 the first time), per call site."""
    frame = sys._getframe(2)
    site = (frame.f_code.co_filename, frame.f_lineno)
    count = _counts.get(site, 0)
    _counts[site] = count + 1
    return count


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log on the 1st call from this line, then every n-th (TF1's)."""
    if _count_call() % max(n, 1) == 0:
        _log.log(level, msg, *args, stacklevel=2)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log the first n calls from this line only."""
    if _count_call() < n:
        _log.log(level, msg, *args, stacklevel=2)


def flush() -> None:
    sys.stderr.flush()


def TaskLevelStatusMessage(msg: Any) -> None:  # noqa: N802 - TF1's name
    error(msg)


__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "TaskLevelStatusMessage", "WARN", "debug", "error",
           "fatal", "flush", "get_verbosity", "info", "log", "log_every_n", "log_first_n", "log_if",
           "set_verbosity", "vlog", "warn", "warning"]
