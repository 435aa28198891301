"""ndarray <-> (descriptor, frames): the tensor half of the wire format, with no sockets.

A tensor travels as a small descriptor in the message header,
``{"dtype": "<f4", "shape": [3, 4], "parts": 1}``, plus ``parts`` raw frames that hold
its C-contiguous bytes in order. Big tensors are cut into parts of ``CHUNK_BYTES``
(1 MiB) because ~1 MB parts of one multipart message moved 2.4-2.8 GB/s over tcp
against ~1 GB/s for one big frame (TOOLCHAIN.md section 4). The parts are memoryview
slices of the array's own buffer: encoding never copies a contiguous array.

Decoding trusts nothing: the dtype must be in ``WIRE_DTYPES``, the shape a short list
of non-negative ints, and the byte count of the parts must be exactly
``prod(shape) * itemsize``. A single part becomes an ``np.frombuffer`` view of the frame
(zero copy); several parts are copied once into one array, fresh or from the caller's
``allocate`` (``decode_parts`` keeps them apart for a consumer that can reduce over parts
instead).

A ``tf.string`` tensor (an object array of bytes) has the descriptor dtype ``"string"``
and ``parts`` >= 2 frames: first the element lengths as little-endian uint64 (8 bytes per
element, row-major), then the elements' bytes concatenated, cut into ``CHUNK_BYTES`` parts
(at least one, maybe empty). Decoding checks the lengths frame holds exactly one length per
element, that no length exceeds the data and that they sum to the data's byte count, with
lengths plus data under ``max_tensor_bytes``; the elements come back as ``bytes`` objects
(one copy: they must outlive the frames). No pickle, no per-element framing to parse.

A tensor written to shared memory by a sender on this host (``distributed/shared_memory.py``)
has the descriptor ``{"dtype", "shape", "parts": 0, "shm": [pid, fd, inode]}`` and no
frames; it is decoded by ``SHARED.attach``, and only from a message whose header names this
host (``wire/codec.py``): from anyone else such a descriptor is an error.

Decoded arrays are **read-only**: a view of a received frame may alias the sender's own
memory (inproc is zero-copy end to end), so a decoded tensor is a value, not a buffer.
Consumers that need to write copy first, as the state kernels already do.
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from zmtf.framework.errors import InvalidArgumentError

CHUNK_BYTES = 1 << 20
MAX_RANK = 32

#: dtype.str of every dtype allowed on the wire: little-endian or byte-order free only.
WIRE_DTYPES: frozenset[str] = frozenset({
    "<f2", "<f4", "<f8",
    "|i1", "<i2", "<i4", "<i8",
    "|u1", "<u2", "<u4", "<u8",
    "|b1",
    "<c8", "<c16",     # complex64, complex128
})

STRING_DTYPE = "string"  # the descriptor dtype of tf.string tensors (object arrays of bytes)
_LENGTHS = np.dtype("<u8")

Frame = Any  # bytes | bytearray | memoryview | zmq.Frame (anything with .buffer)
Allocate = Callable[[np.dtype, tuple[int, ...]], np.ndarray]  # (dtype, shape) -> buffer
Descriptor = dict[str, Any]
#: (index, shm, dtype, shape, nbytes) -> a read-only array over the segment ``shm`` names
Attach = Callable[[int, Any, np.dtype, list[int], int], np.ndarray]
#: (array) -> the ``shm`` of the segment it was copied into
Write = Callable[[np.ndarray], list[int]]


@dataclass(slots=True)
class SharedMemory:
    """Filled by ``distributed/shared_memory.py`` when the fast path is on (wire/ opens no
    files): this process's host identity, and how to map a segment."""

    host: str | None = None      # "<machine token>/<pid>": what this process's headers say
    machine: str | None = None   # "<machine token>/": a header starting so is from this host
    attach: Attach | None = None
    threshold: int = 1 << 20   # tensors this big go through a segment


SHARED = SharedMemory()


