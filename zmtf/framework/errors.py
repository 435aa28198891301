"""TensorFlow's error classes: the one home for every error zmtf raises on purpose.

Each class carries TF's canonical code so an error can cross the wire as
``{code, message, node}`` and be raised again on the other side as the same class.
"""

from __future__ import annotations

from typing import Any

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """Base class of runtime errors; ``node_name`` names the node that failed, if any.

    Accepts TF's positional form ``InvalidArgumentError(node_def, op, message)`` and the
    short form ``InvalidArgumentError("message")``.
    """

    error_code = UNKNOWN
    #: set by the subclasses in ``REASON_TO_CLASS``: it crosses the wire next to the code
    reason: str | None = None

    def __init__(
        self,
        node_def: Any = None,
        op: Any = None,
        message: str | None = None,
        error_code: int | None = None,
        *,
        node_name: str | None = None,
    ) -> None:
        if message is None and isinstance(node_def, str) and op is None:
            node_def, message = None, node_def
        self.node_def = node_def
        self.op = op
        self.message = message or ""
        if error_code is not None:
            self.error_code = error_code
        self.node_name = node_name or getattr(op, "name", None)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.node_name))


def _rebuild(cls: type[OpError], message: str, node_name: str | None) -> OpError:
    return cls(None, None, message, node_name=node_name)


class CancelledError(OpError):
    """The step or call was cancelled."""

    error_code = CANCELLED


class UnknownError(OpError):
    """An error with no better class; often a bug in zmtf or an unexpected kernel failure."""

    error_code = UNKNOWN


class InvalidArgumentError(OpError):
    """An argument (a feed, an attribute, a message field) is invalid."""

    error_code = INVALID_ARGUMENT


class DeadlineExceededError(OpError):
    """A deadline passed before the operation finished."""

    error_code = DEADLINE_EXCEEDED


class NotFoundError(OpError):
    """A requested entity (node, tensor, task, checkpoint) was not found."""

    error_code = NOT_FOUND


class AlreadyExistsError(OpError):
    """The entity to create already exists."""

    error_code = ALREADY_EXISTS


class PermissionDeniedError(OpError):
    """The caller may not do this."""

    error_code = PERMISSION_DENIED


class ResourceExhaustedError(OpError):
    """A memory budget, queue or quota is exhausted."""

    error_code = RESOURCE_EXHAUSTED


class FailedPreconditionError(OpError):
    """The system is not in a state that allows this, most often an uninitialized variable."""

    error_code = FAILED_PRECONDITION


class AbortedError(OpError):
    """The operation was aborted, typically by a concurrency conflict."""

    error_code = ABORTED


class OutOfRangeError(OpError):
    """An operation went past the valid range."""

    error_code = OUT_OF_RANGE


class UnimplementedError(OpError):
    """The operation is not implemented or not supported."""

    error_code = UNIMPLEMENTED


class InternalError(OpError):
    """An internal invariant broke: a bug in zmtf."""

    error_code = INTERNAL


class UnavailableError(OpError):
    """A service or peer is currently unreachable; retrying later may help."""

    error_code = UNAVAILABLE


class DataLossError(OpError):
    """Unrecoverable data loss or corruption."""

    error_code = DATA_LOSS


class UnauthenticatedError(OpError):
    """The request lacks valid authentication credentials."""

    error_code = UNAUTHENTICATED


class FetchNotFoundError(NotFoundError, KeyError):
    """A fetch or feed name names no tensor or operation; also a KeyError, as in TF."""


class FeedMismatchError(InvalidArgumentError, ValueError):
    """A fed value has the wrong shape or dtype; also a ValueError, as in TF."""


class GraphNotRegisteredError(NotFoundError):
    """RunGraph named a graph its task does not hold: the task restarted since the master
    registered it. The master registers the graph again instead of failing the step, so it
    must recognise this error by its class (or its wire ``reason``), never by its text."""

    reason = "GRAPH_NOT_REGISTERED"


_CLASSES: tuple[type[OpError], ...] = (
    CancelledError,
    UnknownError,
    InvalidArgumentError,
    DeadlineExceededError,
    NotFoundError,
    AlreadyExistsError,
    PermissionDeniedError,
    ResourceExhaustedError,
    FailedPreconditionError,
    AbortedError,
    OutOfRangeError,
    UnimplementedError,
    InternalError,
    UnavailableError,
    DataLossError,
    UnauthenticatedError,
)

#: canonical code -> class, for errors arriving from the wire.
CODE_TO_CLASS: dict[int, type[OpError]] = {cls.error_code: cls for cls in _CLASSES}


#: wire reason -> class: the subclasses that a peer raises again as themselves, not as the
#: plain class of their code (a caller dispatches on them).
REASON_TO_CLASS: dict[str, type[OpError]] = {cls.reason: cls for cls in (GraphNotRegisteredError,)
                                             if cls.reason is not None}


def exception_type_from_error(error_code: int, reason: str | None) -> type[OpError]:
    """The class of an error from the wire: its reason's class if that has the same code
    (a reason unknown here, or one paired with another code, counts for nothing), else the
    class of its code."""
    if reason is not None:
        cls = REASON_TO_CLASS.get(reason)
        if cls is not None and cls.error_code == error_code:
            return cls
    return exception_type_from_error_code(error_code)


def exception_type_from_error_code(error_code: int) -> type[OpError]:
    """The class TF raises for a canonical code (UnknownError for unknown codes)."""
    return CODE_TO_CLASS.get(error_code, UnknownError)


def error_code_from_exception_type(cls: type[BaseException]) -> int:
    """The canonical code of an error class (UNKNOWN for anything else)."""
    code = getattr(cls, "error_code", UNKNOWN)
    return code if isinstance(code, int) else UNKNOWN
