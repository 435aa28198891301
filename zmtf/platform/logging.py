"""``tf.logging``: TF1's logging functions, onto Python's logger "tensorflow" (the name TF1
used, so existing logging configuration applies). INFO is shown once set_verbosity asks."""

from __future__ import annotations

import logging as _logging
import sys
from typing import Any

DEBUG, INFO, WARN, ERROR, FATAL = _logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR, _logging.FATAL
_log = _logging.getLogger("tensorflow")
if not _log.handlers:
    _handler = _logging.StreamHandler(sys.stderr)
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _log.addHandler(_handler)
    _log.propagate = False
    _log.setLevel(WARN)


def set_verbosity(level: int) -> None:
    _log.setLevel(level)


def get_verbosity() -> int:
    return _log.getEffectiveLevel()


def debug(msg: Any, *args: Any) -> None:
    _log.debug(msg, *args)


def info(msg: Any, *args: Any) -> None:
    _log.info(msg, *args)


def warning(msg: Any, *args: Any) -> None:
    _log.warning(msg, *args)


warn = warning


def error(msg: Any, *args: Any) -> None:
    _log.error(msg, *args)


def fatal(msg: Any, *args: Any) -> None:
    _log.critical(msg, *args)


def log(level: int, msg: Any, *args: Any) -> None:
    _log.log(level, msg, *args)


__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "WARN", "debug", "error", "fatal", "get_verbosity",
           "info", "log", "set_verbosity", "warn", "warning"]