@dataclass(frozen=True, slots=True)
class Limits:
    """Size limits applied when encoding and decoding; generous defaults, lower them per service."""

    max_tensor_bytes: int = 4 << 30
    max_tensors: int = 4096
    max_header_bytes: int = 16 << 20
    chunk_bytes: int = CHUNK_BYTES  # a multiple of 8: every part holds whole items

    def __post_init__(self) -> None:
        if self.chunk_bytes <= 0 or self.chunk_bytes % 8:
            raise ValueError(
                f"chunk_bytes must be a positive multiple of 8, got {self.chunk_bytes}"
            )


DEFAULT_LIMITS = Limits()


def _describe(dtype: np.dtype | str, shape: Sequence[Any]) -> str:
    name = dtype.name if isinstance(dtype, np.dtype) else dtype
    name = STRING_DTYPE if name == "object" else name
    return f"{name}{list(shape)}"


# ---- encoding -------------------------------------------------------------------------
def encode_tensor(array: Any, index: int = 0,
                  limits: Limits = DEFAULT_LIMITS) -> tuple[Descriptor, list[memoryview]]:
    """One array -> (descriptor, parts): views of its buffer, no copy if it is contiguous."""
    if not isinstance(array, (np.ndarray, np.generic)):
        raise InvalidArgumentError(
            f"tensor {index} is a {type(array).__name__}, not a numpy array; wrap it with "
            f"np.asarray()"
        )
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would also turn 0-d into 1-d)
        array = np.ascontiguousarray(array)
    dtype = array.dtype
    if dtype == object:
        return _encode_strings(array, index, limits)
    if dtype.str not in WIRE_DTYPES:
        raise InvalidArgumentError(
            f"tensor {index} has dtype {dtype} ({dtype.str!r}), which cannot cross the wire; "
            f"allowed: {', '.join(sorted(WIRE_DTYPES))}. Convert non-native byte order with "
            f"arr.astype(arr.dtype.newbyteorder('<'))"
        )
    if array.nbytes > limits.max_tensor_bytes:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, array.shape)}) has {array.nbytes} bytes, over the "
            f"limit of {limits.max_tensor_bytes} bytes per tensor"
        )
    flat = memoryview(array.reshape(-1).view(np.uint8))  # 1-D, format "B", same memory
    chunk = limits.chunk_bytes
    parts = ([flat] if len(flat) <= chunk
             else [flat[start:start + chunk] for start in range(0, len(flat), chunk)])
    descriptor = {"dtype": dtype.str, "shape": list(array.shape), "parts": len(parts)}
    return descriptor, parts


def _encode_strings(array: np.ndarray, index: int,
                    limits: Limits) -> tuple[Descriptor, list[memoryview]]:
    """A string tensor -> [lengths (uint64 LE), data parts...]; every element must be bytes."""
    flat = array.reshape(-1)
    for position, item in enumerate(flat):
        if not isinstance(item, bytes):
            raise InvalidArgumentError(
                f"tensor {index} (string{list(array.shape)}): element {position} is a "
                f"{type(item).__name__}, not bytes; only bytes cross the wire (str: .encode())"
            )
    lengths = np.fromiter((len(item) for item in flat), dtype=_LENGTHS, count=flat.size)
    data = b"".join(flat)
    total = lengths.nbytes + len(data)
    if total > limits.max_tensor_bytes:
        raise InvalidArgumentError(
            f"tensor {index} (string{list(array.shape)}) has {total} bytes with its lengths, "
            f"over the limit of {limits.max_tensor_bytes} bytes per tensor"
        )
    view = memoryview(data)
    chunk = limits.chunk_bytes
    parts = [view[start:start + chunk] for start in range(0, len(view), chunk)] or [view]
    descriptor = {"dtype": STRING_DTYPE, "shape": list(array.shape), "parts": 1 + len(parts)}
    return descriptor, [lengths.view(np.uint8).data, *parts]


