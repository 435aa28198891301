"""The messages zmtf processes exchange: one frozen dataclass per kind, plus the kind table.

Each field's annotation names its wire type, and ``SCHEMAS`` turns those names into checks
that run when a message is built, whether by a local caller or by ``codec.decode`` from a
peer's bytes: a message that exists is a valid message. ``id`` matches a reply to its
request (see ``calls.Calls``); the field named ``tensors`` (a list of numpy arrays) never
goes into the msgpack header: the codec moves it to raw frames.

``graph``, ``config`` and ``devices`` hold plain msgpack data (str/int/float/bool/None,
lists, str-keyed maps); only their top level is checked here, their consumers
(``framework.graph_io``, the config parser) validate the rest. Messages whose tensors
list is not empty compare with ``==`` only when they hold the very same arrays.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn

import numpy as np

from zmtf.framework.errors import (
    UNKNOWN,
    InvalidArgumentError,
    OpError,
    error_code_from_exception_type,
    exception_type_from_error,
)
from zmtf.wire.tensors import short_repr

MAX_ID = 2**63  # ids are non-negative int64
MAX_ERROR_MESSAGE = 16 << 10  # characters kept of an error's text

Tensors = list  # list[np.ndarray]; the annotation "Tensors" marks the field the codec frames
_ARRAY_TYPES = (np.ndarray, np.generic)


# Field kinds. ``_compile`` turns each class's schema into straight-line checks of these
# kinds, not a checker function per field or list item: every message built runs them.
_STR, _OPT_STR, _INT, _STR_LIST, _MAP, _MAP_LIST, _ARRAYS, _FLOAT = range(8)
_INT64_MIN, _INT64_END = -(2**63), 2**63

#: annotation -> (field kind, what the error says the value must be)
_CHECKS: dict[str, tuple[int, str]] = {
    "str": (_STR, "a str"),
    "str | None": (_OPT_STR, "a str or None"),
    "int": (_INT, "an int in the int64 range"),
    "float": (_FLOAT, "a finite float"),
    "list[str]": (_STR_LIST, "a list of str"),
    "dict[str, Any]": (_MAP, "a map"),
    "list[dict[str, Any]]": (_MAP_LIST, "a list of maps"),
    # numpy scalars are accepted (a reduction may return one); they decode as 0-d arrays
    "Tensors": (_ARRAYS, "a list of numpy arrays"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """Base of every message: ``id`` pairs a reply with its request (0 until one is assigned)."""

    id: int = 0

    def __post_init__(self) -> None:   # only subclasses outside KINDS (KINDS get ``_compile``'s)
        validate(self)

    @property
    def kind(self) -> str:
        return type(self).__name__


# ---- client <-> master ----------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateSession(Message):
    """Client -> master: a new session on ``graph`` (graph_io dict; its arrays in ``tensors``).
    ``timeout_ms``: how long the master may wait for the tasks the graph names that are not
    up yet (the client's budget; 0: the master's own limit)."""

    graph: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    tensors: Tensors = field(default_factory=list)
    timeout_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionCreated(Message):
    """Master -> client: the handle of the new session."""

    session: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendSession(Message):
    """Client -> master: nodes added to the session's graph since it was sent."""

    session: str
    graph: dict[str, Any]
    tensors: Tensors = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ok(Message):
    """An empty success reply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStep(Message):
    """Client -> master: one ``Session.run``; ``tensors`` are the feed values in ``feeds`` order."""

    session: str
    feeds: list[str] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    # the step's budget, not a time (clocks differ): the master counts it from the arrival
    # (from before a pause of its own, see distributed.liveness); 0: the server's default
    timeout_ms: int = 0
    trace_level: int = 0  # > 0: every task reports when and where each node ran
    # the sender's monotonic clock when sent, in microseconds (0: not stamped): tells the
    # master how much later than usual it arrived (a stalled network; distributed.transit)
    sent_us: int = 0
    partition_graphs: int = 0   # 1: the reply lists the nodes each device ran (RunOptions)
    tensors: Tensors = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStepResult(Message):
    """Master -> client: the fetched values, in ``fetches`` order; ``step_stats`` when traced:
    one map per node run, {"node", "device", "thread": str, "start", "end": wall-clock s};
    ``partition_graphs`` when asked: {"device": str, "nodes": [{"name", "op", "inputs"}]}."""

    step_stats: list[dict[str, Any]] = field(default_factory=list)
    partition_graphs: list[dict[str, Any]] = field(default_factory=list)
    tensors: Tensors = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseSession(Message):
    """Client -> master: forget the session and free its resources."""

    session: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reset(Message):
    """Client -> master: clear the named resource containers (the default one when the list
    is empty, as TF) on every task, and close the master's sessions. Master -> worker:
    ["__local__", *containers], to clear them there only."""

    containers: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListDevices(Message):
    """Client -> master: which devices does the cluster have?"""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceList(Message):
    """Master -> client: one map per device (name, device_type, memory_limit, ...)."""

    devices: list[dict[str, Any]] = field(default_factory=list)


# ---- master -> worker -----------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterGraph(Message):
    """Master -> worker: a partition to run later as ``graph_key``; its arrays in ``tensors``."""

    session: str
    graph_key: str
    graph: dict[str, Any]
    tensors: Tensors = field(default_factory=list)
    isolated: int = 0   # 1: the session keeps its state private (isolate_session_state)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunGraph(Message):
    """Master -> worker: run a registered partition for one step; ``tensors`` are the feeds."""

    session: str
    graph_key: str
    step_id: int   # an aborted step's partitions are refused (CleanupStep may come first)
    feeds: list[str] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    # what is left of the step's budget when it is sent; the worker drops the request if it
    # waited that long before it could start (a pause), and aborts it that long after
    timeout_ms: int = 0
    trace_level: int = 0
    sent_us: int = 0   # the master's clock when sent, as RunStep's
    tensors: Tensors = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunGraphResult(Message):
    """Worker -> master: the partition's fetched values, in ``fetches`` order (and its node
    timings when traced, as RunStepResult's)."""

    step_stats: list[dict[str, Any]] = field(default_factory=list)
    tensors: Tensors = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupStep(Message):
    """Master -> worker: drop whatever the step left behind (rendezvous entries, buffers)."""

    step_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeregisterGraph(Message):
    """Master -> worker: forget a registered partition."""

    session: str
    graph_key: str


