"""Messages <-> ZeroMQ multipart frames; this module is the wire format's spec.

One message is one multipart. Frame 0 is a msgpack map::

    {"v": 2, "kind": "RunStep", "id": 17, "body": {...}, "tensors": [descriptor, ...]}

and frames 1.. are the tensor parts, in the order of ``"tensors"`` (see ``tensors.py``).

A message whose parts total ``STREAM_MIN_BYTES`` (4 MiB) or more is **streamed** instead:
one ZeroMQ message holding the header alone, with the extra key ``"stream": n``, then ``n``
one-frame messages, the parts in order, from the same peer and with nothing between them.
ZeroMQ delivers a multipart only once all of it has arrived; separate messages let the
receiver copy each part into place while the next is still on the wire
(``wire/streams.py`` does the bookkeeping, sans-io, and checks every part as it comes).
A process with the same-host fast path on adds ``"host": token`` (its machine, network
namespace and user; ``distributed/shared_memory.py``) to every header: a peer that hears
its own token may send it big tensors as shared-memory descriptors, which ``decode``
accepts only from a header naming this host.
``"v"`` changes whenever a message's fields do (2: RunStep/RunGraph carry ``trace_level``
and their results ``step_stats``); peers of different versions refuse each other's messages
with an error that says to upgrade the older side.
``encode`` returns the header as bytes and the parts as memoryviews of the arrays, ready
for ``send_multipart(frames, copy=False)``; ``decode`` takes what
``recv_multipart(copy=False)`` returns.

``decode`` is the border: every byte is checked before use, and anything malformed raises
``InvalidArgumentError`` and nothing else (any other exception from ``decode`` is a bug).

msgpack options, and why:

* ``raw=False``: map keys and strings are str (invalid UTF-8 is an error, not bytes).
* ``strict_map_key=True`` (msgpack's default): map keys must be str (or bytes); an int
  key is an error. No zmtf schema uses int keys, and a dict with them (e.g. a config
  keyed by GPU index) must be sent with str keys.
* ``use_list=True``: arrays come back as lists, what the schemas check for.
* ``max_str_len``, ``max_bin_len``, ``max_array_len``, ``max_map_len`` are bounded by the
  header limit (default 16 MiB) so a length field cannot ask for more than the header
  could hold; ``max_ext_len=0`` plus an ``ext_hook`` that raises rule out ext types,
  including msgpack's built-in Timestamp (which bypasses ``ext_hook``).
* Nesting depth is bounded by msgpack itself (StackError, mapped to InvalidArgumentError).
"""

from __future__ import annotations

from typing import Any, Sequence

import msgpack

from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire.messages import (
    BODY_FIELD_SETS, BODY_FIELDS, BODY_OF, CARRIES_TENSORS, KINDS, MAX_ID, VALIDATORS, Message,
)
from zmtf.wire.tensors import (
    DEFAULT_LIMITS,
    SHARED,
    Allocate,
    Limits,
    decode_tensors,
    Write,
    encode_tensors,
    frame_view,
    short_repr,
)

VERSION = 2   # 2: RunStep/RunGraph trace_level, their results' step_stats
SUPPORTED_VERSIONS = (2,)
HEADER_KEYS = frozenset({"v", "kind", "id", "body", "tensors"})
STREAM_KEY = "stream"   # in a streamed message's header: how many part messages follow
STREAM_HEADER_KEYS = HEADER_KEYS | {STREAM_KEY}
HOST_KEY = "host"     # the sender's host identity, when it takes shared-memory tensors
_HOST_HEADER_KEYS = HEADER_KEYS | {HOST_KEY}   # every message of a process with the fast path on
_HEADER_KEY_SETS = (HEADER_KEYS, STREAM_HEADER_KEYS, _HOST_HEADER_KEYS,
                    STREAM_HEADER_KEYS | {HOST_KEY})
#: Messages whose tensor parts total this much are streamed: the receiver copies each part
#: into place while the rest is still on the wire. One 64 MiB multipart then a copy took
#: 46-48 ms over tcp here, 64 one-part messages copied as they came 37-40 ms (raw: 34-38).
STREAM_MIN_BYTES = 4 << 20


class _ExtTypeRejected(Exception):
    pass


def _reject_ext(code: int, data: bytes) -> Any:
    raise _ExtTypeRejected(f"msgpack ext type {code} is not allowed")


def encode(message: Message, limits: Limits = DEFAULT_LIMITS, *,
           id: int | None = None) -> list[bytes | memoryview]:  # noqa: A002 (the message field)
    """A message -> [header, tensor parts...] for ``send_multipart(frames, copy=False)``.

    ``id`` replaces the message's id (a caller assigns one per call without rebuilding the
    message). The parts are views of the arrays: do not mutate them until the send is done.
    """
    return encode_messages(message, limits, id=id, stream_min_bytes=_NEVER)[0]


_NEVER = 1 << 62   # a stream_min_bytes no message reaches


