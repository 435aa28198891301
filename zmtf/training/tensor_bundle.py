"""TensorFlow's V2 checkpoint format (a "tensor bundle"): read it and write it.

A checkpoint prefix ``P`` is two kinds of file::

    P.index                         an SSTable (training/sstable.py): tensor name -> BundleEntryProto
    P.data-00000-of-00001, ...      the shards: each tensor's raw bytes, one after another

The index's first key is "" and holds a BundleHeaderProto (num_shards, endianness, version);
every other key is a tensor name whose BundleEntryProto gives its dtype, shape, shard, byte
offset and size in that shard, and the masked CRC-32C of those bytes. A tensor saved in slices
(a partitioned variable) has an entry with its full shape and the list of ``slices``, and
each slice is its own entry under a binary key (``slice_key``). Numeric tensors are stored as
little-endian C-order bytes; a tf.string tensor as every element's varint64 length, then a
masked CRC-32C of those lengths (each taken as a little-endian uint32), then the bytes of
every element. (TF's tensor_bundle.proto and tensor_bundle.cc define all this.)

The codec here is pure functions over bytes; ``BundleReader`` and ``write_bundle`` are the thin
file shell. Everything read is checked before use (sizes against the file, CRCs, shapes,
dtypes, slice coverage); a fault raises DataLossError naming the file and what is wrong.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from zmtf.formats.crc32c import crc32c, crc32c_extend, mask, unmask
from zmtf.framework.errors import (
    DataLossError, InvalidArgumentError, NotFoundError, UnimplementedError,
)
from zmtf.formats.graph_def_proto import TensorShapeProto, VersionDef
from zmtf.formats.varint import read_varint, varint
from zmtf.formats.tensor_bundle_proto import BundleEntryProto, BundleHeaderProto, TensorSliceProto
from zmtf.training.atomic_file import atomic_write
from zmtf.training.sstable import build_table, read_table

#: TF's kTensorBundleVersion; a bundle whose min_consumer is above it is refused
BUNDLE_VERSION = 1
_LITTLE, _BIG = 0, 1

#: DataType enum (types.proto) <-> numpy; tf.string is 7
DT_STRING = 7
_DT_NUMPY = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
             9: "int64", 10: "bool", 17: "uint16", 19: "float16", 22: "uint32", 23: "uint64"}
_NUMPY_DT = {name: number for number, name in _DT_NUMPY.items()}
#: the names TF prints (DataType_Name), for debug_string and errors
DT_NAMES = {1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
            6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL",
            11: "DT_QINT8", 12: "DT_QUINT8", 13: "DT_QINT32", 14: "DT_BFLOAT16",
            15: "DT_QINT16", 16: "DT_QUINT16", 17: "DT_UINT16", 18: "DT_COMPLEX128",
            19: "DT_HALF", 20: "DT_RESOURCE", 21: "DT_VARIANT", 22: "DT_UINT32",
            23: "DT_UINT64"}


def index_filename(prefix: str) -> str:
    return prefix + ".index"


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def is_bundle(prefix: str) -> bool:
    """True when ``prefix`` names a V2 checkpoint (its .index file exists)."""
    return os.path.isfile(index_filename(prefix))


def numpy_dtype(dtype_enum: int) -> np.dtype:
    """The numpy dtype of a DataType enum value; UnimplementedError for those zmtf lacks."""
    if dtype_enum == DT_STRING:
        return np.dtype(object)
    if dtype_enum not in _DT_NUMPY:
        name = DT_NAMES.get(dtype_enum, f"DataType {dtype_enum}")
        raise UnimplementedError(None, None, f"checkpoint tensors of type {name} are not "
                                             f"supported by zmtf (it has no such dtype)")
    return np.dtype(_DT_NUMPY[dtype_enum])


def dtype_enum(dtype: np.dtype) -> int:
    if dtype == object:
        return DT_STRING
    if dtype.name not in _NUMPY_DT:
        raise InvalidArgumentError(f"cannot save a tensor of numpy dtype {dtype} in a "
                                   f"TensorFlow checkpoint")
    return _NUMPY_DT[dtype.name]


# ---- the protos ---------------------------------------------------------------------------
#: one dimension of a slice: (start, length); length -1 is TF's "full extent" (start 0)
Extent = tuple[int, int]


@dataclass(frozen=True)
class BundleEntry:
    """A BundleEntryProto: where one tensor (or the slice list of a sliced one) lives."""

    dtype: int
    shape: tuple[int, ...]
    shard_id: int = 0
    offset: int = 0
    size: int = 0
    crc32c: int = 0                                   # masked, as stored
    slices: tuple[tuple[Extent, ...], ...] = field(default=())


@dataclass(frozen=True)
class BundleHeader:
    num_shards: int = 1
    endianness: int = _LITTLE
    producer: int = BUNDLE_VERSION
    min_consumer: int = 0
    bad_consumers: tuple[int, ...] = ()


def _shape_proto(shape: tuple[int, ...]) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in shape])


def encode_shape(shape: tuple[int, ...]) -> bytes:
    return _shape_proto(shape).SerializeToString()


def encode_entry(entry: BundleEntry) -> bytes:
    proto = BundleEntryProto(dtype=entry.dtype, shape=_shape_proto(entry.shape),
                             shard_id=entry.shard_id, offset=entry.offset, size=entry.size,
                             crc32c=entry.crc32c)
    for extents in entry.slices:
        proto.slices.add(extent=[TensorSliceProto.Extent(start=start) if length < 0 else
                                 TensorSliceProto.Extent(start=start, length=length)
                                 for start, length in extents])
    return proto.SerializeToString()


def encode_header(header: BundleHeader) -> bytes:
    return BundleHeaderProto(
        num_shards=header.num_shards, endianness=header.endianness,
        version=VersionDef(producer=header.producer, min_consumer=header.min_consumer,
                           bad_consumers=header.bad_consumers)).SerializeToString()


def _parse(message: Any, data: bytes, where: str) -> Any:
    """The parsed message; malformed bytes are DataLossError naming ``where``."""
    try:
        return message.FromString(data)
    except InvalidArgumentError as error:
        raise DataLossError(None, None, f"{where}: {error.message}: the entry is not "
                                        f"parseable") from None


def _decode_shape(proto: TensorShapeProto, where: str) -> tuple[int, ...]:
    if proto.unknown_rank:
        raise DataLossError(None, None, f"{where}: a saved tensor of unknown rank")
    for dim in proto.dim:
        if dim.size < 0:
            raise DataLossError(None, None, f"{where}: invalid tensor shape (dimension "
                                            f"{dim.size})")
    return tuple(dim.size for dim in proto.dim)


def _decode_slice(proto: TensorSliceProto, where: str) -> tuple[Extent, ...]:
    extents = []
    for extent in proto.extent:
        start = extent.start
        length = extent.length if extent.HasField("length") else -1
        if start < 0 or length < -1:
            raise DataLossError(None, None, f"{where}: invalid slice extent ({start}, {length})")
        extents.append((start, length))
    return tuple(extents)


def decode_entry(data: bytes, where: str) -> BundleEntry:
    proto = _parse(BundleEntryProto, data, where)
    entry = BundleEntry(dtype=proto.dtype, shape=_decode_shape(proto.shape, where),
                        shard_id=proto.shard_id, offset=proto.offset, size=proto.size,
                        crc32c=proto.crc32c,
                        slices=tuple(_decode_slice(s, where) for s in proto.slices))
    if min(entry.shard_id, entry.offset, entry.size) < 0:
        raise DataLossError(None, None, f"{where}: negative shard, offset or size in the entry")
    return entry


def decode_header(data: bytes, where: str) -> BundleHeader:
    proto = _parse(BundleHeaderProto, data, where)
    version = proto.version   # proto3: a num_shards of 0 is one left out, so 1 (as before)
    header = BundleHeader(num_shards=proto.num_shards or 1, endianness=proto.endianness,
                          producer=version.producer, min_consumer=version.min_consumer,
                          bad_consumers=tuple(version.bad_consumers))
    if header.num_shards < 1 or header.endianness not in (_LITTLE, _BIG):
        raise DataLossError(None, None, f"{where}: bad header (num_shards {header.num_shards}, "
                                        f"endianness {header.endianness})")
    if header.producer < 0 or header.min_consumer > BUNDLE_VERSION or \
            BUNDLE_VERSION in header.bad_consumers:
        raise InvalidArgumentError(
            f"{where}: checkpoint format version (producer {header.producer}, min consumer "
            f"{header.min_consumer}, bad consumers {list(header.bad_consumers)}) cannot be "
            f"read by this reader (version {BUNDLE_VERSION}); it was written by a newer "
            f"TensorFlow")
    return header


# ---- slice keys (TF's checkpoint::EncodeTensorNameSlice, in OrderedCode) --------------------
def _ordered_unsigned(value: int) -> bytes:
    body = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    return bytes([len(body)]) + body


def _escape(text: bytes) -> bytes:
    out = bytearray()
    for byte in text:
        out += b"\x00\xff" if byte == 0 else b"\xff\x00" if byte == 0xFF else bytes([byte])
    return bytes(out)


def _ordered_signed(value: int) -> bytes:
    """OrderedCode's WriteSignedNumIncreasing: the sign and the length in the leading bits."""
    magnitude = ~value if value < 0 else value
    length = magnitude.bit_length() // 7 + 1
    raw = bytearray((value & ((1 << 80) - 1)).to_bytes(10, "big")[10 - length:])
    header = ((0xFF00 >> min(length, 8)) & 0xFF, 0 if length <= 8 else (0xFF00 >> (length - 8)) & 0xFF)
    raw[0] ^= header[0]
    if length > 1:
        raw[1] ^= header[1]
    return bytes(raw)