def encode_tensors(arrays: Sequence[Any], limits: Limits = DEFAULT_LIMITS,
                   shared: Write | None = None) -> tuple[list[Descriptor], list[memoryview]]:
    """Many arrays -> (descriptors, all their parts in order); with ``shared``, those of
    ``SHARED.threshold`` bytes or more are written to shared memory instead."""
    if len(arrays) > limits.max_tensors:
        raise InvalidArgumentError(
            f"{len(arrays)} tensors in one message, over the limit of {limits.max_tensors}"
        )
    descriptors: list[Descriptor] = []
    frames: list[memoryview] = []
    for index, array in enumerate(arrays):
        if shared is not None and _goes_shared(array, limits):
            descriptors.append({"dtype": array.dtype.str, "shape": list(array.shape), "parts": 0,
                                "shm": shared(array)})
            continue
        descriptor, parts = encode_tensor(array, index, limits)
        descriptors.append(descriptor)
        frames.extend(parts)
    return descriptors, frames


def _goes_shared(array: Any, limits: Limits) -> bool:
    return (type(array) is np.ndarray and array.nbytes >= SHARED.threshold
            and array.dtype.str in WIRE_DTYPES and array.nbytes <= limits.max_tensor_bytes)


# ---- decoding -------------------------------------------------------------------------
def frame_view(frame: Frame) -> memoryview:
    """A flat byte view of one received frame: bytes, memoryview or zmq.Frame (its .buffer)."""
    try:
        view = memoryview(frame.buffer if hasattr(frame, "buffer") else frame)
    except TypeError:
        raise InvalidArgumentError(
            f"a frame must be bytes, a memoryview or a zmq.Frame, got {type(frame).__name__}"
        ) from None
    if view.ndim != 1 or view.format != "B":
        if not view.c_contiguous:
            raise InvalidArgumentError("a frame must be a contiguous buffer")
        view = view.cast("B")
    return view


_Spec = tuple[np.dtype, list[int], int, int]  # dtype, shape, parts, nbytes
_DESCRIPTOR_KEYS = frozenset({"dtype", "shape", "parts"})
_SHARED_KEYS = _DESCRIPTOR_KEYS | {"shm"}
_NP_DTYPES = {name: np.dtype(name) for name in WIRE_DTYPES}
_OBJECT = np.dtype(object)


def _check_descriptor(index: int, descriptor: Any, limits: Limits) -> _Spec:
    """Validate one descriptor; return (dtype, shape, parts, nbytes)."""
    shared = False
    if not isinstance(descriptor, dict) or descriptor.keys() != _DESCRIPTOR_KEYS:
        shared = isinstance(descriptor, dict) and descriptor.keys() == _SHARED_KEYS
    if shared:
        if descriptor["dtype"] == STRING_DTYPE or descriptor["parts"] != 0:
            raise InvalidArgumentError(
                f"tensor {index}: a shared-memory descriptor has parts 0 and a numeric dtype, "
                f"got {short_repr(descriptor)}")
    elif not isinstance(descriptor, dict) or descriptor.keys() != _DESCRIPTOR_KEYS:
        raise InvalidArgumentError(
            f"tensor {index}: descriptor must be a map with exactly the keys dtype, shape, parts; "
            f"got {short_repr(descriptor)}"
        )
    dtype_str, shape, parts = descriptor["dtype"], descriptor["shape"], descriptor["parts"]
    if not isinstance(dtype_str, str) or (dtype_str not in WIRE_DTYPES
                                          and dtype_str != STRING_DTYPE):
        raise InvalidArgumentError(
            f"tensor {index}: dtype {short_repr(dtype_str)} is not allowed on the wire; "
            f"allowed: {', '.join(sorted(WIRE_DTYPES))}, {STRING_DTYPE}"
        )
    # a string tensor's fixed-size part is its lengths frame: 8 bytes an element
    dtype = _NP_DTYPES[dtype_str] if dtype_str != STRING_DTYPE else _OBJECT
    bad_shape = not isinstance(shape, list) or len(shape) > MAX_RANK
    if not bad_shape:
        top = limits.max_tensor_bytes
        for d in shape:   # a loop, not all(<generator>): each item would be a call
            if type(d) is not int or not 0 <= d <= top:
                bad_shape = True
                break
    if bad_shape:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, [])[:-2]}): shape must be a list of at most "
            f"{MAX_RANK} ints in "
            f"[0, {limits.max_tensor_bytes}], got {short_repr(shape)}"
        )
    nbytes = math.prod(shape) * (_LENGTHS.itemsize if dtype is _OBJECT else dtype.itemsize)
    if nbytes > limits.max_tensor_bytes:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}) needs {nbytes} bytes, over the limit of "
            f"{limits.max_tensor_bytes} bytes per tensor"
        )
    if nbytes == 0 and math.prod(d for d in shape if d) * _item_bytes(dtype) > limits.max_tensor_bytes:
        raise InvalidArgumentError(  # an empty array whose other dims would overflow numpy
            f"tensor {index} ({_describe(dtype, shape)}): dimensions too large"
        )
    least = 2 if dtype is _OBJECT else 0 if shared else 1
    if type(parts) is not int or parts < least:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}): parts must be an int >= {least}, "
            f"got {short_repr(parts)}"
        )
    return dtype, shape, parts, nbytes


