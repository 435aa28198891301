"""tf.data.experimental.ignore_errors at run time: the map and filter stages before it drop
an element whose function raised, instead of ending the iteration.

TF's IgnoreErrorsDataset retries its input after any error but a cancellation; a Python
generator stage cannot be resumed once an error has passed through it, so here the error
is caught where it arises (the function stage) and that element is skipped. The element is
what TF drops too when the failing function comes directly before ignore_errors; a batch
between them drops only the failing element here (TF drops the whole batch).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np

from zmtf.framework.errors import CancelledError, OpError
from zmtf.framework.log_limits import PeerLogLimiter, clip

log = logging.getLogger("zmtf.data")
_dropped = PeerLogLimiter(log, interval=10.0)   # per iterator and kind of error

Element = list[np.ndarray]
#: decides whether an error drops the element (True) or ends the iteration (False)
Tolerate = Callable[[OpError], bool]


def tolerated_errors(options: Sequence[Any], node: str) -> Tolerate:
    """The rule of an ignore_errors stage (``options``: [log_warning]): every error but a
    cancellation is dropped, and logged as a warning when asked (once per iterator and kind
    of error every 10 s, with the count of the others)."""
    log_warning = bool(options[0]) if options else False

    def tolerated(error: OpError) -> bool:
        if isinstance(error, CancelledError):
            return False
        if log_warning:   # a graph from the network may drop every element: bounded lines
            _dropped.log(logging.WARNING, node, type(error).__name__,
                         "iterator %s: ignore_errors dropped an element: %s", clip(node),
                         clip(str(error), 500))
        return True

    return tolerated


def applied(function: Callable[[Element], Element], element: Element,
            tolerate: Tolerate | None) -> Element | None:
    """``function(element)``, or None when it raised an error ``tolerate`` drops."""
    try:
        return function(list(element))
    except OpError as error:
        if tolerate is None or not tolerate(error):
            raise
        return None