def slice_key(name: str, extents: tuple[Extent, ...]) -> bytes:
    """The key under which a bundle stores one slice of tensor ``name``."""
    key = _ordered_unsigned(0) + _escape(name.encode("utf-8")) + b"\x00\x01"
    key += _ordered_unsigned(len(extents))
    for start, length in extents:
        key += _ordered_signed(start) + _ordered_signed(length)
    return key


# ---- tensor bytes -------------------------------------------------------------------------
_PIECE = 1 << 20   # bytes of a large tensor written or read, and CRC'd, at a time
def _length_word(length: int, order: str) -> bytes:
    """How a string length enters the CRC: as uint32 (uint64 above 4 GiB), in file order."""
    return struct.pack(order + ("I" if length <= 0xFFFFFFFF else "Q"), length)


def encode_tensor(array: np.ndarray) -> tuple[list[bytes | memoryview], int | None]:
    """The bytes a shard stores for ``array`` (as pieces, not joined) and their CRC-32C; for
    a numeric tensor the CRC is None: its pieces are _PIECE-byte views, and the writer
    computes the CRC of each as it writes it, while it is in cache."""
    if array.dtype != object:
        little = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"), copy=False))
        data = memoryview(little.reshape(-1).view(np.uint8))
        return [data[at:at + _PIECE] for at in range(0, len(data), _PIECE)] or [data], None
    items = [item.encode("utf-8") if isinstance(item, str) else bytes(item)
             for item in array.reshape(-1)]
    lengths = b"".join(varint(len(item)) for item in items)
    checksum = struct.pack("<I", mask(crc32c(b"".join(_length_word(len(i), "<") for i in items))))
    strings = b"".join(items)
    crc = crc32c(b"".join(_length_word(len(i), "<") for i in items) + checksum + strings)
    return [lengths, checksum, strings], crc


