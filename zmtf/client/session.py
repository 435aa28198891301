"""Session: TF1's synchronous session, a thin wrapper over AsyncSession's step logic.

It shares AsyncSession's code (local: plan, executor, fetch rebuild; remote: the request
protocol of RemoteSessionCore) and differs only in how it waits: it drives the step on the
calling thread, which is about to block anyway — a local step inline, a remote one over a
blocking socket of that thread — instead of hopping through an event loop thread (that
hop measured 130-170 us per run here).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from zmtf.client.async_session import AsyncSession, DeviceAttributes
from zmtf.formats.config_proto import ConfigProto, RunMetadata, RunOptions
from zmtf.framework.errors import DeadlineExceededError
from zmtf.framework.graph import Graph, set_default_session_getter


class _DefaultSessionStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[Session] = []


_default_sessions = _DefaultSessionStack()


def get_default_session() -> Session | None:
    """The innermost ``with sess.as_default()`` session of this thread, or None."""
    return _default_sessions.stack[-1] if _default_sessions.stack else None


set_default_session_getter(get_default_session)


def _refuse_inside_running_loop() -> None:
    """A blocking network call inside a running event loop would freeze it: say what to use."""
    if asyncio._get_running_loop() is None:
        return
    raise RuntimeError(
        "Session.run() on a remote target was called from a running asyncio event loop and "
        "would block it for the whole step; use `async with zmtf.AsyncSession(target) as "
        "sess: await sess.run(...)` there (a local Session() is fine: it runs in-process).")


class Session:
    """``with tf.Session(config=config) as sess: sess.run(fetches, feed_dict)``."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        self._async = AsyncSession(target, graph, config)
        self._remote = self._async.remote_core   # None for a local session
        self._core = self._async.local_core
        self._default_cm: Any = None

    @property
    def graph(self) -> Graph:
        return self._async.graph

    @property
    def graph_def(self) -> Any:
        return self._async.graph_def

    @property
    def sess_str(self) -> str:
        """The target this session was opened on ("" for a local one), as in TF1."""
        return self._async.target

    def run(self, fetches: Any, feed_dict: dict | None = None, options: RunOptions | None = None,
            run_metadata: RunMetadata | None = None) -> Any:
        """Run the fetches (tensor, op, name, or a nest of them) and return their values."""
        if self._async.closed:
            self._async.check_open()   # raises
        if self._remote is not None:
            # asyncio's own getter, the one that returns None rather than raising: this is
            # every remote run's path, and a raise-and-catch per run would be its cost
            if asyncio._get_running_loop() is not None:
                _refuse_inside_running_loop()   # raises
            return self._remote.run_blocking(fetches, feed_dict, options, run_metadata)
        assert self._core is not None   # a session without a remote core has a local one
        call = self._core.begin(fetches, feed_dict, options, run_metadata)
        # With a deadline the step runs on a pool thread so this thread can stop waiting.
        future = self._core.start(call, inline=call.timeout is None)
        try:
            values = future.result(call.timeout)
        except concurrent.futures.TimeoutError:
            error = DeadlineExceededError(
                None, None, f"run() did not finish within {call.timeout:.3f} s (RunOptions."
                f"timeout_in_ms); the step was aborted: no further nodes of it will run")
            future.abort(error)
            raise error from None
        return self._core.finish(call, values)

    def list_devices(self) -> list[Any]:
        if self._remote is not None:
            return [DeviceAttributes(d["name"], d["device_type"], d["memory_limit"])
                    for d in self._remote.list_devices_blocking()]
        return self._async.local_devices()

    @staticmethod
    def reset(target: str, containers: Any = None, config: ConfigProto | None = None) -> None:
        """Clear the named resource containers (the default one for None) on every task of
        the cluster behind ``target``, and close the sessions of its master (TF)."""
        async def reset() -> None:
            async with AsyncSession(target, config=config) as sess:
                await sess.reset(containers)

        asyncio.run(reset())

    @contextmanager
    def as_default(self) -> Iterator[Session]:
        """Make this the default session (for Tensor.eval / Operation.run) and the graph default."""
        _default_sessions.stack.append(self)
        try:
            with self.graph.as_default():
                yield self
        finally:
            _default_sessions.stack.remove(self)

    def close(self) -> None:
        self._async.close_blocking()

    def __enter__(self) -> Session:
        self._default_cm = self.as_default()
        self._default_cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        cm, self._default_cm = self._default_cm, None
        if cm is not None:
            cm.__exit__(*exc)
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


class InteractiveSession(Session):
    """A Session that installs itself as the default session until closed (for shells)."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        super().__init__(target, graph, config)
        self._default_cm = self.as_default()
        self._default_cm.__enter__()

    def close(self) -> None:
        cm, self._default_cm = self._default_cm, None
        if cm is not None:
            cm.__exit__(None, None, None)
        super().close()