def _item_bytes(dtype: np.dtype) -> int:
    return _LENGTHS.itemsize if dtype is _OBJECT else dtype.itemsize


def _check_part(index: int, dtype: np.dtype, shape: list[int], k: int, view: memoryview) -> None:
    """A part must hold whole items; a bool part only bytes 0 and 1."""
    if view.nbytes % dtype.itemsize:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}): part {k} has {view.nbytes} bytes, "
            f"not a multiple of the item size {dtype.itemsize}"
        )
    if dtype.kind == "b" and view.nbytes and np.frombuffer(view, np.uint8).max() > 1:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}): bool bytes must be 0 or 1"
        )


def _one_part(index: int, dtype: np.dtype, shape: list[int], nbytes: int,
              view: memoryview) -> np.ndarray:
    """A tensor sent in one part -> a read-only view of its frame (the usual case, so
    written out: no per-part list, no TensorParts)."""
    if view.nbytes != nbytes:   # equal byte counts: whole items, too
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}) needs {nbytes} bytes, frames have "
            f"{view.nbytes}"
        )
    if dtype.kind == "b" and nbytes:
        _check_part(index, dtype, shape, 0, view)
    return _readonly(view, dtype).reshape(shape)


def _part_arrays(index: int, dtype: np.dtype, shape: list[int], nbytes: int,
                 views: Sequence[memoryview]) -> list[np.ndarray]:
    """Check the parts' byte counts; return one flat read-only array per part."""
    total = sum(v.nbytes for v in views)
    if total != nbytes:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}) needs {nbytes} bytes, frames have {total}"
        )
    arrays = []
    for k, view in enumerate(views):
        _check_part(index, dtype, shape, k, view)
        arrays.append(_readonly(view, dtype))
    return arrays


def _readonly(view: memoryview, dtype: np.dtype) -> np.ndarray:
    """A flat read-only array over a frame's bytes; copied only from a frame at an odd
    offset (kernels want aligned data)."""
    array = np.frombuffer(view, dtype=dtype)
    if not array.flags.aligned:
        array = array.copy()
    array.flags.writeable = False
    return array


