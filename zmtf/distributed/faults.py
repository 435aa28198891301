"""Fault injection at the transport seam, for the test harness (``zmtf.testing``'s LocalCluster).

A test asks for a task paused, two parties cut off from each other, a task's messages
delayed, or the next messages of a kind lost; the servers of its in-process cluster then
behave so, over their real sockets (inproc://, ipc://, tcp://). Every message between two
parties passes one of the servers' listeners, as a request on its way in or a reply on its
way out, so that is where the rules apply: a listener's ``fault`` is a ``Gate`` while a rule
is set anywhere, and None otherwise (one attribute check per request and per reply: nothing
else on the hot path). Whose a request is comes from the routing id of the channel that sent
it: servers' channels are registered with their task (``owned_by``), every other peer is the
client.

Rules, all reversible (``heal``): a paused task's messages are held (up to ``MAX_HELD``), and
on resume those held for less than the liveness bound go on while older ones are dropped, as
a SIGSTOPped task's ``liveness.PauseWatch`` drops the work its peers already failed; a cut
pair's messages vanish; a delayed task's messages wait ``seconds`` (at most
``MAX_DELAY_SECONDS``) each way; ``drop(kind, count)`` loses the next ``count`` messages of
that class. Peers meet what they would meet on a network: a paused or cut-off peer does not
answer the channel's ping and its calls fail with UnavailableError within the liveness bound
(``Channel`` probes in-process peers too while a table is installed), a lost reply runs into
its call's deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import Any, Callable

from zmtf.distributed import liveness
from zmtf.wire import messages

log = logging.getLogger("zmtf.transport")

#: the party that is no task: every peer whose channel no server of the cluster opened
CLIENT = "client"
#: messages a pause holds; more are dropped (a test that pauses a task under a flood)
MAX_HELD = 10_000
#: the longest delay a test may set (a typo of 1000 for 1 would otherwise hang it)
MAX_DELAY_SECONDS = 60.0
#: the most messages one drop() may take
MAX_DROP_COUNT = 10_000

_KINDS = frozenset(cls.__name__ for cls in vars(messages).values()
                   if isinstance(cls, type) and issubclass(cls, messages.Message)
                   and cls is not messages.Message)


class FaultTable:
    """The rules of this process's clusters, and the listeners and channels they apply to.
    Parties are named by their task's address in the ClusterSpec (unique per cluster), or
    ``CLIENT``. Everything runs on the loop of the servers."""

    def __init__(self) -> None:
        self.paused: set[str] = set()
        self.cut: set[frozenset[str]] = set()
        self.delays: dict[str, float] = {}
        self.drops: dict[str, int] = {}
        self._gates: weakref.WeakKeyDictionary[Any, Gate] = weakref.WeakKeyDictionary()
        self._owners: dict[bytes, str] = {}   # a server channel's routing id -> its task
        self._held: list[tuple[float, str, str, Callable[[], None]]] = []
        self._timers: dict[asyncio.TimerHandle, Callable[[], None]] = {}
        self.users = 0   # clusters that installed it (``install``)

    # ---- who is who ------------------------------------------------------------------------
    def add_listener(self, listener: Any, task: str) -> None:
        gate = Gate(self, listener, task)
        self._gates[listener] = gate
        listener.fault = gate if self.active() else None

    def add_channel(self, routing_id: bytes, task: str) -> None:
        self._owners[routing_id] = task

    def owner(self, routing_id: bytes) -> str:
        return self._owners.get(routing_id, CLIENT)

    # ---- rules -----------------------------------------------------------------------------
    def active(self) -> bool:
        return bool(self.paused or self.cut or self.delays or self.drops)

    def refresh(self) -> None:
        """Set every listener's gate after a rule changed: None when no rule is left."""
        active = self.active()
        for listener, gate in list(self._gates.items()):
            listener.fault = gate if active else None

    def pause(self, task: str) -> None:
        self.paused.add(task)
        self.refresh()

    def resume(self, task: str) -> None:
        self.paused.discard(task)
        self._release_held()
        self.refresh()

    def partition(self, a: str, b: str) -> None:
        if a == b:
            raise ValueError(f"a partition is between two parties; got {a!r} twice")
        self.cut.add(frozenset((a, b)))
        self.refresh()

    def heal(self, a: str | None = None, b: str | None = None) -> None:
        """Remove the partition between ``a`` and ``b``, or every partition."""
        if a is None or b is None:
            self.cut.clear()
        else:
            self.cut.discard(frozenset((a, b)))
        self.refresh()

    def delay(self, task: str, seconds: float) -> None:
        if not 0.0 <= seconds <= MAX_DELAY_SECONDS:   # NaN fails this too
            raise ValueError(f"a delay is between 0 and {MAX_DELAY_SECONDS:g} s; got {seconds!r}")
        if seconds:
            self.delays[task] = float(seconds)
        else:
            self.undelay(task)
        self.refresh()

    def undelay(self, task: str) -> None:
        """No more delay for ``task``; what waits now goes on at once (nothing stays pending)."""
        if self.delays.pop(task, None) is not None and not self.delays:
            timers, self._timers = self._timers, {}
            for handle, release in timers.items():
                handle.cancel()
                release()
        self.refresh()

    def drop(self, kind: str, count: int) -> None:
        if kind not in _KINDS:
            raise ValueError(f"{kind!r} is no message kind; one of: {', '.join(sorted(_KINDS))}")
        if not 1 <= count <= MAX_DROP_COUNT:
            raise ValueError(f"drop count must be in [1, {MAX_DROP_COUNT}]; got {count!r}")
        self.drops[kind] = self.drops.get(kind, 0) + count
        self.refresh()

    def undrop(self, kind: str) -> None:
        self.drops.pop(kind, None)
        self.refresh()

    def forget(self, tasks: set[str]) -> None:
        """A cluster stopped: its rules, held messages and delayed ones go (nothing is sent)."""
        self.paused -= tasks
        self.cut = {pair for pair in self.cut if not pair & tasks}
        for task in tasks:
            self.delays.pop(task, None)
        self._held = [h for h in self._held if h[1] not in tasks and h[2] not in tasks]
        if not self.delays:
            for handle in self._timers:
                handle.cancel()
            self._timers.clear()
        if not self.paused and not self.cut and not self.delays:
            self.drops.clear()   # drops name no task: they end with the last cluster's faults
        self._owners = {r: t for r, t in self._owners.items() if t not in tasks}
        self.refresh()

    def pending(self) -> int:
        """Messages held or delayed now (0 once every fault is healed)."""
        return len(self._held) + len(self._timers)

    # ---- a message on its way --------------------------------------------------------------
    def route(self, source: str, destination: str, kind: str, release: Callable[[], None]) -> bool:
        """True when the rules take the message (lost, held, or delayed: ``release()`` sends
        it on later); False: it goes on now."""
        left = self.drops.get(kind)
        if left is not None:
            if left > 1:
                self.drops[kind] = left - 1
            else:
                self.undrop(kind)
            return True
        if frozenset((source, destination)) in self.cut:
            return True
        if source in self.paused or destination in self.paused:
            if len(self._held) < MAX_HELD:
                self._held.append((time.monotonic(), source, destination, release))
            return True
        wait = self.delays.get(source, 0.0) + self.delays.get(destination, 0.0)
        if wait:
            loop = asyncio.get_running_loop()
            handle = loop.call_later(wait, self._delayed, release)
            self._timers[handle] = release
            return True
        return False

    def _delayed(self, release: Callable[[], None]) -> None:
        for handle, waiting in list(self._timers.items()):
            if waiting is release:
                del self._timers[handle]
                break
        release()

    def _release_held(self) -> None:
        """After a resume: messages no longer held up go on, unless they waited so long that
        their senders have failed them (the liveness bound), as a resumed process drops them."""
        bound, now = liveness.liveness_seconds(), time.monotonic()
        keep, stale = [], 0
        for entry in self._held:
            since, source, destination, release = entry
            if source in self.paused or destination in self.paused:
                keep.append(entry)
            elif now - since >= bound:
                stale += 1
            else:
                release()
        self._held = keep
        if stale:
            log.info("dropped %d message(s) held while a task was paused: they waited longer "
                     "than the liveness bound (%g s), and their senders have failed them",
                     stale, bound)