def encode_messages(message: Message, limits: Limits = DEFAULT_LIMITS, *,
                    id: int | None = None,  # noqa: A002 (the message field)
                    stream_min_bytes: int = STREAM_MIN_BYTES,
                    shared: Write | None = None) -> list[list[bytes | memoryview]]:
    """A message -> the ZeroMQ messages to send, in order, each a list of frames.

    One multipart normally; a message whose tensor parts total ``stream_min_bytes`` or more is
    streamed (see the module docstring): its header alone, then one message per part.
    ``shared`` (for a peer known to be on this host) writes big tensors to shared memory.
    """
    cls = type(message)
    if KINDS.get(cls.__name__) is not cls:
        raise InvalidArgumentError(f"cannot encode a {cls.__name__}: not a message kind")
    VALIDATORS[cls](message)  # again: a list field may have been mutated since construction
    if id is not None:
        if type(id) is not int or not 0 <= id < MAX_ID:
            raise InvalidArgumentError(f"{cls.__name__}: id must be an int in [0, 2**63), got "
                                       f"{short_repr(id)}")
    message_id = message.id if id is None else id
    tensors: list[Any] = getattr(message, "tensors") if CARRIES_TENSORS[cls] else []
    descriptors, parts = encode_tensors(tensors, limits, shared) if tensors else ([], [])
    header = {"v": VERSION, "kind": cls.__name__, "id": message_id, "body": BODY_OF[cls](message),
              "tensors": descriptors}
    if SHARED.host is not None:
        header[HOST_KEY] = SHARED.host
    streamed = bool(parts) and sum(map(len, parts)) >= stream_min_bytes  # parts: flat bytes
    if streamed:
        header[STREAM_KEY] = len(parts)
    try:   # the Packer itself: msgpack.packb only wraps it in Python, and every message is packed
        packed = msgpack.Packer(use_bin_type=True).pack(header)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(
            f"{cls.__name__} (id {message_id}) cannot be encoded: {exc}; body values must be "
            f"plain str/int/float/bool/None/list/dict data (use .item() for numpy scalars)"
        ) from None
    if len(packed) > limits.max_header_bytes:
        raise InvalidArgumentError(
            f"{cls.__name__} (id {message_id}): header is {len(packed)} bytes, over the limit of "
            f"{limits.max_header_bytes}; send big values as tensors"
        )
    if streamed:
        return [[packed], *([part] for part in parts)]
    return [[packed, *parts]]


def decode(frames: Sequence[Any], limits: Limits = DEFAULT_LIMITS,
           allocate: Allocate | None = None) -> Message:
    """[header, tensor parts...] (bytes, memoryviews or zmq.Frames) -> a validated message.

    Tensors are read-only arrays: views of the frames when sent in one part (zero copy),
    assembled into ``allocate(dtype, shape)`` (default: np.empty) when sent in several.
    A streamed message's parts come as separate messages: ``wire.streams`` reassembles them.
    """
    cls, header = read_header(frames, limits)
    if STREAM_KEY in header:
        raise InvalidArgumentError(
            f"{cls.__name__} (id {header['id']}) is streamed: its {short_repr(header[STREAM_KEY])} "
            f"parts follow as separate messages, which wire.streams.Streams reassembles"
        )
    return message_from(cls, header, frames, limits, allocate)


def read_header(frames: Sequence[Any], limits: Limits = DEFAULT_LIMITS
                ) -> tuple[type[Message], dict[str, Any]]:
    """The message class and checked envelope of ``frames[0]`` (the body is checked later)."""
    if not isinstance(frames, (list, tuple)) or not frames:
        raise InvalidArgumentError(
            f"a message must be a non-empty list of frames, got {short_repr(frames)}"
        )
    header = _unpack_header(frames[0], limits)
    # the envelope: v, kind, id, body and tensors' outer types (written out: every message)
    keys = header.keys()
    if keys != _HOST_HEADER_KEYS and keys != HEADER_KEYS and keys not in _HEADER_KEY_SETS:
        raise InvalidArgumentError(
            f"message header must have exactly the keys {sorted(HEADER_KEYS)} (and "
            f"{STREAM_KEY!r} when streamed, {HOST_KEY!r} optionally), got "
            f"{short_repr(sorted(map(str, header)))}"
        )
    version = header["v"]
    if type(version) is not int or version not in SUPPORTED_VERSIONS:
        raise InvalidArgumentError(
            f"unsupported wire version {short_repr(version)}; this zmtf speaks versions "
            f"{list(SUPPORTED_VERSIONS)}: upgrade the older side"
        )
    kind = header["kind"]
    cls = KINDS.get(kind) if type(kind) is str else None
    if cls is None:
        raise InvalidArgumentError(
            f"unknown message kind {short_repr(kind)}; known kinds: {', '.join(sorted(KINDS))}"
        )
    message_id = header["id"]
    if type(message_id) is not int or not 0 <= message_id < 2**63:
        raise InvalidArgumentError(
            f"{kind}: id must be an int in [0, 2**63), got {short_repr(message_id)}"
        )
    if type(header["body"]) is not dict:
        raise InvalidArgumentError(
            f"{kind} (id {message_id}): body must be a map, got {short_repr(header['body'])}"
        )
    return cls, header


