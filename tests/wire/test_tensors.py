"""ndarray <-> (descriptor, frames): round trips, zero copy, and every refusal."""

import numpy as np
import pytest

from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire.tensors import (
    CHUNK_BYTES,
    WIRE_DTYPES,
    Limits,
    decode_parts,
    decode_tensor,
    decode_tensors,
    encode_tensor,
    encode_tensors,
)

ALL_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
              "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128"]


def round_trip(array):
    descriptor, parts = encode_tensor(array)
    return decode_tensor(0, descriptor, [bytes(p) for p in parts])


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def test_allowlist_is_exactly_the_zmtf_dtypes():
    assert WIRE_DTYPES == {np.dtype(d).str for d in ALL_DTYPES}


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_round_trip_every_dtype(dtype):
    array = sample(dtype, (3, 5))
    out = round_trip(array)
    assert out.dtype == array.dtype and out.shape == (3, 5)
    np.testing.assert_array_equal(out, array)
    assert not out.flags.writeable


@pytest.mark.parametrize("array", [
    np.float32(2.5), np.array(7, dtype=np.int64), np.zeros((0, 3), np.float32),
    np.zeros((0,), bool), np.ones((2, 0, 4), np.uint16),
], ids=["numpy-scalar", "0-d", "empty-0x3", "empty-bool", "empty-middle"])
def test_round_trip_scalars_and_empty(array):
    descriptor, parts = encode_tensor(array)
    assert descriptor["parts"] == len(parts) == 1
    out = decode_tensor(0, descriptor, parts)
    assert out.shape == np.shape(array) and out.dtype == np.asarray(array).dtype
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize("view", ["strided", "transposed", "fortran", "negative-stride"])
def test_non_contiguous_input(view):
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    array = {"strided": base[:, ::3], "transposed": base.T, "fortran": np.asfortranarray(base),
             "negative-stride": base[::-1]}[view]
    np.testing.assert_array_equal(round_trip(array), array)


def test_contiguous_encode_is_zero_copy():
    array = np.arange(1000, dtype=np.int32)
    descriptor, parts = encode_tensor(array)
    assert descriptor == {"dtype": "<i4", "shape": [1000], "parts": 1}
    assert np.shares_memory(np.frombuffer(parts[0], np.uint8), array)


def test_single_part_decode_is_zero_copy():
    frame = np.arange(24, dtype=np.float64).tobytes()
    out = decode_tensor(0, {"dtype": "<f8", "shape": [2, 3, 4], "parts": 1}, [frame])
    assert np.shares_memory(out, np.frombuffer(frame, np.uint8))
    assert out[1, 2, 3] == 23.0


def test_five_mib_tensor_travels_in_one_mib_parts():
    array = np.random.default_rng(1).standard_normal((5, 1 << 18)).astype(np.float32)  # 5 MiB
    descriptor, parts = encode_tensor(array)
    assert descriptor["parts"] == len(parts) == 5
    assert all(p.nbytes == CHUNK_BYTES for p in parts)
    assert all(np.shares_memory(np.frombuffer(p, np.uint8), array) for p in parts)
    frames = [bytearray(p) for p in parts]  # what a tcp receiver holds: separate buffers
    out = decode_tensor(0, descriptor, frames)
    np.testing.assert_array_equal(out, array)
    assert not out.flags.writeable
    pieces = decode_parts(0, descriptor, frames)
    assert [p.shape for p in pieces] == [(1 << 18,)] * 5
    assert all(np.shares_memory(p, np.frombuffer(f, np.uint8)) for p, f in zip(pieces, frames))
    np.testing.assert_allclose(sum(float(p.sum(dtype=np.float64)) for p in pieces),
                               array.sum(dtype=np.float64))