class TensorParts:
    """One tensor's parts, added in order as they arrive; ``result()`` is the array.

    A tensor of several parts is copied into place part by part, each part checked when it
    comes (a streamed message copies while the network still delivers the rest). One part
    stays a view of its frame; a string tensor is decoded once all its frames are in.
    """

    __slots__ = ("index", "_spec", "_allocate", "_frames", "_out", "_bytes", "_offset", "count")

    def __init__(self, index: int, spec: _Spec, allocate: Allocate | None = None) -> None:
        self.index = index
        self._spec = spec
        self._allocate = allocate
        self._frames: list[Frame] = []   # kept for a one-part or a string tensor
        self._out: np.ndarray | None = None
        self._bytes: np.ndarray | None = None  # _out's bytes, flat
        self._offset = 0
        self.count = 0                   # parts added so far

    @property
    def complete(self) -> bool:
        return self.count == self._spec[2]

    def add(self, frame: Frame) -> None:
        """Take the next part (InvalidArgumentError if it does not fit the descriptor)."""
        dtype, shape, parts, nbytes = self._spec
        if self.count == parts:
            raise InvalidArgumentError(
                f"tensor {self.index} ({_describe(dtype, shape)}) has {parts} parts, got more"
            )
        self.count += 1
        if parts == 1 or dtype is _OBJECT:
            self._frames.append(frame)
            return
        view = frame_view(frame)
        end = self._offset + view.nbytes
        if end > nbytes:
            raise InvalidArgumentError(
                f"tensor {self.index} ({_describe(dtype, shape)}) needs {nbytes} bytes, "
                f"its first {self.count} parts have {end}"
            )
        _check_part(self.index, dtype, shape, self.count - 1, view)
        if self._bytes is None:   # the first part: _out and _bytes are set together
            self._out = (np.empty(shape, dtype=dtype) if self._allocate is None
                         else _allocated(self._allocate, dtype, shape))
            self._bytes = self._out.reshape(-1).view(np.uint8)  # a view: _out is C-contiguous
        self._bytes[self._offset:end] = np.frombuffer(view, np.uint8)
        self._offset = end
        if self.count == parts and end != nbytes:
            raise InvalidArgumentError(
                f"tensor {self.index} ({_describe(dtype, shape)}) needs {nbytes} bytes, "
                f"frames have {end}"
            )

    def result(self, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
        """The read-only array, once every part is in."""
        dtype, shape, parts, nbytes = self._spec
        if self.count != parts:
            raise InvalidArgumentError(
                f"tensor {self.index} ({_describe(dtype, shape)}) has {parts} parts, "
                f"{self.count} frames given"
            )
        if dtype is _OBJECT:
            return _strings(self.index, shape, self._frames, limits)
        if self._out is None:   # one part: a view of the frame
            return _one_part(self.index, dtype, shape, nbytes, frame_view(self._frames[0]))
        result = self._out.view()  # read-only view; a pooled buffer itself stays writable for reuse
        result.flags.writeable = False
        return result


class StreamedTensors:
    """The tensors of one message, filled part by part (every descriptor checked up front)."""

    __slots__ = ("_tensors", "_current", "remaining", "nbytes", "_limits", "_shared")

    def __init__(self, descriptors: Any, limits: Limits = DEFAULT_LIMITS,
                 allocate: Allocate | None = None, attach: Attach | None = None) -> None:
        specs = _check_descriptors(descriptors, limits)
        self._tensors = [TensorParts(i, spec, allocate) for i, spec in enumerate(specs)]
        self._shared = {i: _attached(i, spec, descriptors[i], attach)
                        for i, spec in enumerate(specs) if spec[2] == 0}
        self._current = 0
        self.remaining = sum(spec[2] for spec in specs)   # parts still to come
        self.nbytes = sum(spec[3] for spec in specs)      # what the parts declare, in all
        self._limits = limits

    def add(self, frame: Frame) -> None:
        """The next part of the message, in order; InvalidArgumentError if it does not fit."""
        if not self.remaining:
            raise InvalidArgumentError("more parts than the tensors' descriptors list")
        tensor = self._tensors[self._current]
        while tensor.complete:   # a shared-memory tensor: no parts
            self._current += 1
            tensor = self._tensors[self._current]
        tensor.add(frame)
        self.remaining -= 1
        if tensor.complete:
            self._current += 1

    def arrays(self) -> list[np.ndarray]:
        shared = self._shared
        return [shared[i] if i in shared else tensor.result(self._limits)
                for i, tensor in enumerate(self._tensors)]


def decode_tensor(index: int, descriptor: Any, frames: Sequence[Frame],
                  limits: Limits = DEFAULT_LIMITS, allocate: Allocate | None = None) -> np.ndarray:
    """One descriptor and exactly its part frames -> a read-only array.

    One part: a view of the frame, no copy. Several parts: one array filled part by part,
    the only copy on the receive path. Its cost is mostly page faults: 64 MiB took ~6.5 ms
    into recycled memory but ~160 ms into fresh pages on a 2-vCPU VM. So a receiver of big
    tensors should pass ``allocate(dtype, shape) -> array`` handing out pre-faulted pooled
    buffers (the result is a read-only view of it), or use ``decode_parts`` and work part
    by part when it only reduces.
    """
    return _assemble(index, _check_descriptor(index, descriptor, limits), frames, allocate, limits)


def decode_parts(index: int, descriptor: Any, frames: Sequence[Frame],
                 limits: Limits = DEFAULT_LIMITS) -> list[np.ndarray]:
    """One descriptor and its part frames -> flat read-only 1-D arrays, one per part, no copy.

    Their concatenation, reshaped to the descriptor's shape, is the tensor: a consumer that
    only reduces (sum, max, a checksum) can work over the parts and skip the assembly copy.
    """
    dtype, shape, parts, nbytes = _check_descriptor(index, descriptor, limits)
    if parts != len(frames) or parts == 0:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}) has {parts} parts, "
            f"{len(frames)} frames given"
        )
    if dtype is _OBJECT:
        return [_strings(index, shape, frames, limits).reshape(-1)]
    return _part_arrays(index, dtype, shape, nbytes, [frame_view(f) for f in frames])


