"""GZIP and ZLIB compression of record files, as TF1 writes and reads them (zlib only).

TF names a compression by a string: "" (none), "ZLIB" (a zlib stream, RFC 1950) or "GZIP"
(gzip members, RFC 1952), the whole file compressed; ``TFRecordOptions`` adds zlib's settings
for writing. Files stay byte-compatible with TF's: its writer is zlib's deflate with the same
defaults (level 6, window 15 bits, +16 for a gzip header, memory level 9).

Reading is ``decompressed(stream, kind, name)``: a binary stream of the decompressed bytes,
inflated a bounded chunk at a time, that raises DataLossError naming the file for a stream that
is not of its declared kind, is damaged, or ends early (TF's own reader stops silently at a
truncated one; zmtf will not pass off half a file as all of it). As in TF, a GZIP file may
hold several members one after the other, and a ZLIB file ends where its stream ends.
Nothing here opens a file: callers hand in streams they opened.
"""

from __future__ import annotations

import io
import zlib
from typing import Any, BinaryIO

from zmtf.framework.errors import DataLossError

NONE, ZLIB, GZIP = "", "ZLIB", "GZIP"
KINDS = (NONE, ZLIB, GZIP)
_WINDOW_BITS = {ZLIB: zlib.MAX_WBITS, GZIP: zlib.MAX_WBITS + 16}
_CHUNK = 1 << 16   # compressed bytes read, and decompressed bytes made, per step


class TFRecordCompressionType:
    """TF's numbers for the compression kinds (``TFRecordOptions`` takes them or the strings)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_NAMES = {TFRecordCompressionType.NONE: NONE, TFRecordCompressionType.ZLIB: ZLIB,
          TFRecordCompressionType.GZIP: GZIP}


class TFRecordOptions:
    """``tf.python_io.TFRecordOptions``: the compression of a record file and, for writing,
    zlib's settings (None: TF's default). Invalid settings raise ValueError here, where TF
    would abort the process when the writer opens."""

    compression_type_map = {**_NAMES}

    def __init__(self, compression_type: Any = None, flush_mode: int | None = None,
                 input_buffer_size: int | None = None, output_buffer_size: int | None = None,
                 window_bits: int | None = None, compression_level: int | None = None,
                 compression_method: int | None = None, mem_level: int | None = None,
                 compression_strategy: int | None = None) -> None:
        self.get_compression_type_string(compression_type)
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy
        _check_settings(self)

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """"", "ZLIB" or "GZIP" for options, a TFRecordCompressionType number or a string."""
        if not options:
            return NONE
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, int) and options in _NAMES:
            return _NAMES[options]
        if isinstance(options, str) and options in KINDS:
            return options
        raise ValueError(f'Not a valid compression_type: "{options}"')


def _check_settings(options: TFRecordOptions) -> None:
    """zlib's settings in the ranges deflate accepts, each error naming its field."""
    bounds = {"compression_level": (-1, 9), "mem_level": (1, 9), "compression_strategy": (0, 4),
              "compression_method": (zlib.DEFLATED, zlib.DEFLATED), "flush_mode": (0, 3),
              "input_buffer_size": (1, None), "output_buffer_size": (1, None)}
    for field, (low, high) in bounds.items():
        value = getattr(options, field)
        if value is None:
            continue
        if not isinstance(value, int) or value < low or (high is not None and value > high):
            wanted = f"an int >= {low}" if high is None else f"an int in [{low}, {high}]"
            raise ValueError(f"TFRecordOptions: {field} must be {wanted}, got {value!r}")
    bits = options.window_bits
    if bits is not None and not (isinstance(bits, int) and
                                 (8 <= abs(bits) <= 15 or 24 <= bits <= 31)):
        raise ValueError(f"TFRecordOptions: window_bits must be 8..15 (zlib), 24..31 (gzip) or "
                         f"-15..-8 (raw deflate), got {bits!r}")


def compressor(options: Any) -> Any:
    """The zlib compressor a writer with ``options`` feeds (None: no compression), and the
    flush mode to apply after each record (zlib.Z_NO_FLUSH by default)."""
    kind = TFRecordOptions.get_compression_type_string(options)
    if kind == NONE:
        return None, zlib.Z_NO_FLUSH
    if not isinstance(options, TFRecordOptions):
        options = TFRecordOptions(options)

    def given(value: int | None, default: int) -> int:
        return default if value is None else value

    deflate = zlib.compressobj(given(options.compression_level, zlib.Z_DEFAULT_COMPRESSION),
                               given(options.compression_method, zlib.DEFLATED),
                               given(options.window_bits, _WINDOW_BITS[kind]),
                               given(options.mem_level, 9),
                               given(options.compression_strategy, zlib.Z_DEFAULT_STRATEGY))
    return deflate, given(options.flush_mode, zlib.Z_NO_FLUSH)


class _Inflating(io.RawIOBase):
    """The decompressed bytes of a zlib or gzip ``raw`` stream, a bounded chunk at a time."""

    def __init__(self, raw: BinaryIO, kind: str, name: str) -> None:
        self._raw, self._kind, self._name = raw, kind, name
        self._inflater = zlib.decompressobj(_WINDOW_BITS[kind])
        self._member_started = False   # compressed bytes of the current stream seen
        self._pending = b""            # compressed bytes not yet given to the inflater
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while view and not self._done:   # (a limit of 0 would mean "no limit" to zlib)
            out = self._step(len(view))
            if out:
                view[:len(out)] = out
                return len(out)
        return 0

    def _step(self, limit: int) -> bytes:
        """Up to ``limit`` decompressed bytes (maybe none yet); sets _done at the end."""
        data = self._inflater.unconsumed_tail or self._pending or self._raw.read(_CHUNK)
        self._pending = b""
        try:
            if not data:
                out = self._inflater.flush()
                if not self._inflater.eof and self._member_started:
                    raise DataLossError(None, None, f"{self._name}: the {self._kind} stream is "
                                        f"truncated (the file ends inside it); the file was cut "
                                        f"short while written or copied: write it again")
                self._done = True
                return out
            self._member_started = True
            out = self._inflater.decompress(data, limit)
        except zlib.error as error:
            raise DataLossError(None, None, f"{self._name}: not a valid {self._kind} stream "
                                f"({error}); read it with the compression_type it was written "
                                f"with ('' for none, 'ZLIB' or 'GZIP')") from None
        if self._inflater.eof:
            self._end_of_stream()
        return out

    def _end_of_stream(self) -> None:
        """A GZIP file goes on with its next member, if any; a ZLIB file ends (as in TF)."""
        if self._kind == ZLIB:
            self._done = True
            return
        self._pending = self._inflater.unused_data
        self._inflater = zlib.decompressobj(_WINDOW_BITS[GZIP])
        self._member_started = False


def decompressed(stream: BinaryIO, kind: str, name: str) -> BinaryIO:
    """``stream`` itself for kind "", else a buffered stream of its decompressed bytes whose
    errors are DataLossError naming ``name``."""
    if kind == NONE:
        return stream
    if kind not in _WINDOW_BITS:
        raise ValueError(f'Not a valid compression_type: "{kind}"')
    return io.BufferedReader(_Inflating(stream, kind, name), _CHUNK)


__all__ = ["GZIP", "KINDS", "NONE", "TFRecordCompressionType", "TFRecordOptions", "ZLIB",
           "compressor", "decompressed"]