# ---- worker <-> worker ----------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RecvTensor(Message):
    """Consumer -> producer: send the tensor of rendezvous ``key`` once step ``step_id`` has it."""

    step_id: int
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorReply(Message):
    """Producer -> consumer: the answer to RecvTensor (one tensor)."""

    tensors: Tensors = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class PushTensor(Message):
    """Producer -> consumer: the tensors of rendezvous ``keys`` (one each, in order), unasked
    (push flow); no reply. One message carries what one step sends one task in one burst."""

    step_id: int
    keys: list[str]
    tensors: Tensors = field(default_factory=list)


# ---- liveness and errors ----------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Ping(Message):
    """Anyone -> a task: are you there?"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pong(Message):
    """The task's name and incarnation (a new number each time the process starts)."""

    task: str
    incarnation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusRequest(Message):
    """Anyone (``python -m zmtf.status``) -> a task: how are you doing?"""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatus(Message):
    """A task -> the asker: its health and load (see ``distributed.task_stats``). Counters
    count since the task started; rates are the task's own, over its last ``window_ms``."""

    task: str
    address: str          # the endpoint it listens on
    version: str          # zmtf's version there
    started_ms: int       # its wall clock when it started, ms since the epoch
    uptime_ms: int        # its monotonic time since then
    devices: list[str] = field(default_factory=list)
    sessions: int = 0     # open on its master
    steps_running: int = 0
    steps: int = 0        # RunSteps it finished as a master
    graphs: int = 0       # RunGraphs (partitions of a step) it finished as a worker
    steps_per_sec: float = 0.0
    graphs_per_sec: float = 0.0
    window_ms: int = 0
    bytes_in: int = 0     # ZeroMQ message bytes received and sent, its sockets to clients and peers
    bytes_out: int = 0
    messages_in: int = 0
    messages_out: int = 0
    rss_bytes: int = 0    # resident memory of its process


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelStep(Message):
    """Client -> master: abort the RunStep with id ``request_id`` (the caller gave up on it)."""

    session: str
    request_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorReply(Message):
    """A failed request: TF's canonical ``code``, the text, and the node that failed if known;
    ``reason`` names a subclass of the code's class the caller dispatches on (see
    ``errors.REASON_TO_CLASS``), None for the plain class."""

    code: int
    message: str
    node: str | None = None
    reason: str | None = None


