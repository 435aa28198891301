"""Who sent a request, and what that sender may ask: task keys versus client keys.

Under CURVE each connection carries the identity of the key it authenticated with (the ZAP
User-Id, "task:ps-0" or "client:alice": see ``security``). A task accepts the task-to-task
messages (RegisterGraph, RunGraph, PushTensor, ...) only from task keys: a client key may
speak the client protocol to a master and nothing else, so holding a client key no longer
means running partitions or pushing tensors into another job's step. Without CURVE there
are no identities (``sender`` is None) and nothing here applies: plaintext stays as it was.

Pure logic (no sockets), shared by the server's dispatch and its quotas.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from zmtf.framework.errors import PermissionDeniedError, ResourceExhaustedError
from zmtf.wire import messages as m

TASK, CLIENT = "task", "client"


@dataclass(frozen=True, slots=True)
class Sender:
    """The identity of a request's connection: a task or a client, and its name."""

    role: str   # TASK or CLIENT
    name: str   # "ps-0" (job-index) for a task, the client's name otherwise

    @property
    def is_task(self) -> bool:
        return self.role == TASK

    def __str__(self) -> str:
        return f"{self.role} key {self.name!r}"


@functools.lru_cache(maxsize=1024)   # one per admitted key: the directory bounds it
def sender(user_id: str | None) -> Sender:
    """The Sender a ZAP User-Id names. Anything else (none, or a form this server never
    gives) is a client: the least a key may do."""
    role, _, name = (user_id or "").partition(":")
    return Sender(TASK, name) if role == TASK and name else Sender(CLIENT, name or "?")


def is_task(sender: Sender | None) -> bool:
    """Whether a request came from a task key (None: no CURVE, no identities: False).

    Session.reset (``Reset``) is allowed for a task key whatever the server's reset
    permission says: a master fans a reset out to its peers with its task key."""
    return sender is not None and sender.role == TASK


#: what a client key may ask a master; every other request (RegisterGraph, RunGraph,
#: PushTensor, CleanupStep, DeregisterGraph, and any added later) is for task keys only
CLIENT_MESSAGES: frozenset[type[m.Message]] = frozenset({
    m.CreateSession, m.ExtendSession, m.RunStep, m.CloseSession, m.CancelStep, m.Reset,
    m.ListDevices, m.Ping, m.StatusRequest,
})


def check_message(message_type: type[m.Message], sender: Sender) -> None:
    """PermissionDeniedError when a client key sends a task-to-task message."""
    if sender.role != TASK and message_type not in CLIENT_MESSAGES:
        raise PermissionDeniedError(None, None, (
            f"{message_type.__name__} is a task-to-task message and came from {sender}: only "
            f"the cluster's task keys may send it (clients speak CreateSession/RunStep/... to a "
            f"master); a task must connect with its own credential (--curve-key)"))


class SessionQuota:
    """Sessions open per client identity on one master (``max_sessions_per_client``).

    A session counts from the moment its CreateSession is admitted (so that concurrent
    ones cannot all slip under the limit) until the master no longer has it (closed, or
    collected by session_gc): ``open`` is asked of the master when the count is checked,
    so no close path has to report here. Task keys are not limited: they are the
    cluster's own processes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sessions: dict[str, set[str]] = {}   # client name -> its open session handles
        self._pending: dict[str, int] = {}         # client name -> CreateSessions being served

    def admit(self, sender: Sender, open_sessions: set[str], server: str) -> None:
        """Reserve a session for ``sender``, or ResourceExhaustedError naming the limit;
        call ``created`` or ``failed`` after."""
        name = sender.name
        owned = self._sessions.get(name)
        if owned is not None:
            owned &= open_sessions   # closed or collected since: no longer counted
            if not owned:
                del self._sessions[name]
        count = len(owned or ()) + self._pending.get(name, 0)
        if self.limit and count >= self.limit:
            raise ResourceExhaustedError(None, None, (
                f"{sender} has {count} sessions open on {server}, the limit "
                f"(max_sessions_per_client={self.limit}); close sessions it no longer uses, or "
                f"start the server with a higher --max-sessions-per-client (0: no limit)"))
        self._pending[name] = self._pending.get(name, 0) + 1

    def created(self, sender: Sender, handle: str) -> None:
        self._release(sender.name)
        self._sessions.setdefault(sender.name, set()).add(handle)

    def failed(self, sender: Sender) -> None:
        self._release(sender.name)

    def _release(self, name: str) -> None:
        left = self._pending.get(name, 0) - 1
        if left > 0:
            self._pending[name] = left
        else:
            self._pending.pop(name, None)


def check_session_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"server setting max_sessions_per_client must be an integer >= 0, not "
                         f"{limit!r}")
    return limit


class SessionOwners:
    """The key that created each session on this master, under CURVE: a client key may name
    only its own sessions. A handle is unguessable, but one read from a log or another
    client's screen must not let a second client run, extend, cancel or close that session."""

    def __init__(self) -> None:
        self._owner: dict[str, Sender] = {}   # session handle -> the key that created it

    def record(self, handle: str, sender: Sender) -> None:
        self._owner[handle] = sender

    def forget(self, handle: str) -> None:
        self._owner.pop(handle, None)

    def check(self, handle: Any, sender: Sender, server: str) -> None:
        """PermissionDeniedError unless ``sender`` (a client key) created session ``handle``
        (a session this master does not know is left to the handler's NotFoundError)."""
        owner = self._owner.get(handle) if type(handle) is str else None
        if owner is not None and owner != sender:
            raise PermissionDeniedError(None, None, (
                f"{sender} named a session that {owner} created on {server}; a client may use "
                f"only the sessions it created (open its own with tf.Session)"))