def decode_tensor(entry: BundleEntry, raw: bytes | np.ndarray, big_endian: bool, where: str,
                  crc: int | None = None) -> np.ndarray:
    """The tensor ``entry`` describes, from its ``raw`` bytes (``entry.size`` of them; a
    writable array of the tensor's dtype, as the reader fills it, is the result itself when
    the stored byte order is the machine's);
    ``crc``, if given, is theirs, computed as they were read."""
    dtype = numpy_dtype(entry.dtype)
    count = math.prod(entry.shape)
    if dtype != object:
        crc = crc32c(raw) if crc is None else crc
        if crc != unmask(entry.crc32c):
            raise DataLossError(None, None, f"{where}: checksum does not match: stored "
                                            f"{unmask(entry.crc32c):08x} vs. calculated on the "
                                            f"restored bytes {crc:08x}")
        stored = dtype.newbyteorder(">" if big_endian else "<")
        if isinstance(raw, np.ndarray) and raw.flags.writeable:
            native = raw.dtype == dtype and stored == dtype
            value = raw if native else raw.view(stored).astype(dtype)
            value.shape = entry.shape   # in place: the tensor stays the owner of its memory
            return value
        return np.frombuffer(raw, stored).astype(dtype).reshape(entry.shape)
    return _decode_strings(entry, raw, count, ">" if big_endian else "<", where)