def test_multi_part_tensors_can_land_in_a_pooled_buffer():
    array = np.arange(40, dtype=np.float32).reshape(4, 10)
    descriptor, parts = encode_tensor(array, limits=Limits(chunk_bytes=64))
    pool = np.full((4, 10), -1.0, np.float32)
    requests = []

    def allocate(dtype, shape):
        requests.append((dtype, shape))
        return pool

    out = decode_tensors([descriptor], parts, allocate=allocate)[0]
    assert requests == [(np.dtype("<f4"), (4, 10))]
    assert np.shares_memory(out, pool) and not out.flags.writeable and pool.flags.writeable
    np.testing.assert_array_equal(out, array)
    with pytest.raises(ValueError, match="must return a writable C-contiguous array"):
        decode_tensor(0, descriptor, parts, allocate=lambda dt, shape: np.empty(shape, np.float64))


def test_uneven_last_part_and_small_chunks():
    array = np.arange(10, dtype=np.int16)
    descriptor, parts = encode_tensor(array, limits=Limits(chunk_bytes=8))
    assert [p.nbytes for p in parts] == [8, 8, 4]
    np.testing.assert_array_equal(decode_tensor(0, descriptor, parts), array)


def test_unaligned_frame_is_copied_into_an_aligned_array():
    raw = bytearray(1) + bytearray(np.arange(4, dtype=np.float64).tobytes())
    out = decode_tensor(0, {"dtype": "<f8", "shape": [4], "parts": 1}, [memoryview(raw)[1:]])
    assert out.flags.aligned
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0, 3.0])


class FakeZmqFrame:
    """What recv_multipart(copy=False) yields: the bytes are behind .buffer."""

    def __init__(self, data):
        self.buffer = memoryview(data)


def test_frames_may_be_objects_with_a_buffer():
    array = np.arange(6, dtype=np.uint8)
    descriptors, parts = encode_tensors([array, array.astype(np.int64)])
    out = decode_tensors(descriptors, [FakeZmqFrame(bytearray(p)) for p in parts])
    np.testing.assert_array_equal(out[1], array)


@pytest.mark.parametrize("array", [
    np.array(["a"]), np.array([object()]), np.zeros(2, dtype=">f4"), np.zeros(2, dtype="V4"),
    np.zeros(2, dtype="datetime64[s]"), np.zeros(2, dtype=">c8"),
    np.zeros(2, dtype=[("a", "<f4")]), [1.0, 2.0],
], ids=["str", "object", "big-endian", "void", "datetime", "big-endian-complex", "structured", "list"])
def test_encode_refuses_what_cannot_cross(array):
    with pytest.raises(InvalidArgumentError, match="tensor 0"):
        encode_tensor(array)


def test_chunk_size_must_keep_items_whole():
    with pytest.raises(ValueError, match="multiple of 8"):
        Limits(chunk_bytes=12)


def test_encode_limits():
    with pytest.raises(InvalidArgumentError, match="over the limit of 16 bytes"):
        encode_tensor(np.zeros(5, np.float32), limits=Limits(max_tensor_bytes=16))
    with pytest.raises(InvalidArgumentError, match="3 tensors in one message"):
        encode_tensors([np.zeros(1)] * 3, limits=Limits(max_tensors=2))


F4_12 = np.zeros((3, 4), np.float32).tobytes()  # 48 bytes
D = {"dtype": "<f4", "shape": [3, 4], "parts": 1}