#: kind (the class name, as sent on the wire) -> message class.
KINDS: dict[str, type[Message]] = {cls.__name__: cls for cls in (
    CreateSession, SessionCreated, ExtendSession, Ok, RunStep, RunStepResult, CloseSession,
    Reset, ListDevices, DeviceList, RegisterGraph, RunGraph, RunGraphResult, CleanupStep,
    DeregisterGraph, RecvTensor, TensorReply, PushTensor, Ping, Pong, CancelStep, ErrorReply,
    StatusRequest, TaskStatus,
)}

#: message class -> ((field name, field kind, description), ...) for every field but ``id``.
SCHEMAS: dict[type[Message], tuple[tuple[str, int, str], ...]] = {
    cls: tuple((f.name, *_CHECKS[str(f.type)]) for f in dataclasses.fields(cls) if f.name != "id")
    for cls in KINDS.values()
}


#: message class -> the fields that travel in the header's body: all but ``id`` and
#: ``tensors``. These tables are computed once and read (not called: every message's encode
#: and decode reads them) on the hot path.
BODY_FIELDS: dict[type[Message], tuple[str, ...]] = {
    cls: tuple(name for name, _, _ in schema if name != "tensors") for cls, schema in SCHEMAS.items()
}
#: ``BODY_FIELDS`` as sets, to compare a decoded body's keys with in one step
BODY_FIELD_SETS: dict[type[Message], frozenset[str]] = {
    cls: frozenset(names) for cls, names in BODY_FIELDS.items()
}
#: message class -> whether it has a ``tensors`` field
CARRIES_TENSORS: dict[type[Message], bool] = {
    cls: any(name == "tensors" for name, _, _ in schema) for cls, schema in SCHEMAS.items()
}


def validate(message: Message) -> None:
    """Raise InvalidArgumentError naming the kind, id and field of the first bad field."""
    check = VALIDATORS.get(type(message))
    if check is None:
        raise InvalidArgumentError(f"{type(message).__name__} is not a registered message kind")
    check(message)


def _bad_id(message: Message) -> NoReturn:
    raise InvalidArgumentError(f"{type(message).__name__}: id must be an int in [0, 2**63), "
                               f"got {short_repr(message.id)}")


def _bad_field(message: Message, index: int) -> NoReturn:
    name, _, description = SCHEMAS[type(message)][index]
    raise InvalidArgumentError(
        f"{type(message).__name__} (id {message.id}): field '{name}' must be {description}, "
        f"got {short_repr(getattr(message, name))}"
    )


# The source of one field's check; ``v`` is the field's value, ``i`` its index in the schema.
_VALUE_CHECKS = {
    _STR: "    if type(v) is not str: _bad_field(m, {i})\n",
    _OPT_STR: "    if v is not None and type(v) is not str: _bad_field(m, {i})\n",
    _INT: "    if type(v) is not int or not _INT64_MIN <= v < _INT64_END: _bad_field(m, {i})\n",
    _MAP: "    if type(v) is not dict: _bad_field(m, {i})\n",
    _FLOAT: "    if type(v) is not float or not _isfinite(v): _bad_field(m, {i})\n",
}
_ITEM_CHECKS = {
    _STR_LIST: "type(x) is not str",
    _MAP_LIST: "type(x) is not dict",
    _ARRAYS: "not isinstance(x, _ARRAY_TYPES)",
}


_FACTORY = object()   # a generated __init__'s default for a field with a default_factory


def _check_lines(cls: type[Message], read: str) -> list[str]:
    """The source of ``cls``'s field checks on the message ``m``; ``read`` makes the
    expression that reads a field from its name (``m.{}``, or ``{}`` for a local)."""
    lines = [f"    v = {read.format('id')}\n",
             "    if type(v) is not int or not 0 <= v < MAX_ID: _bad_id(m)\n"]
    for i, (name, kind, _) in enumerate(SCHEMAS[cls]):
        lines.append(f"    v = {read.format(name)}\n")
        if kind in _VALUE_CHECKS:
            lines.append(_VALUE_CHECKS[kind].format(i=i))
        else:
            lines.append(f"    if type(v) is not list: _bad_field(m, {i})\n")
            lines.append(f"    for x in v:\n        if {_ITEM_CHECKS[kind]}: _bad_field(m, {i})\n")
    return lines


def _init_lines(cls: type[Message], namespace: dict[str, Any]) -> list[str]:
    """The source of ``cls.__init__``: the dataclass's keyword-only signature and defaults;
    it sets the frozen fields and then checks them itself, where the dataclass's ``__init__``
    would call out to ``__post_init__``: every message built, sent or decoded runs it."""
    params, body = [], []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _factory_{f.name}()\n")
        else:
            params.append(f.name)
        body.append(f"    _set(m, {f.name!r}, {f.name})\n")
    return [f"def __init__(m, *, {', '.join(params)}):\n", *body, *_check_lines(cls, "{}")]


