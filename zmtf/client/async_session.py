"""AsyncSession: ``async with AsyncSession() as sess: await sess.run(y)``.

Kernels never run on the event loop: the step starts on a device pool and the loop only
awaits its Future.
"""

from __future__ import annotations

import asyncio
from typing import Any

from zmtf.formats.config_proto import ConfigProto, RunMetadata, RunOptions
from zmtf.client.remote_session import RemoteSessionCore
from zmtf.client.session_core import LocalSessionCore
from zmtf.framework.errors import DeadlineExceededError
from zmtf.framework.graph import Graph, get_default_graph


def is_local(target: str) -> bool:
    return target in ("", "local")


class AsyncSession:
    """A session whose ``run`` is a coroutine; many runs may be in flight at once."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        self._graph = graph or get_default_graph()
        self.target = target
        self._remote = None if is_local(target) else RemoteSessionCore(target, self._graph,
                                                                       config or ConfigProto())
        self._core = LocalSessionCore(self._graph, config) if self._remote is None else None
        self._infer_shapes = bool(config and config.graph_options.infer_shapes)
        self.closed = False

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
        with ``GraphOptions(infer_shapes=True)`` each node has its ``_output_shapes``."""
        from zmtf.interop import graph_def_io  # noqa: F401  (registers Graph.as_graph_def's exporter)

        return self._graph.as_graph_def(add_shapes=self._infer_shapes)

    async def run(self, fetches: Any, feed_dict: dict | None = None, options: RunOptions | None = None,
                  run_metadata: RunMetadata | None = None, timeout: float | None = None) -> Any:
        """Run the fetches; ``timeout`` (seconds) raises DeadlineExceededError."""
        self.check_open()
        if self._remote is not None:
            return await self._remote.run(fetches, feed_dict, options, run_metadata, timeout)
        assert self._core is not None   # a session without a remote core has a local one
        call = self._core.begin(fetches, feed_dict, options, run_metadata)
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

    async def list_devices(self) -> list[Any]:
        if self._remote is not None:
            return [DeviceAttributes(d["name"], d["device_type"], d["memory_limit"])
                    for d in await self._remote.list_devices()]
        return self.local_devices()

    def local_devices(self) -> list[Any]:
        if self._core is None:
            raise RuntimeError(f"a session on {self.target!r} has no local devices; "
                               f"use list_devices()")
        return [DeviceAttributes(d.name, d.device_type, d.memory_limit) for d in self._core.devices]

    async def reset(self) -> None:
        """Clear every variable on the cluster's tasks (TF's Session.reset)."""
        if self._remote is not None:
            await self._remote.reset()
        else:
            assert self._core is not None   # a session without a remote core has a local one
            self._core.resources.clear()

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
    """What Session.list_devices() returns, with TF's attribute names."""

    __slots__ = ("name", "device_type", "memory_limit_bytes", "incarnation")

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int) -> None:
        self.name = name
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes
        self.incarnation = 0

    def __repr__(self) -> str:
        return f"DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes})"
