"""Which zmq Context serves each inproc:// endpoint in this process.

inproc works only within one libzmq context, so a client connecting to an in-process
server must use that server's Context; servers register theirs here when they bind.
"""

from __future__ import annotations

import threading

import zmq

_contexts: dict[str, zmq.Context] = {}
_lock = threading.Lock()


def register(endpoint: str, context: zmq.Context) -> None:
    with _lock:
        _contexts[endpoint] = context


def unregister(endpoint: str) -> None:
    with _lock:
        _contexts.pop(endpoint, None)


def context_for(endpoint: str) -> zmq.Context | None:
    """The Context serving ``endpoint`` if it is an in-process inproc:// server, else None."""
    with _lock:
        return _contexts.get(endpoint)
