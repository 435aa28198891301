"""CRC-32C (Castagnoli), as TensorFlow's crc32c::Value / Mask / Unmask compute it.

TFRecord frames, event files, checkpoint bundles and their SSTable index all carry it. Small
inputs go through a byte table in pure Python. Large ones (checkpoint tensors of many MB) are
cut into equal chunks whose CRCs numpy computes in lockstep, 4 bytes a step (two 64K-entry
tables, since 4 bytes after the state are a linear map of their xor); the
chunk CRCs are then merged pairwise, since a CRC is linear over GF(2): appending m zero bytes
is a fixed 32x32 bit matrix, applied here through four 256-entry tables.
"""

from __future__ import annotations

import functools

import numpy as np

_POLY = 0x82F63B78          # reflected Castagnoli polynomial
_MASK_DELTA = 0xA282EAD8
_SMALL = 1 << 14            # below this many bytes the plain loop is faster


def _byte_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _byte_table()
_NP_TABLE = np.array(_TABLE, dtype=np.uint32)


def _raw_small(state: int, data: bytes) -> int:
    table = _TABLE
    for byte in data:
        state = table[(state ^ byte) & 0xFF] ^ (state >> 8)
    return state


# ---- linear maps on the 32-bit CRC state: the images of the 32 unit vectors ------------------
def _apply(images: np.ndarray, states: np.ndarray) -> np.ndarray:
    """The linear map given by ``images`` applied to every state (uint32 array)."""
    out = np.zeros_like(states)
    for byte in range(4):
        part = images[8 * byte:8 * byte + 8]
        index = np.arange(256, dtype=np.uint32)
        table = np.zeros(256, dtype=np.uint32)
        for bit in range(8):
            table ^= np.where((index >> bit) & 1, part[bit], np.uint32(0))
        out ^= table[(states >> np.uint32(8 * byte)) & np.uint32(0xFF)]
    return out


def _zeros_map(n_bytes: int) -> np.ndarray:
    """The map "run the CRC register over ``n_bytes`` zero bytes" (square and multiply)."""
    unit = np.array([1 << i for i in range(32)], dtype=np.uint32)
    step = _NP_TABLE[unit & np.uint32(0xFF)] ^ (unit >> np.uint32(8))   # one zero byte
    result = unit.copy()
    while n_bytes:
        if n_bytes & 1:
            result = _apply(step, result)
        step = _apply(step, step)
        n_bytes >>= 1
    return result


@functools.cache   # constants, built on first use rather than at import
def _word_tables() -> tuple[np.ndarray, np.ndarray]:
    """Running the register over 4 bytes from state s is G(s ^ word), G = "4 zero bytes",
    a linear map: G(x) = low[x & 0xffff] ^ high[x >> 16]."""
    x = np.arange(1 << 16, dtype=np.uint32)
    out = []
    for start in (x, x << np.uint32(16)):
        for _ in range(4):
            start = _NP_TABLE[start & np.uint32(0xFF)] ^ (start >> np.uint32(8))
        out.append(start)
    return out[0], out[1]


def _raw_large(data: np.ndarray) -> int:
    """The CRC register after ``data`` from state 0 (no pre/post inversion)."""
    low, high = _word_tables()
    chunk = 1 << max(10, (int(data.size).bit_length() + 1) // 2)
    count = -(-data.size // chunk)
    padded = np.zeros(count * chunk, dtype=np.uint8)
    padded[padded.size - data.size:] = data      # leading zeros leave a zero register alone
    words = np.ascontiguousarray(padded.view("<u4").reshape(count, chunk // 4).T)
    states = np.zeros(count, dtype=np.uint32)
    for column in words:
        states ^= column
        states = low[states & np.uint32(0xFFFF)] ^ high[states >> np.uint32(16)]
    while states.size > 1:
        if states.size % 2:
            states = np.concatenate([np.zeros(1, np.uint32), states])
        states = _apply(_zeros_map(chunk), states[0::2]) ^ states[1::2]
        chunk *= 2
    return int(states[0])


def crc32c(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """CRC-32C of ``data`` (TF's crc32c::Value); an ndarray counts as its raw bytes."""
    view = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    if view.size < _SMALL:
        return _raw_small(0xFFFFFFFF, view.tobytes()) ^ 0xFFFFFFFF
    start = int(_apply(_zeros_map(view.size), np.array([0xFFFFFFFF], np.uint32))[0])
    return start ^ _raw_large(view) ^ 0xFFFFFFFF


def mask(crc: int) -> int:
    """TF's crc32c::Mask: a CRC stored inside CRC'd data stays distinguishable."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    return mask(crc32c(data))


__all__ = ["crc32c", "mask", "masked_crc32c", "unmask"]