def _compile(cls: type[Message]) -> tuple[Callable[..., None], Callable[[Message], None],
                                          Callable[[Message], dict]]:
    """One class's ``__init__``, validator and header-body builder, as straight-line code.

    All run for every message sent and received. Generated from the schema (as dataclasses
    generates ``__init__``; the names are the classes' own field names, never wire data),
    they read each field as a plain attribute rather than walk the schema at run time."""
    for f in dataclasses.fields(cls):   # the source holds our classes' identifiers, nothing else
        if not f.name.isidentifier():
            raise TypeError(f"{cls.__name__}.{f.name} is not an identifier")
    namespace: dict[str, Any] = {
        "MAX_ID": MAX_ID, "_INT64_MIN": _INT64_MIN, "_INT64_END": _INT64_END,
        "_ARRAY_TYPES": _ARRAY_TYPES, "_bad_id": _bad_id, "_bad_field": _bad_field,
        "_FACTORY": _FACTORY, "_set": object.__setattr__, "_isfinite": math.isfinite}
    lines = _init_lines(cls, namespace)
    lines += ["def check(m):\n", *_check_lines(cls, "m.{}")]
    fields = ", ".join(f"{name!r}: m.{name}" for name in BODY_FIELDS[cls])
    lines.append(f"def body(m):\n    return {{{fields}}}\n")
    exec("".join(lines), namespace)  # noqa: S102 - source built from the schema above only
    init, check, body = namespace["__init__"], namespace["check"], namespace["body"]
    init.__qualname__ = f"{cls.__name__}.__init__"
    check.__qualname__ = f"{cls.__name__}.check"
    body.__qualname__ = f"body_of_{cls.__name__}"
    return init, check, body


_COMPILED = {cls: _compile(cls) for cls in KINDS.values()}
#: message class -> its validator (each class's ``__init__`` runs the same checks: a message
#: that exists is valid; the codec runs this again before sending, for mutated list fields)
VALIDATORS: dict[type[Message], Callable[[Message], None]] = {
    cls: check for cls, (_, check, _) in _COMPILED.items()}
#: message class -> a function giving the header body: {field: value} for ``BODY_FIELDS``
BODY_OF: dict[type[Message], Callable[[Message], dict]] = {
    cls: body for cls, (_, _, body) in _COMPILED.items()}
for _cls, _compiled in _COMPILED.items():
    # replacing a class's __init__ after its definition is what this is for (as dataclass does)
    _cls.__init__ = _compiled[0]  # type: ignore[method-assign]


# ---- errors across the wire -----------------------------------------------------------
def error_reply(id: int, exc: BaseException) -> ErrorReply:  # noqa: A002 (the message field)
    """Any exception -> ErrorReply: an OpError keeps its code and node; others become UNKNOWN.

    A non-OpError is a bug or an unexpected failure on the remote side, so its type name
    goes into the text (``"UNKNOWN: KeyError: 'x'"`` reads better than ``"'x'"``).
    """
    reason = None
    if isinstance(exc, OpError):
        code = error_code_from_exception_type(type(exc))
        text, node, reason = str(exc.message), exc.node_name, type(exc).reason
    else:
        code, text, node = UNKNOWN, f"{type(exc).__name__}: {exc}", None
    if len(text) > MAX_ERROR_MESSAGE:
        text = text[:MAX_ERROR_MESSAGE] + f"... ({len(text) - MAX_ERROR_MESSAGE} characters cut)"
    return ErrorReply(id=id, code=code, message=text, node=node if isinstance(node, str) else None,
                      reason=reason if isinstance(reason, str) else None)


def error_from(reply: ErrorReply) -> Exception:
    """The TF error of ``reply.code`` and ``reply.reason`` (UnknownError for unknown codes),
    node set."""
    cls = exception_type_from_error(reply.code, reply.reason)
    return cls(None, None, reply.message, node_name=reply.node)


def raise_error(reply: ErrorReply) -> NoReturn:
    """Raise ``error_from(reply)``."""
    raise error_from(reply)


__all__ = ["BODY_FIELDS", "BODY_FIELD_SETS", "BODY_OF", "CARRIES_TENSORS", "KINDS", "SCHEMAS",
           "VALIDATORS", "Message",
           "Tensors", "error_from", "error_reply", "raise_error", "validate", *KINDS]
