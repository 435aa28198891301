"""AsyncSession: ``async with AsyncSession() as sess: await sess.run(y)``.

Kernels never run on the event loop: the step starts on a device pool and the loop only
awaits its Future.
"""

from __future__ import annotations

import asyncio
from typing import Any

from zmtf.client.config import ConfigProto, RunMetadata, RunOptions
from zmtf.client.session_core import LocalSessionCore
from zmtf.framework.errors import DeadlineExceededError, UnimplementedError
from zmtf.framework.graph import Graph, get_default_graph


def check_local_target(target: str) -> None:
    if target not in ("", "local"):
        raise UnimplementedError(
            None, None,
            f"Session target '{target}': remote targets (grpc://, zmtf://, tcp://) need the "
            f"cluster runtime, which this build of zmtf does not have yet; use a local "
            f"session (target '').")


class AsyncSession:
    """A session whose ``run`` is a coroutine; many runs may be in flight at once."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        check_local_target(target)
        self._graph = graph or get_default_graph()
        self._core = LocalSessionCore(self._graph, config)
        self._closed = False

    @property
    def graph(self) -> Graph:
        return self._graph

    async def run(self, fetches: Any, feed_dict: dict | None = None, options: RunOptions | None = None,
                  run_metadata: RunMetadata | None = None, timeout: float | None = None) -> Any:
        """Run the fetches; ``timeout`` (seconds) raises DeadlineExceededError."""
        self._check_open()
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

    def list_devices(self) -> list[Any]:
        return [_DeviceAttributes(d.name, d.device_type, d.memory_limit) for d in self._core.devices]

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._core.close()

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class _DeviceAttributes:
    """What Session.list_devices() returns, with TF's attribute names."""

    __slots__ = ("name", "device_type", "memory_limit_bytes", "incarnation")

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int) -> None:
        self.name = name
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes
        self.incarnation = 0

    def __repr__(self) -> str:
        return f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes})"