def _check_descriptors(descriptors: Any, limits: Limits) -> list[_Spec]:
    if not isinstance(descriptors, list):
        raise InvalidArgumentError(
            f"tensors must be a list of descriptors, got {short_repr(descriptors)}"
        )
    if len(descriptors) > limits.max_tensors:
        raise InvalidArgumentError(
            f"{len(descriptors)} tensors in one message, over the limit of {limits.max_tensors}"
        )
    specs = []
    for index, descriptor in enumerate(descriptors):   # a loop: every message decodes here
        specs.append(_check_descriptor(index, descriptor, limits))
    return specs


def decode_tensors(descriptors: Any, frames: Sequence[Frame], limits: Limits = DEFAULT_LIMITS,
                   allocate: Allocate | None = None,
                   attach: Attach | None = None) -> list[np.ndarray]:
    """Descriptors and all the tensor frames of a message (in order) -> read-only arrays.

    Every frame must belong to exactly one tensor: missing or extra frames are errors.
    ``allocate`` is used for multi-part tensors only (see ``decode_tensor``); ``attach``
    maps shared-memory tensors (None: the sender is not on this host, and they are errors).
    """
    checked = _check_descriptors(descriptors, limits)
    needed = 0
    for spec in checked:
        needed += spec[2]
    if needed != len(frames):
        raise InvalidArgumentError(
            f"{len(descriptors)} tensors need {needed} frames, the message has {len(frames)}"
        )
    arrays = []
    start = 0
    for index, spec in enumerate(checked):
        dtype, shape, parts, nbytes = spec
        if parts == 1 and dtype is not _OBJECT:   # the usual tensor: a view of its one frame
            arrays.append(_one_part(index, dtype, shape, nbytes, frame_view(frames[start])))
        elif parts == 0:
            arrays.append(_attached(index, spec, descriptors[index], attach))
        else:
            arrays.append(_assemble(index, spec, frames[start:start + parts], allocate, limits))
        start += parts
    return arrays


def _attached(index: int, spec: _Spec, descriptor: Descriptor,
              attach: Attach | None) -> np.ndarray:
    dtype, shape, _, nbytes = spec
    if attach is None:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}) is in shared memory, but its sender "
            f"is not on this host or shared memory is off here; such a peer must send it "
            f"over the socket")
    return attach(index, descriptor["shm"], dtype, shape, nbytes)


