"""AsyncSession: ``async with AsyncSession() as sess: await sess.run(y)``.

Kernels never run on the event loop: the step starts on a device pool and the loop only
awaits its Future. Nor does other work in proportion to a tensor's size: a big feed that
must be converted is converted on a thread (a big reply is decoded on one, ``reactor``),
and a burst of runs is admitted in slices (``admission``), so the loop keeps ticking.
"""

from __future__ import annotations

import asyncio
import random
import weakref
from typing import Any

from zmtf.formats.config_proto import ConfigProto, RunMetadata, RunOptions, check_session_config
from zmtf.client.admission import Admission, admission_for
from zmtf.client.remote_session import RemoteSessionCore
from zmtf.client.feeds import Feeds, contiguous_feeds, convert_feeds, heavy_feeds, resolve_feeds
from zmtf.client.session_core import LocalSessionCore
from zmtf.framework.device_spec import canonical_name
from zmtf.framework.errors import DeadlineExceededError, OpError
from zmtf.framework.graph import Graph, get_default_graph


def is_local(target: str) -> bool:
    return target in ("", "local")



def check_containers(containers: Any) -> list[str]:
    """Session.reset's ``containers``: None (the default container) or a list of names."""
    if containers is None:
        return []
    if isinstance(containers, (str, bytes)) or not all(isinstance(c, str) for c in containers):
        raise TypeError(f"containers must be a list of container names (str), e.g. ['c0'], "
                        f"got {containers!r}")
    return list(containers)


#: the in-process sessions not closed yet: Session.reset("") resets and closes them all, as
#: TF's reset of its direct sessions does
_local_sessions: weakref.WeakSet[AsyncSession] = weakref.WeakSet()


def _reset_local_sessions(containers: list[str]) -> None:
    """Clear the named containers (the default one, "localhost", for []) of every open
    in-process session, then close those sessions (their next run: RuntimeError)."""
    for sess in list(_local_sessions):
        core = sess.local_core
        if core is None or sess.closed:
            continue
        core.resources.clear_containers(containers or [core.resources.default_container])
        sess.close_blocking()


def attach_op(error: OpError, graph: Graph) -> None:
    """Give an error that names a node its ``op`` and ``node_def``, as TF1's session does."""
    try:
        op = graph.get_operation_by_name(error.node_name or "")
    except (KeyError, ValueError):
        return   # a node the master or a worker added (a _Send, a copy)
    error.op = op
    if error.node_def is None:
        error.node_def = op.node_def


