"""LoopThread: an asyncio loop in a daemon thread, for the sync faces (Server, Session)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine


class LoopThread:
    """Runs one event loop on its own thread; ``call`` submits a coroutine and waits."""

    def __init__(self, name: str = "zmtf-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coro`` on the loop and return its result (from any other thread)."""
        if not self._thread.is_alive():
            coro.close()
            raise RuntimeError("zmtf's event loop thread has stopped (interpreter shutting down?)")
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(
                "a blocking zmtf call was made on zmtf's own event loop thread and would "
                "deadlock; use `await AsyncSession.run(...)` there")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def stop(self) -> None:
        """Stop the loop (cancelling its tasks) and join the thread."""
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout=10)