MALFORMED = [
    # (descriptors, frames, message pattern)
    ("not-a-list", {"dtype": "<f4"}, [], r"tensors must be a list"),
    ("descriptor-not-map", [[1, 2]], [F4_12], r"tensor 0: descriptor must be a map"),
    ("missing-key", [{"dtype": "<f4", "shape": [3, 4]}], [F4_12], r"exactly the keys"),
    ("extra-key", [{**D, "strides": [16, 4]}], [F4_12], r"exactly the keys"),
    ("object-dtype", [{**D, "dtype": "|O"}], [F4_12], r"dtype '\|O' is not allowed"),
    ("big-endian", [{**D, "dtype": ">f4"}], [F4_12], r"dtype '>f4' is not allowed"),
    ("void", [{**D, "dtype": "|V48"}], [F4_12], r"not allowed"),
    ("dtype-name", [{**D, "dtype": "float32"}], [F4_12], r"not allowed"),
    ("dtype-int", [{**D, "dtype": 4}], [F4_12], r"not allowed"),
    ("shape-not-list", [{**D, "shape": 12}], [F4_12], r"shape must be a list"),
    ("shape-negative", [{**D, "shape": [-3, -4]}], [F4_12], r"shape must be a list"),
    ("shape-float", [{**D, "shape": [3.0, 4]}], [F4_12], r"shape must be a list"),
    ("shape-bool", [{**D, "shape": [True, 48]}], [F4_12], r"shape must be a list"),
    ("shape-none", [{**D, "shape": [None, 4]}], [F4_12], r"shape must be a list"),
    ("rank-33", [{**D, "shape": [1] * 33}], [F4_12], r"at most 32"),
    ("huge-dim", [{**D, "shape": [2**62, 0]}], [b""], r"shape must be a list"),
    ("empty-but-huge", [{**D, "shape": [0, 2**31, 2**31]}], [b""], r"dimensions too large"),
    ("too-many-bytes", [{**D, "shape": [2**30, 2]}], [F4_12],
     r"needs 8589934592 bytes, over the limit"),
    ("short-frame", [D], [F4_12[:40]],
     r"tensor 0 \(float32\[3, 4\]\) needs 48 bytes, frames have 40"),
    ("long-frame", [D], [F4_12 + b"\0" * 4], r"needs 48 bytes, frames have 52"),
    ("parts-zero", [{**D, "parts": 0}], [], r"parts must be an int >= 1"),
    ("parts-str", [{**D, "parts": "1"}], [F4_12], r"parts must be an int"),
    ("missing-frame", [D, D], [F4_12], r"2 tensors need 2 frames, the message has 1"),
    ("extra-frame", [D], [F4_12, F4_12], r"1 tensors need 1 frames, the message has 2"),
    ("parts-more-than-frames", [{**D, "parts": 3}], [F4_12], r"need 3 frames"),
    ("part-splits-an-item", [{**D, "parts": 2}], [F4_12[:2], F4_12[2:]],
     r"part 0 has 2 bytes, not a multiple"),
    ("second-tensor-bad", [D, {**D, "shape": [3, 5]}], [F4_12, F4_12],
     r"tensor 1 \(float32\[3, 5\]\) needs 60 bytes, frames have 48"),
    ("bool-not-0-1", [{"dtype": "|b1", "shape": [2], "parts": 1}], [b"\x01\x07"],
     r"bool bytes must be 0 or 1"),
    ("frame-not-buffer", [D], ["not bytes"], r"a frame must be bytes"),
    ("frame-int", [D], [48], r"a frame must be bytes"),
]


@pytest.mark.parametrize("descriptors,frames,pattern",
                         [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_tensors_are_refused(descriptors, frames, pattern):
    with pytest.raises(InvalidArgumentError, match=pattern):
        decode_tensors(descriptors, frames)


def test_decode_limits():
    with pytest.raises(InvalidArgumentError, match="over the limit of 40 bytes"):
        decode_tensors([D], [F4_12], Limits(max_tensor_bytes=40))
    with pytest.raises(InvalidArgumentError, match="2 tensors in one message, over the limit of 1"):
        decode_tensors([D, D], [F4_12, F4_12], Limits(max_tensors=1))


def test_decode_parts_checks_like_decode():
    with pytest.raises(InvalidArgumentError, match="has 2 parts, 1 frames given"):
        decode_parts(0, {**D, "parts": 2}, [F4_12])
    with pytest.raises(InvalidArgumentError, match="needs 48 bytes, frames have 40"):
        decode_parts(0, D, [F4_12[:40]])