class AsyncSession:
    """A session whose ``run`` is a coroutine; many runs may be in flight at once."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        if config is not None:
            check_session_config(config)   # before anything is made from it
        self._graph = graph or get_default_graph()
        self.target = target
        self._incarnations: list[int] | None = None
        self._infer_shapes = bool(config is not None and config.graph_options.infer_shapes)
        self._remote = None if is_local(target) else RemoteSessionCore(target, self._graph,
                                                                       config or ConfigProto())
        self._core = LocalSessionCore(self._graph, config) if self._remote is None else None
        self._admission: Admission | None = None   # its loop's (a session lives on one loop)
        self.closed = False
        if self._core is not None:
            _local_sessions.add(self)

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def remote_core(self) -> RemoteSessionCore | None:
        """The core of a session on a cluster target; None for an in-process one."""
        return self._remote

    @property
    def local_core(self) -> LocalSessionCore | None:
        """The core of an in-process session; None for one on a cluster target."""
        return self._core

    @property
    def graph_def(self) -> Any:
        """The session's graph as TF's GraphDef protobuf (``graph.as_graph_def()``), as in TF1;
        with each node's ``_output_shapes`` under ``GraphOptions(infer_shapes=True)``."""
        from zmtf.interop import graph_def_io  # noqa: F401  (registers Graph.as_graph_def's exporter)

        return self._graph.as_graph_def(add_shapes=self._infer_shapes)

    async def run(self, fetches: Any, feed_dict: dict | None = None, options: RunOptions | None = None,
                  run_metadata: RunMetadata | None = None, timeout: float | None = None) -> Any:
        """Run the fetches; ``timeout`` (seconds) raises DeadlineExceededError."""
        self.check_open()
        admission = self._admission
        if admission is None:
            admission = self._admission = admission_for(asyncio.get_running_loop())
        turn = admission.admit()
        if turn is not None:   # one of many submitted at once: its slice comes next turn
            await turn
        feeds: Feeds | None = None
        if feed_dict:   # resolved here; converted on a thread when that is long work
            tensors, given = resolve_feeds(self._graph, feed_dict)
            if heavy_feeds(tensors, given):   # (a big array of another dtype, a long list)
                arrays = await asyncio.get_running_loop().run_in_executor(
                    None, contiguous_feeds, tensors, given)
            else:
                arrays = convert_feeds(tensors, given)
            feeds = tensors, arrays
        try:
            if self._remote is not None:
                return await self._remote.run(fetches, feed_dict, options, run_metadata, timeout, feeds)
            assert self._core is not None   # a session without a remote core has a local one
            call = self._core.begin(fetches, feed_dict, options, run_metadata, feeds)
            limit = timeout if timeout is not None else call.timeout
            step_future = self._core.start(call, inline=False)
            future = asyncio.wrap_future(step_future)
            try:
                values = await asyncio.wait_for(future, limit) if limit else await future
            except asyncio.TimeoutError:
                error = DeadlineExceededError(
                    None, None, f"run() did not finish within {limit:.3f} s; the step was aborted "
                    f"(raise the timeout, or look for a slow or blocked node)")
                step_future.abort(error)
                raise error from None
            except asyncio.CancelledError:
                step_future.abort()
                raise
            return self._core.finish(call, values)
        except OpError as error:
            if error.op is None and error.node_name:
                attach_op(error, self._graph)
            raise

    async def list_devices(self) -> list[Any]:
        if self._remote is not None:
            return [DeviceAttributes(d["name"], d["device_type"], d["memory_limit"])
                    for d in await self._remote.list_devices()]
        return self.local_devices()

    def local_devices(self) -> list[Any]:
        if self._core is None:
            raise RuntimeError(f"a session on {self.target!r} has no local devices; "
                               f"use list_devices()")
        if self._incarnations is None:   # TF1: a random non-zero number per device made
            self._incarnations = [random.getrandbits(63) | 1 for _ in self._core.devices]
        return [DeviceAttributes(d.name, d.device_type, d.memory_limit, incarnation)
                for d, incarnation in zip(self._core.devices, self._incarnations)]

    async def reset(self, containers: list[str] | None = None) -> None:
        """Clear the named resource containers on the cluster's tasks (the default one, named
        after each task's job, for none) and close the master's sessions: TF's Session.reset.
        On the in-process target it resets and closes every in-process session."""
        names = check_containers(containers)
        if self._remote is not None:
            await self._remote.reset(names)
        else:
            _reset_local_sessions(names)

    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._remote is not None:
                await self._remote.close()
            else:
                assert self._core is not None   # a session without a remote core has a local one
                self._core.close()

    def close_blocking(self) -> None:
        """``close`` for the sync Session: a remote session is closed over its blocking socket."""
        if not self.closed:
            self.closed = True
            if self._remote is not None:
                self._remote.close_blocking()
            else:
                assert self._core is not None   # a session without a remote core has a local one
                self._core.close()

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class DeviceAttributes:
    """What Session.list_devices() returns, with TF's attribute names (TF1's
    ``session._DeviceAttributes``: the name canonical, ``/cpu:1`` as ``/device:CPU:1``)."""

    __slots__ = ("name", "device_type", "memory_limit_bytes", "incarnation")

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int,
                 incarnation: int = 0) -> None:
        self.name = canonical_name(name)
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes
        self.incarnation = incarnation

    def __repr__(self) -> str:
        return (f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes}, "
                f"{self.incarnation})")
