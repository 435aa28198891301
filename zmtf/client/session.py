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
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from zmtf.client.async_session import AsyncSession, DeviceAttributes, attach_op
from zmtf.client.callables import OptionsCallable, make_callable
from zmtf.client.fetches import register_session_run_conversion_functions  # noqa: F401  (TF1's home of it)
from zmtf.client.partial_run import PartialRuns
from zmtf.formats.config_proto import CallableOptions, ConfigProto, RunMetadata, RunOptions
from zmtf.framework.errors import DeadlineExceededError, OpError
from zmtf.framework.graph import Graph, graph_stack, remove_last, set_default_session_getter


_DeviceAttributes = DeviceAttributes   # TF1's name for it (tensorflow.python.client.session)


class _DefaultSessionStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[Session] = []


_default_sessions = _DefaultSessionStack()


def get_default_session() -> Session | None:
    """The innermost ``with sess.as_default()`` session of this thread, or None."""
    return _default_sessions.stack[-1] if _default_sessions.stack else None


set_default_session_getter(get_default_session)


@contextmanager
def _default_session(session: Session) -> Iterator[Session]:
    """``session`` on top of this thread's default-session stack for the block; leaving it
    while another session entered later is still on top is TF1's "Nesting violated"."""
    stack = _default_sessions.stack
    stack.append(session)
    try:
        yield session
    finally:
        if stack:   # a test harness may have emptied it
            innermost = stack[-1] is session
            remove_last(stack, session)   # left either way: the error is the caller's to fix
            if not innermost:
                raise AssertionError(f"Nesting violated for default stack of {type(session)} objects")


def drop_interactive_sessions() -> None:
    """Take the InteractiveSessions an earlier test left open off this thread's stack (see
    tf.test.TestCase.setUp); closed when collected, like any session nobody holds."""
    _default_sessions.stack[:] = [s for s in _default_sessions.stack
                                  if not isinstance(s, InteractiveSession)]


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
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        if isinstance(target, bytes):
            target = target.decode()
        if target and not isinstance(target, str):
            raise TypeError(f"target must be a string, but got {type(target)}")
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        self._default_cm: Any = None   # first: __del__ reads it if the session is not made
        self._async = AsyncSession(target or "", graph, config)
        self._remote = self._async.remote_core   # None for a local session
        self._core = self._async.local_core
        self._partial_runs = PartialRuns(self._async.graph)

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
        try:
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
        except OpError as error:
            if error.op is None and error.node_name:
                attach_op(error, self.graph)
            raise

    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> str:
        """A handle for a step fed and fetched over several partial_run() calls: ``fetches``
        and ``feeds`` name everything those calls may fetch and feed (each once)."""
        self._async.check_open()
        return self._partial_runs.setup(fetches, feeds)

    def partial_run(self, handle: str, fetches: Any, feed_dict: dict | None = None) -> Any:
        """Feed more of the step of ``handle`` and fetch more of it (see partial_run_setup)."""
        self._async.check_open()
        return self._partial_runs.run(handle, fetches, feed_dict, self.run)

    def make_callable(self, fetches: Any, feed_list: Any = None,
                      accept_options: bool = False) -> Callable[..., Any]:
        """A function that runs ``fetches`` (any structure run() takes): with ``feed_list``
        it takes their values positionally; with ``accept_options``, ``options`` and
        ``run_metadata`` (TF1's Session.make_callable)."""
        return make_callable(self, fetches, feed_list, accept_options)

    def _make_callable_from_options(self, callable_options: CallableOptions) -> OptionsCallable:
        return OptionsCallable(self, callable_options)

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
        with _default_session(self), self.graph.as_default():
            yield self

    def close(self) -> None:
        self._async.close_blocking()

    def __enter__(self) -> Session:
        if self._default_cm is not None:
            raise RuntimeError("Session context managers are not re-entrant. Use "
                               "`Session.as_default()` if you want to enter a session multiple "
                               "times.")
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
            if hasattr(self, "_async"):
                self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


class InteractiveSession(Session):
    """A Session that installs itself as the default session until closed (for shells).

    As in TF1 it stays the default session of its thread until ``close()``, and makes its
    graph the default graph only when one is given; a second one open at once warns."""

    _count_lock = threading.Lock()
    _active_session_count = 0

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        self._entered_graph: Graph | None = None
        self._explicitly_closed = True   # until it is made: a failed __init__ counts nothing
        super().__init__(target, graph, config)
        with InteractiveSession._count_lock:
            if InteractiveSession._active_session_count > 0:
                warnings.warn("An interactive session is already active. This can cause "
                              "out-of-memory errors in some cases. You must explicitly call "
                              "`InteractiveSession.close()` to release resources held by the "
                              "other session(s).", stacklevel=2)
            InteractiveSession._active_session_count += 1
            self._explicitly_closed = False
        # entered without context managers: a dropped session's generator would leave the
        # stacks whenever it is collected, whatever was entered since
        _default_sessions.stack.append(self)
        self._entered_graph = graph
        if graph is not None:
            graph_stack().append(graph)

    def close(self) -> None:
        super().close()
        with InteractiveSession._count_lock:
            if self._explicitly_closed:
                return
            InteractiveSession._active_session_count -= 1
            self._explicitly_closed = True
        remove_last(_default_sessions.stack, self)
        if self._entered_graph is not None:
            remove_last(graph_stack(), self._entered_graph)