def check_body(cls: type[Message], header: dict[str, Any]) -> dict[str, Any]:
    """The body's fields as a dict, exactly the class's fields (their types are checked when
    the message is built)."""
    body = header["body"]
    if body.keys() != BODY_FIELD_SETS[cls]:
        expected = BODY_FIELDS[cls]
        missing = sorted(set(expected) - set(body))
        extra = sorted(map(str, set(body) - set(expected)))
        raise InvalidArgumentError(
            f"{cls.__name__} (id {header['id']}): body fields must be {expected}; "
            f"missing {missing}, unexpected {short_repr(extra)}"
        )
    return dict(body)


def message_from(cls: type[Message], header: dict[str, Any], frames: Sequence[Any],
                 limits: Limits = DEFAULT_LIMITS, allocate: Allocate | None = None) -> Message:
    """The message of a checked envelope and all its frames (header first)."""
    message_id = header["id"]
    body = header["body"]
    fields = dict(body) if body.keys() == BODY_FIELD_SETS[cls] else check_body(cls, header)
    if CARRIES_TENSORS[cls]:
        descriptors = header["tensors"]
        if descriptors == [] and len(frames) == 1:   # no tensors: decode_tensors would agree
            fields["tensors"] = []
        else:
            try:
                fields["tensors"] = decode_tensors(descriptors, frames[1:], limits, allocate,
                                                   shared_attach(header))
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(
                    f"{cls.__name__} (id {message_id}): {exc.message}") from None
    elif header["tensors"] != [] or len(frames) != 1:
        raise InvalidArgumentError(
            f"{cls.__name__} (id {message_id}) carries no tensors, but the header lists "
            f"{short_repr(header['tensors'])} and the message has {len(frames) - 1} extra frames"
        )
    return cls(id=message_id, **fields)  # the constructor checks every field's type


def shared_attach(header: dict[str, Any]) -> Any:
    """How to map the shared-memory tensors of a message with this header: only a sender
    on this host (its header says so, and this process has the fast path on) may send them."""
    host, machine = header.get(HOST_KEY), SHARED.machine
    return (SHARED.attach if type(host) is str and machine is not None and host.startswith(machine)
            else None)


def packed_size(value: Any) -> int:
    """The bytes ``value`` (a decoded body field, e.g. a graph) takes on the wire: a
    server's size quota counts what a peer sent, not Python's overhead for it."""
    try:
        return len(msgpack.Packer(use_bin_type=True).pack(value))
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"cannot measure a value that is not plain data: {exc}") from None


def peek_id(frames: Any, limits: Limits = DEFAULT_LIMITS) -> int:
    """The id of a message that may be malformed, for addressing an ErrorReply; 0 if unreadable.

    Never raises: it is called on exactly the frames ``decode`` just refused.
    """
    try:
        header = _unpack_header(frames[0], limits)
    except (InvalidArgumentError, TypeError, IndexError, KeyError):
        return 0
    message_id = header.get("id")
    return message_id if type(message_id) is int and 0 <= message_id < 2**63 else 0


def _unpack_header(frame: Any, limits: Limits) -> dict[str, Any]:
    view = getattr(frame, "buffer", frame)   # a zmq.Frame's bytes: already a flat byte view
    if type(view) is not memoryview or view.ndim != 1 or view.format != "B":
        view = frame_view(frame)   # anything else is checked and flattened there
    if view.nbytes > limits.max_header_bytes:
        raise InvalidArgumentError(
            f"message header is {view.nbytes} bytes, over the limit of {limits.max_header_bytes}"
        )
    bound = limits.max_header_bytes
    try:
        header = msgpack.unpackb(
            view, raw=False, strict_map_key=True, use_list=True, ext_hook=_reject_ext,
            max_str_len=bound, max_bin_len=bound, max_array_len=bound, max_map_len=bound,
            max_ext_len=0,
        )
    except (ValueError, TypeError, msgpack.UnpackException, _ExtTypeRejected) as exc:
        reason = str(exc) or type(exc).__name__
        raise InvalidArgumentError(f"message header is not valid msgpack: {reason}") from None
    if not isinstance(header, dict):
        raise InvalidArgumentError(
            f"message header must be a msgpack map, got {short_repr(header)}"
        )
    return header


__all__ = [
    "HEADER_KEYS", "HOST_KEY", "STREAM_HEADER_KEYS", "STREAM_KEY", "STREAM_MIN_BYTES", "SUPPORTED_VERSIONS",
    "VERSION", "check_body", "decode", "encode", "encode_messages", "message_from", "peek_id",
    "read_header", "shared_attach",
]