def _decode_strings(entry: BundleEntry, raw: bytes, count: int, order: str, where: str
                    ) -> np.ndarray:
    out = np.empty(count, dtype=object)
    if count == 0:
        return out.reshape(entry.shape)
    lengths, pos = [], 0
    try:
        for _ in range(count):
            length, pos = read_varint(raw, pos, where)
            lengths.append(length)
    except InvalidArgumentError as error:
        raise DataLossError(None, None, f"{error.message} in the string lengths") from None
    words = b"".join(_length_word(length, order) for length in lengths)
    if pos + 4 + sum(lengths) != len(raw):
        raise DataLossError(None, None, f"{where}: string lengths add up to "
                                        f"{pos + 4 + sum(lengths)} bytes but the entry holds "
                                        f"{len(raw)}")
    (checksum,) = struct.unpack(order + "I", raw[pos:pos + 4])
    if unmask(checksum) != crc32c(words):
        raise DataLossError(None, None, f"{where}: the length checksum does not match")
    crc = crc32c(words + raw[pos:])
    if crc != unmask(entry.crc32c):
        raise DataLossError(None, None, f"{where}: checksum does not match: stored "
                                        f"{unmask(entry.crc32c):08x} vs. calculated on the "
                                        f"restored bytes {crc:08x}")
    pos += 4
    for i, length in enumerate(lengths):
        out[i] = raw[pos:pos + length]
        pos += length
    return out.reshape(entry.shape)


