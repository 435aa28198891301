"""Which zmq Context serves each inproc:// endpoint in this process, and which in-process
servers a tcp:// target names.

inproc works only within one libzmq context, so a client connecting to an in-process
server must use that server's Context; servers register theirs here when they bind.

A server listening on tcp:// also listens on a private inproc:// endpoint and registers it
as the alias of its tcp one: a Session in the same process (TF1's ``tf.Session(server.target)``
in a worker's own process) then talks to it through memory, not the loopback network, as
TF's in-process master shortcut does.
"""

from __future__ import annotations

import threading

import zmq

_contexts: dict[str, zmq.Context] = {}
_aliases: dict[str, str] = {}   # tcp:// endpoint of an in-process server -> its inproc:// one
_lock = threading.Lock()


def new_context() -> zmq.Context:
    """A fresh zmq Context for a client that reaches no in-process server (tcp://, ipc://)."""
    return zmq.Context()


def register(endpoint: str, context: zmq.Context) -> None:
    with _lock:
        _contexts[endpoint] = context


def unregister(endpoint: str) -> None:
    with _lock:
        _contexts.pop(endpoint, None)
        for name in [n for n, e in _aliases.items() if e == endpoint]:
            del _aliases[name]


def register_alias(endpoint: str, inproc_endpoint: str) -> None:
    """Let clients of ``endpoint`` (tcp://host:port) in this process use ``inproc_endpoint``."""
    with _lock:
        _aliases[endpoint] = inproc_endpoint


def local_endpoint(endpoint: str) -> str:
    """The inproc:// endpoint of the in-process server at ``endpoint``, else ``endpoint``."""
    with _lock:
        return _aliases.get(endpoint, endpoint)


def context_for(endpoint: str) -> zmq.Context | None:
    """The Context serving ``endpoint`` if it is an in-process inproc:// server, else None."""
    with _lock:
        return _contexts.get(endpoint)
