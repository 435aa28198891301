"""tf.string tensors on the wire: [lengths (uint64 LE), data parts...], no pickle; every count
checked on decode, and any malformation an InvalidArgumentError."""

import random

import numpy as np
import pytest

from zmtf.framework.dtypes import to_string_array
from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire import codec
from zmtf.wire import messages as m
from zmtf.wire.tensors import Limits, decode_parts, decode_tensor, decode_tensors, encode_tensor

WORDS = to_string_array([[b"a", b""], [b"\x00nul\x00", "héllo"]])


def round_trip(array, limits=Limits()):
    descriptor, parts = encode_tensor(array, limits=limits)
    return descriptor, decode_tensor(0, descriptor, [bytes(p) for p in parts], limits)


@pytest.mark.parametrize("value", [
    WORDS, to_string_array(b"scalar"), to_string_array([]), to_string_array([b"", b""]),
    to_string_array([[[b"x" * 300]]]), to_string_array([bytes(range(256))] * 3),
])
def test_round_trip_keeps_shape_and_every_byte(value):
    descriptor, back = round_trip(value)
    assert descriptor["dtype"] == "string" and descriptor["shape"] == list(value.shape)
    assert back.dtype == object and back.shape == value.shape
    assert back.tolist() == value.tolist()
    assert all(type(v) is bytes for v in back.flat)
    assert not back.flags.writeable


def test_the_frames_are_the_documented_layout():
    descriptor, parts = encode_tensor(WORDS)
    assert descriptor == {"dtype": "string", "shape": [2, 2], "parts": 2}
    assert np.frombuffer(parts[0], "<u8").tolist() == [1, 0, 5, 6]
    assert bytes(parts[1]) == b"a" + b"\x00nul\x00" + "héllo".encode()


def test_big_data_is_cut_into_parts_and_reassembled():
    value = to_string_array([bytes([i]) * 40 for i in range(10)])
    limits = Limits(chunk_bytes=64)
    descriptor, back = round_trip(value, limits)
    assert descriptor["parts"] == 1 + 7   # lengths, then 400 data bytes in 64-byte parts
    assert back.tolist() == value.tolist()
    parts = decode_parts(0, descriptor, [bytes(p) for p in encode_tensor(value, limits=limits)[1]],
                         limits)
    assert len(parts) == 1 and parts[0].tolist() == value.tolist()


def test_a_message_carries_string_and_numeric_tensors_together():
    message = m.RunStep(id=3, session="s", feeds=["a:0", "b:0"],
                        tensors=[WORDS, np.arange(3, dtype=np.int32)])
    decoded = codec.decode([bytes(f) for f in codec.encode(message)])
    assert decoded.tensors[0].tolist() == WORDS.tolist()
    assert decoded.tensors[1].tolist() == [0, 1, 2]


def test_only_bytes_elements_are_encoded():
    mixed = np.array([b"a", "str"], dtype=object)
    with pytest.raises(InvalidArgumentError, match="element 1 is a str, not bytes"):
        encode_tensor(mixed)
    with pytest.raises(InvalidArgumentError, match="element 0 is a int"):
        encode_tensor(np.array([3], dtype=object))
    with pytest.raises(InvalidArgumentError, match="over the limit"):
        encode_tensor(to_string_array([b"x" * 100]), limits=Limits(max_tensor_bytes=64))


def _lengths(*values):
    return np.array(values, dtype="<u8").tobytes()


@pytest.mark.parametrize("descriptor,frames,pattern", [
    ({"dtype": "string", "shape": [2], "parts": 2}, [_lengths(1), b"ab"],
     r"lengths frame needs 16 bytes \(8 per element\), has 8"),
    ({"dtype": "string", "shape": [2], "parts": 2}, [_lengths(1, 1), b"abc"],
     r"lengths sum to 2 bytes, the data frames have 3"),
    ({"dtype": "string", "shape": [2], "parts": 2}, [_lengths(1, 2**64 - 1), b"abc"],
     r"lengths sum to more bytes"),
    ({"dtype": "string", "shape": [2], "parts": 2}, [_lengths(2**63, 2**63), b""],
     r"lengths sum to more bytes"),
    ({"dtype": "string", "shape": [0], "parts": 2}, [b"", b"x"], r"no elements, but 1 bytes"),
    ({"dtype": "string", "shape": [1], "parts": 1}, [_lengths(0)], r"parts must be an int >= 2"),
    ({"dtype": "string", "shape": [1], "parts": 3}, [_lengths(0), b""], r"has 3 parts, 2 frames"),
    ({"dtype": "string", "shape": [1], "parts": 2}, [_lengths(0)[:5], b""], r"lengths frame"),
    ({"dtype": "string", "shape": [2**30], "parts": 2}, [b"", b""], r"over the limit"),
    ({"dtype": "string", "shape": [2**40], "parts": 2}, [b"", b""], r"\(string\): shape must be"),
    ({"dtype": "|O", "shape": [1], "parts": 2}, [_lengths(0), b""], r"not allowed on the wire"),
    ({"dtype": "String", "shape": [1], "parts": 2}, [_lengths(0), b""], r"not allowed on the wire"),
])
def test_malformed_string_tensors_are_refused(descriptor, frames, pattern):
    with pytest.raises(InvalidArgumentError, match=pattern):
        decode_tensor(0, descriptor, frames)


def test_the_size_limit_counts_lengths_and_data():
    limits = Limits(max_tensor_bytes=20)
    with pytest.raises(InvalidArgumentError, match="has 21 bytes, over the limit of 20"):
        decode_tensor(0, {"dtype": "string", "shape": [1], "parts": 2},
                      [_lengths(13), b"x" * 13], limits)


def test_fuzzed_string_messages_raise_only_invalid_argument():
    rng = random.Random(7)
    message = m.RunStep(id=9, session="s", feeds=["a:0"],
                        tensors=[to_string_array([b"ab", b"", b"cde"])])
    valid = [bytes(f) for f in codec.encode(message)]
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(600):
        frames = [bytearray(f) for f in valid]
        frame = frames[rng.randrange(1, len(frames))] if rng.random() < 0.8 else frames[0]
        action = rng.randrange(3)
        if action == 0 and frame:
            frame[rng.randrange(len(frame))] = rng.randrange(256)
        elif action == 1:
            del frame[rng.randrange(len(frame) + 1):]
        else:
            frame.extend(rng.randbytes(rng.randrange(1, 9)))
        try:
            decoded = codec.decode([bytes(f) for f in frames])
            outcomes["ok"] += 1
            assert all(type(v) is bytes for v in decoded.tensors[0].flat)
        except InvalidArgumentError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 300 and outcomes["ok"] > 20, outcomes


def test_truncated_frame_lists_are_refused():
    frames = [bytes(f) for f in codec.encode(m.RunStepResult(id=1, tensors=[WORDS, WORDS]))]
    for cut in range(1, len(frames)):
        with pytest.raises(InvalidArgumentError):
            codec.decode(frames[:cut])
    with pytest.raises(InvalidArgumentError, match="need 4 frames"):
        decode_tensors([{"dtype": "string", "shape": [1], "parts": 2}] * 2,
                       [_lengths(0), b"", _lengths(0)])