def _read_bytes(f: IO[bytes], entry: BundleEntry) -> tuple[bytes | np.ndarray, int | None]:
    """``entry.size`` bytes from ``f`` and, for a numeric tensor, their CRC-32C: read straight
    into the array of the tensor's dtype that will hold them (one copy from the file, not two;
    the array owns its memory, so Saver.restore can hand it to the variable), a _PIECE at a
    time, each piece's CRC taken while it is in cache. Strings come as bytes (CRC None)."""
    dtype = numpy_dtype(entry.dtype)
    if dtype == object:
        return f.read(entry.size), None
    out = np.empty(entry.size // dtype.itemsize, dtype)   # _check_size: a whole number of items
    data = out.view(np.uint8)
    crc, at = 0, 0
    while at < entry.size:
        piece = data[at:at + _PIECE]
        got = f.readinto(memoryview(piece))  # type: ignore[attr-defined]
        if not got:
            return data[:at].tobytes(), None   # cut short: decode_tensor reports it
        crc = crc32c_extend(crc, piece[:got])
        at += got
    return out, crc


def _check_size(entry: BundleEntry, where: str) -> None:
    """Refuse an entry whose size cannot hold its shape, before anything is allocated."""
    count = math.prod(entry.shape)
    dtype = numpy_dtype(entry.dtype)
    if dtype != object and count * dtype.itemsize != entry.size:
        raise DataLossError(None, None, f"{where}: invalid size in bundle entry: stored "
                                        f"size {entry.size}; expected size "
                                        f"{count * dtype.itemsize} for shape {list(entry.shape)}")
    if dtype == object and count and entry.size < count + 4:
        raise DataLossError(None, None, f"{where}: invalid size in bundle entry: stored "
                                        f"size {entry.size}; expected at least {count + 4} "
                                        f"for {count} strings")


# ---- the file shell -----------------------------------------------------------------------
def _key_name(key: bytes) -> str:
    return key.decode("utf-8", "surrogateescape")


class BundleReader:
    """The tensors of the V2 checkpoint ``prefix``: its index is read and checked at once,
    each tensor when asked for."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        path = index_filename(prefix)
        try:
            with open(path, "rb") as f:
                table = read_table(f.read(), path)
        except FileNotFoundError:
            raise NotFoundError(None, None, f"Failed to find any matching files for {prefix} "
                                            f"(no file {path})") from None
        if not table or table[0][0] != b"":
            raise DataLossError(None, None, f"{path}: failed to seek to header entry: the "
                                            f"index has no header; it is corrupt or not a "
                                            f"checkpoint index")
        self.header = decode_header(table[0][1], f"{path}: header")
        self._entries = {key: decode_entry(value, f"{path}: entry {key!r}")
                         for key, value in table[1:]}
        slice_keys = {slice_key(_key_name(key), extents)
                      for key, entry in self._entries.items() for extents in entry.slices}
        #: tensor name -> entry, without the entries of single slices (as TF lists them)
        self.entries = {_key_name(key): entry for key, entry in self._entries.items()
                        if key not in slice_keys}

    def debug_string(self) -> bytes:
        """TF's BundleReader::DebugString: ``key (DT_...) [d0,d1]`` per line, in key order,
        the sliced tensors' own entries left out (their slices are listed)."""
        lines = [key + f" ({DT_NAMES.get(e.dtype, e.dtype)}) [{','.join(map(str, e.shape))}]\n"
                 for key, e in ((_key_name(k), e) for k, e in self._entries.items())
                 if not e.slices]
        return "".join(lines).encode("utf-8", "surrogateescape")

    def tensor(self, name: str) -> np.ndarray:
        """The value of tensor ``name`` (a sliced one assembled from its slices)."""
        entry = self.entries.get(name)
        if entry is None:
            raise NotFoundError(None, None, f"Key {name} not found in checkpoint")
        if not entry.slices:
            return self._read(entry, name)
        return self._assemble(name, entry)

    def _read(self, entry: BundleEntry, name: str) -> np.ndarray:
        if entry.shard_id >= self.header.num_shards:
            raise DataLossError(None, None, f"{index_filename(self.prefix)}: tensor {name} is "
                                            f"in shard {entry.shard_id} of "
                                            f"{self.header.num_shards}")
        path = data_filename(self.prefix, entry.shard_id, self.header.num_shards)
        where = f"{path}: tensor {name}"
        _check_size(entry, where)
        try:
            with open(path, "rb") as f:
                file_size = os.fstat(f.fileno()).st_size
                if entry.offset + entry.size > file_size:
                    raise DataLossError(None, None, f"{where}: needs bytes {entry.offset} to "
                                                    f"{entry.offset + entry.size} but the file "
                                                    f"has {file_size}: it is truncated")
                f.seek(entry.offset)
                raw, crc = _read_bytes(f, entry)
        except FileNotFoundError:
            raise NotFoundError(None, None, f"{path} not found: the data file of checkpoint "
                                            f"{self.prefix} is missing") from None
        return decode_tensor(entry, raw, self.header.endianness == _BIG, where, crc)

    def _assemble(self, name: str, entry: BundleEntry) -> np.ndarray:
        where = f"{index_filename(self.prefix)}: tensor {name}"
        boxes = [tuple((s, d) if n < 0 else (s, n) for (s, n), d in zip(extents, entry.shape))
                 for extents in entry.slices]
        if any(len(box) != len(entry.shape) or any(s + n > d for (s, n), d in
                                                    zip(box, entry.shape)) for box in boxes):
            raise DataLossError(None, None, f"{where}: a slice lies outside shape "
                                            f"{list(entry.shape)}")
        _check_tiling(boxes, entry.shape, where)
        out = np.empty(entry.shape, dtype=numpy_dtype(entry.dtype))
        for extents, box in zip(entry.slices, boxes):
            key = slice_key(name, extents)
            part = self._entries.get(key)
            if part is None:
                raise DataLossError(None, None, f"{where}: slice {list(box)} has no entry")
            if part.shape != tuple(n for _, n in box) or part.dtype != entry.dtype:
                raise DataLossError(None, None, f"{where}: slice {list(box)} is stored as "
                                                f"{DT_NAMES.get(part.dtype)} {list(part.shape)}")
            out[tuple(slice(s, s + n) for s, n in box)] = self._read(part, name)
        return out


def _check_tiling(boxes: list[tuple[Extent, ...]], shape: tuple[int, ...], where: str) -> None:
    """The slices must cover the tensor exactly once (TF: "Does not have sufficient slices")."""
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            if all(sa < sb + nb and sb < sa + na for (sa, na), (sb, nb) in zip(a, b)):
                raise DataLossError(None, None, f"{where}: slices {list(a)} and {list(b)} "
                                                f"overlap")
    if sum(math.prod(n for _, n in box) for box in boxes) != math.prod(shape):
        raise DataLossError(None, None, f"{where}: does not have sufficient slices for "
                                        f"partitioned tensor of shape {list(shape)}")


def write_bundle(prefix: str, tensors: Mapping[str, np.ndarray]) -> None:
    """Write ``tensors`` as TF's Saver would: one data shard, the tensors in key order, then
    the index; each file atomically, data first, so the index never names missing bytes."""
    names = sorted(tensors, key=lambda n: n.encode("utf-8"))
    if "" in tensors:
        raise InvalidArgumentError("a checkpoint tensor cannot be named \"\" (the header's key)")
    entries: list[tuple[bytes, bytes]] = []

    def write_data(f: IO[bytes]) -> None:
        offset = 0
        for name in names:
            array = np.asarray(tensors[name])
            pieces, crc = encode_tensor(array)
            size = sum(len(piece) for piece in pieces)
            running = 0
            for piece in pieces:
                f.write(piece)
                if crc is None:
                    running = crc32c_extend(running, piece)
            crc = running if crc is None else crc
            entry = BundleEntry(dtype_enum(array.dtype), tuple(array.shape), 0, offset, size,
                                mask(crc))
            entries.append((name.encode("utf-8"), encode_entry(entry)))
            offset += size

    atomic_write(data_filename(prefix, 0, 1), write_data)
    index = build_table([(b"", encode_header(BundleHeader()))] + entries)
    atomic_write(index_filename(prefix), lambda f: f.write(index))


def bundle_files(prefix: str) -> list[str]:
    """The files of checkpoint ``prefix`` that exist: the index and every data shard."""
    folder = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    shards = [n for n in names if n.startswith(base + ".data-") and n[len(base) + 6:].replace(
        "-of-", "").isdigit()]
    found = [os.path.join(folder, n) for n in sorted(shards)]
    return ([index_filename(prefix)] if is_bundle(prefix) else []) + found


__all__ = ["BUNDLE_VERSION", "BundleEntry", "BundleHeader", "BundleReader", "bundle_files",
           "data_filename", "decode_entry", "DT_NAMES", "DT_STRING", "decode_header", "decode_tensor", "encode_entry",
           "encode_header", "encode_tensor", "index_filename", "is_bundle", "numpy_dtype",
           "slice_key", "write_bundle"]