def _assemble(index: int, spec: _Spec, frames: Sequence[Frame],
              allocate: Allocate | None, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    dtype, shape, parts, nbytes = spec
    if parts != len(frames) or parts == 0:
        raise InvalidArgumentError(
            f"tensor {index} ({_describe(dtype, shape)}) has {parts} parts, "
            f"{len(frames)} frames given (a shared-memory tensor decodes with its message)"
        )
    if parts == 1 and dtype is not _OBJECT:
        return _one_part(index, dtype, shape, nbytes, frame_view(frames[0]))
    if parts > 1 and dtype is not _OBJECT:   # all there: check the total before allocating
        total = sum(frame_view(f).nbytes for f in frames)
        if total != nbytes:
            raise InvalidArgumentError(
                f"tensor {index} ({_describe(dtype, shape)}) needs {nbytes} bytes, "
                f"frames have {total}"
            )
    tensor = TensorParts(index, spec, allocate)
    for frame in frames:
        tensor.add(frame)
    return tensor.result(limits)


def _strings(index: int, shape: list[int], frames: Sequence[Frame],
             limits: Limits) -> np.ndarray:
    """[lengths, data parts...] -> a read-only object array of bytes, every count checked."""
    what = f"tensor {index} ({_describe(STRING_DTYPE, shape)})"
    count = math.prod(shape)
    views = [frame_view(f) for f in frames]
    if views[0].nbytes != count * _LENGTHS.itemsize:
        raise InvalidArgumentError(
            f"{what}: the lengths frame needs {count * _LENGTHS.itemsize} bytes (8 per "
            f"element), has {views[0].nbytes}"
        )
    lengths = np.frombuffer(views[0], dtype=_LENGTHS)
    data_bytes = sum(v.nbytes for v in views[1:])
    if data_bytes + views[0].nbytes > limits.max_tensor_bytes:
        raise InvalidArgumentError(
            f"{what} has {data_bytes + views[0].nbytes} bytes, over the limit of "
            f"{limits.max_tensor_bytes} bytes per tensor"
        )
    # max first: with every length <= data_bytes (< 2**33), the sum cannot overflow uint64
    if count and (int(lengths.max()) > data_bytes or int(lengths.sum()) != data_bytes):
        raise InvalidArgumentError(
            f"{what}: the element lengths sum to "
            f"{int(lengths.sum()) if int(lengths.max()) <= data_bytes else 'more'} bytes, "
            f"the data frames have {data_bytes}"
        )
    if not count and data_bytes:
        raise InvalidArgumentError(f"{what}: no elements, but {data_bytes} bytes of data")
    data = bytes(views[1]) if len(views) == 2 else b"".join(views[1:])
    out = np.empty(count, dtype=object)
    ends = np.cumsum(lengths).tolist()
    start = 0
    for position, end in enumerate(ends):
        out[position] = data[start:end]
        start = end
    out = out.reshape(shape)
    out.flags.writeable = False
    return out


def _allocated(allocate: Allocate, dtype: np.dtype, shape: list[int]) -> np.ndarray:
    out = allocate(dtype, tuple(shape))
    if (not isinstance(out, np.ndarray) or out.dtype != dtype or out.shape != tuple(shape)
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(
            f"allocate({dtype}, {tuple(shape)}) must return a writable C-contiguous array of "
            f"that dtype and shape, got {short_repr(out)}"
        )
    return out


def _make_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, 40, 40
    short.maxlist = short.maxtuple = short.maxdict = 8
    return short


_SHORT_REPR = _make_repr()


def short_repr(value: Any) -> str:
    """repr of a peer's value, bounded in size and cost: error messages must stay small."""
    return _SHORT_REPR.repr(value)


__all__ = [
    "Allocate", "CHUNK_BYTES", "DEFAULT_LIMITS", "Limits", "MAX_RANK", "STRING_DTYPE", "WIRE_DTYPES",
    "StreamedTensors", "TensorParts", "decode_parts", "decode_tensor", "decode_tensors",
    "encode_tensor", "encode_tensors", "frame_view", "short_repr",
]