class Gate:
    """A listener's side of the table: its requests in, its replies out."""

    __slots__ = ("table", "_listener", "task")

    def __init__(self, table: FaultTable, listener: Any, task: str) -> None:
        self.table = table
        self._listener = weakref.ref(listener)
        self.task = task

    def request(self, peer: bytes, message: Any, serve: Callable[[], None]) -> bool:
        """True when a request from ``peer`` is taken; ``serve()`` later serves it."""
        return self.table.route(self.table.owner(peer), self.task, type(message).__name__,
                                self._while_open(serve))

    def reply(self, peer: bytes, reply: Any, send: Callable[[], None]) -> bool:
        """True when a reply to ``peer`` is taken; ``send()`` later sends it."""
        return self.table.route(self.task, self.table.owner(peer), type(reply).__name__,
                                self._while_open(send))

    def _while_open(self, action: Callable[[], None]) -> Callable[[], None]:
        def release() -> None:
            listener = self._listener()
            if listener is not None and not listener.closed:
                action()
        return release


_TABLE: FaultTable | None = None


def install() -> FaultTable:
    """This process's table, made by the first cluster that asks (``uninstall`` when it stops)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = FaultTable()
    _TABLE.users += 1
    return _TABLE


def uninstall(tasks: set[str]) -> None:
    """A cluster stopped: its faults go; the last one to stop removes the table."""
    global _TABLE
    if _TABLE is None:
        return
    _TABLE.forget(tasks)
    _TABLE.users -= 1
    if _TABLE.users <= 0:
        _TABLE = None


def installed() -> bool:
    """Whether a test harness may inject faults in this process (then in-process peers are
    probed for liveness too: a paused one must be found out)."""
    return _TABLE is not None


def listening(listener: Any, task: str) -> None:
    """A server of ``task`` opened ``listener`` (a no-op without a harness)."""
    if _TABLE is not None:
        _TABLE.add_listener(listener, task)


def owned_by(routing_id: bytes, task: str) -> None:
    """A server of ``task`` opened a channel with ``routing_id`` (a no-op without a harness)."""
    if _TABLE is not None:
        _TABLE.add_channel(routing_id, task)


__all__ = ["CLIENT", "FaultTable", "Gate", "MAX_DELAY_SECONDS", "MAX_DROP_COUNT", "MAX_HELD",
           "install", "installed", "listening", "owned_by", "uninstall"]
