"""Messages <-> frames: every kind round-trips, every malformation is an InvalidArgumentError."""

import dataclasses
import random

import msgpack
import numpy as np
import pytest

from zmtf.framework import errors
from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire import codec
from zmtf.wire import messages as m
from zmtf.wire.tensors import SHARED, Limits

F32 = np.arange(12, dtype=np.float32).reshape(3, 4)
I64 = np.array([1, -2, 3], dtype=np.int64)

SAMPLES = [
    m.CreateSession(id=1, graph={"version": 1, "nodes": []}, config={"allow_soft_placement": True},
                    tensors=[F32]),
    m.SessionCreated(id=1, session="abc"),
    m.ExtendSession(id=2, session="abc", graph={"version": 1, "nodes": [{"name": "c"}]}),
    m.Ok(id=2),
    m.RunStep(id=3, session="abc", feeds=["x:0", "y:0"], fetches=["z:0"], targets=["train"],
              timeout_ms=1500, tensors=[F32, I64]),
    m.RunStepResult(id=3, tensors=[np.array(2.5)]),
    m.CloseSession(id=4, session="abc"),
    m.Reset(id=5, containers=["", "c1"]),
    m.ListDevices(id=6),
    m.DeviceList(id=6, devices=[{"name": "/job:w/replica:0/task:0/device:CPU:0",
                                 "memory_limit": 2**40}]),
    m.RegisterGraph(id=7, session="abc", graph_key="k1", graph={"version": 1, "nodes": []},
                    tensors=[I64]),
    m.RunGraph(id=8, session="abc", graph_key="k1", step_id=-(2**63), feeds=["x:0"],
               fetches=["z:0"], targets=[], timeout_ms=0, tensors=[F32]),
    m.RunGraphResult(id=8, tensors=[]),
    m.CleanupStep(id=9, step_id=2**63 - 1),
    m.DeregisterGraph(id=10, session="abc", graph_key="k1"),
    m.RecvTensor(id=11, step_id=17, key="a:0;/job:ps/replica:0/task:0;/job:w/replica:0/task:0"),
    m.TensorReply(id=11, tensors=[np.zeros((0, 3), np.float16)]),
    m.PushTensor(id=12, step_id=17, keys=["a:0;src;dst"], tensors=[np.array([True, False])]),
    m.Ping(id=2**63 - 1),
    m.CancelStep(id=11, session="s", request_id=7),
    m.Pong(id=13, task="/job:ps/replica:0/task:0", incarnation=123456789),
    m.ErrorReply(id=14, code=5, message="Not found: w", node="w"),
    m.ErrorReply(id=15, code=2, message="boom", node=None),
    m.StatusRequest(id=16),
    m.TaskStatus(id=16, task="/job:w/replica:0/task:0", address="tcp://127.0.0.1:2222",
                 version="0.1.0", started_ms=1_800_000_000_000, uptime_ms=5000,
                 devices=["/job:w/replica:0/task:0/device:CPU:0"], sessions=1, steps=40,
                 steps_per_sec=8.5, window_ms=4700, bytes_in=2**40, rss_bytes=2**30),
]


def test_every_kind_has_a_sample():
    assert {type(s) for s in SAMPLES} == set(m.KINDS.values())


def assert_same_message(a, b):
    assert type(a) is type(b)
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.name == "tensors":
            assert len(x) == len(y)
            for u, v in zip(x, y):
                assert u.dtype == v.dtype and u.shape == v.shape
                np.testing.assert_array_equal(u, v)
        else:
            assert x == y and type(x) is type(y), field.name


@pytest.mark.parametrize("message", SAMPLES, ids=lambda s: s.kind)
def test_round_trip(message):
    frames = codec.encode(message)
    assert isinstance(frames[0], bytes)
    assert all(isinstance(f, memoryview) for f in frames[1:])
    assert_same_message(codec.decode(frames), message)
    assert codec.peek_id(frames) == message.id


def test_messages_without_tensors_compare_equal():
    assert codec.decode(codec.encode(SAMPLES[1])) == SAMPLES[1]


def test_header_layout_is_the_documented_spec():
    frames = codec.encode(m.RunStep(id=3, session="s", feeds=["x:0"], tensors=[F32]))
    header = msgpack.unpackb(frames[0])
    # "host": only while this process has the same-host fast path on (distributed/shared_memory)
    assert header.pop("host", None) == SHARED.host
    assert header == {
        "v": 2, "kind": "RunStep", "id": 3,
        "body": {"session": "s", "feeds": ["x:0"], "fetches": [], "targets": [], "timeout_ms": 0,
                 "trace_level": 0, "sent_us": 0, "partition_graphs": 0},
        "tensors": [{"dtype": "<f4", "shape": [3, 4], "parts": 1}],
    }
    assert np.shares_memory(np.frombuffer(frames[1], np.uint8), F32)


def test_big_tensor_is_split_into_parts():
    big = np.ones((3 << 20) // 8 + 1, dtype=np.float64)  # 3 MiB + 8 bytes -> 4 parts
    frames = codec.encode(m.TensorReply(id=1, tensors=[I64, big]))
    assert len(frames) == 1 + 1 + 4
    out = codec.decode(frames).tensors
    np.testing.assert_array_equal(out[1], big)


def test_real_zmq_pair_over_inproc():
    zmq = pytest.importorskip("zmq")
    ctx = zmq.Context()
    try:
        a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
        a.linger = b.linger = 0
        a.bind("inproc://zmtf-test-codec")
        b.connect("inproc://zmtf-test-codec")
        feed = np.arange(1 << 18, dtype=np.float32)  # 1 MiB: above zmq's copy threshold
        request = m.RunStep(id=42, session="s", feeds=["x:0", "n:0"], fetches=["y:0"],
                            timeout_ms=10, tensors=[feed, np.array(3, np.int32)])
        a.send_multipart(codec.encode(request), copy=False)
        assert b.poll(5000)
        received = codec.decode(b.recv_multipart(copy=False))
        assert_same_message(received, request)
        assert np.shares_memory(received.tensors[0], feed)  # inproc is zero-copy end to end
        b.send_multipart(codec.encode(m.RunStepResult(id=42, tensors=[feed * 2])), copy=False)
        assert a.poll(5000)
        reply = codec.decode(a.recv_multipart(copy=False))
        assert reply.id == 42 and reply.tensors[0][-1] == 2 * feed[-1]
        a.close()
        b.close()
    finally:
        ctx.destroy(linger=0)


# ---- construction and encoding refuse bad fields ------------------------------------------
@pytest.mark.parametrize("build,pattern", [
    (lambda: m.RunStep(id=1, session=3), r"RunStep \(id 1\): field 'session' must be a str, got 3"),
    (lambda: m.RunStep(id=1, session="s", feeds=("x:0",)), r"field 'feeds' must be a list of str"),
    (lambda: m.RunStep(id=1, session="s", timeout_ms=1.5), r"field 'timeout_ms' must be an int"),
    (lambda: m.RunStep(id=1, session="s", tensors=[[1.0]]),
     r"field 'tensors' must be a list of numpy"),
    (lambda: m.Ping(id=-1), r"Ping: id must be an int in \[0, 2\*\*63\)"),
    (lambda: m.Ping(id=True), r"id must be an int"),
    (lambda: m.CleanupStep(step_id=2**63), r"field 'step_id' must be an int in the int64 range"),
    (lambda: m.CreateSession(graph=[]), r"field 'graph' must be a map"),
    (lambda: m.DeviceList(devices=[{}, "cpu"]), r"field 'devices' must be a list of maps"),
    (lambda: m.ErrorReply(code=3, message="x", node=5), r"field 'node' must be a str or None"),
])
def test_invalid_messages_cannot_be_built(build, pattern):
    with pytest.raises(InvalidArgumentError, match=pattern):
        build()


#: per field kind: a value of the wrong type, and one list whose last item is wrong
_WRONG = {"str": [3], "str | None": [3], "int": [1.5, 2**63], "float": [1, float("nan"), float("inf")], "list[str]": [("a",), ["a", 3]],
          "dict[str, Any]": [[]], "list[dict[str, Any]]": [{}, [{}, "x"]],
          "Tensors": [np.zeros(2), [np.zeros(2), [1.0]]]}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.kind)
def test_every_field_of_every_kind_is_checked_when_built(sample):
    """The per-kind validators are generated from the schemas: each field of each kind must
    reject each wrong value, naming the field, and the valid sample must still build."""
    cls = type(sample)
    fields = {f.name: getattr(sample, f.name) for f in dataclasses.fields(cls)}
    assert cls(**fields) == sample or m.CARRIES_TENSORS[cls]
    for f in dataclasses.fields(cls):
        if f.name == "id":
            continue
        for wrong in _WRONG[str(f.type)]:
            with pytest.raises(InvalidArgumentError, match=f"field '{f.name}' must be"):
                cls(**{**fields, f.name: wrong})


def test_encode_revalidates_and_names_unpackable_values():
    message = m.RunStep(id=1, session="s", feeds=["x:0"])
    message.feeds.append(7)
    with pytest.raises(InvalidArgumentError, match="field 'feeds'"):
        codec.encode(message)
    with pytest.raises(InvalidArgumentError, match=r"cannot be encoded.*\.item\(\)"):
        codec.encode(m.CreateSession(graph={"lr": np.float32(0.1)}))
    # and the next message is packed clean after that failure
    ok = m.CreateSession(graph={"lr": 0.1})
    assert codec.decode(codec.encode(ok)) == ok
    assert codec.encode(ok)[0] == msgpack.packb(msgpack.unpackb(codec.encode(ok)[0]), use_bin_type=True)
    with pytest.raises(InvalidArgumentError, match="header is .* bytes, over the limit of 64"):
        codec.encode(m.SessionCreated(session="x" * 100), Limits(max_header_bytes=64))
    with pytest.raises(InvalidArgumentError, match="tensor 0 has dtype"):
        codec.encode(m.TensorReply(tensors=[np.array(["text"])]))


def test_dataclasses_replace_assigns_an_id():
    message = dataclasses.replace(m.RecvTensor(step_id=1, key="k"), id=99)
    assert codec.decode(codec.encode(message)) == m.RecvTensor(id=99, step_id=1, key="k")


# ---- decode refuses malformed frames -------------------------------------------------------
def header(**changes):
    base = {"v": 2, "kind": "RecvTensor", "id": 7, "body": {"step_id": 1, "key": "k"},
            "tensors": []}
    base.update(changes)
    return msgpack.packb({k: v for k, v in base.items() if v is not DROP})


DROP = object()
F32_DESC = {"dtype": "<f4", "shape": [3, 4], "parts": 1}
RUN_BODY = {"session": "s", "feeds": [], "fetches": [], "targets": [], "timeout_ms": 0,
            "trace_level": 0, "sent_us": 0, "partition_graphs": 0}

MALFORMED = [
    ("not-a-list", b"\x80", r"non-empty list of frames"),
    ("none", None, r"non-empty list of frames"),
    ("empty", [], r"non-empty list of frames"),
    ("header-not-buffer", [12], r"a frame must be bytes"),
    ("header-garbage", [b"\xc1"], r"not valid msgpack"),
    ("header-truncated", [header()[:-3]], r"not valid msgpack"),
    ("header-trailing-bytes", [header() + b"\x00"], r"not valid msgpack"),
    ("header-empty", [b""], r"not valid msgpack"),
    ("header-list", [msgpack.packb([1, "RecvTensor", 7])], r"must be a msgpack map"),
    ("header-int-key", [msgpack.packb({1: 2})],
     r"not valid msgpack.*int is not allowed for map key"),
    ("header-bad-utf8", [b"\x81\xa1v\xa2\xff\xfe"], r"not valid msgpack.*utf-8"),
    ("header-ext", [msgpack.packb(msgpack.ExtType(5, b"abc"))], r"not valid msgpack"),
    ("header-timestamp", [msgpack.packb({"v": msgpack.Timestamp(1, 0)})], r"not valid msgpack"),
    ("header-deep", [b"\x91" * 5000 + b"\xc0"], r"not valid msgpack"),
    ("header-huge-length", [b"\xdd\xff\xff\xff\xff"], r"not valid msgpack"),
    ("missing-key", [header(tensors=DROP)], r"exactly the keys"),
    ("extra-key", [header(extra=1)], r"exactly the keys"),
    ("version-1", [header(v=1)], r"unsupported wire version 1; this zmtf speaks versions \[2\]"),
    ("version-str", [header(v="1")], r"unsupported wire version '1'"),
    ("version-bool", [header(v=True)], r"unsupported wire version True"),
    ("kind-unknown", [header(kind="Launch")],
     r"unknown message kind 'Launch'; known kinds: CancelStep, CleanupStep, "),
    ("kind-int", [header(kind=3)], r"unknown message kind 3"),
    ("kind-base", [header(kind="Message")], r"unknown message kind 'Message'"),
    ("id-negative", [header(id=-1)], r"RecvTensor: id must be an int in \[0, 2\*\*63\), got -1"),
    ("id-too-big", [header(id=2**63)], r"id must be an int in \[0, 2\*\*63\)"),
    ("id-float", [header(id=1.0)], r"id must be an int"),
    ("id-none", [header(id=None)], r"id must be an int"),
    ("body-list", [header(body=[1, "k"])], r"RecvTensor \(id 7\): body must be a map"),
    ("body-missing-field", [header(body={"step_id": 1})], r"missing \['key'\]"),
    ("body-extra-field", [header(body={"step_id": 1, "key": "k", "x": 0})], r"unexpected \['x'\]"),
    ("body-bytes-key", [header(body={"step_id": 1, b"key": "k"})], r"missing \['key'\]"),
    ("body-id-inside", [header(body={"step_id": 1, "key": "k", "id": 3})], r"unexpected \['id'\]"),
    ("body-tensors-inside", [header(kind="TensorReply", body={"tensors": []})],
     r"unexpected \['tensors'\]"),
    ("body-wrong-type", [header(body={"step_id": "1", "key": "k"})],
     r"field 'step_id' must be an int"),
    ("body-bytes-value", [header(body={"step_id": 1, "key": b"k"})], r"field 'key' must be a str"),
    ("body-step-too-big", [header(body={"step_id": 2**64 - 1, "key": "k"})], r"int64 range"),
    ("body-list-of-int", [header(kind="Reset", body={"containers": [1]})],
     r"'containers' must be a list of str"),
    ("tensors-on-tensorless-kind", [header(tensors=[F32_DESC]), bytes(48)], r"carries no tensors"),
    ("frames-on-tensorless-kind", [header(), bytes(48)], r"carries no tensors"),
    ("tensors-not-list", [header(kind="TensorReply", body={}, tensors={"a": 1})],
     r"TensorReply \(id 7\): tensors must be a list"),
    ("tensor-frame-missing", [header(kind="TensorReply", body={}, tensors=[F32_DESC])],
     r"TensorReply \(id 7\): 1 tensors need 1 frames, the message has 0"),
    ("tensor-frame-short", [header(kind="TensorReply", body={}, tensors=[F32_DESC]), bytes(40)],
     r"tensor 0 \(float32\[3, 4\]\) needs 48 bytes, frames have 40"),
    ("tensor-bad-dtype",
     [header(kind="TensorReply", body={}, tensors=[{**F32_DESC, "dtype": "|O"}]), bytes(48)],
     r"dtype '\|O' is not allowed"),
    ("tensor-frame-str", [header(kind="RunStep", body=RUN_BODY, tensors=[F32_DESC]), "x" * 48],
     r"a frame must be bytes"),
]


@pytest.mark.parametrize("frames,pattern",
                         [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_messages_are_refused(frames, pattern):
    with pytest.raises(InvalidArgumentError, match=pattern):
        codec.decode(frames)
    codec.peek_id(frames)  # never raises


def test_header_size_limit():
    frames = codec.encode(m.SessionCreated(id=1, session="x" * 200))
    with pytest.raises(InvalidArgumentError, match="over the limit of 100"):
        codec.decode(frames, Limits(max_header_bytes=100))


def test_peek_id_reads_the_id_of_a_refused_message():
    assert codec.peek_id([header(kind="Nope", id=77)]) == 77
    assert codec.peek_id([b"\xc1"]) == 0
    assert codec.peek_id([header(id=-5)]) == 0
    assert codec.peek_id([]) == 0
    assert codec.peek_id(None) == 0


# ---- errors cross the wire as the same TF class --------------------------------------------
def test_op_errors_keep_their_class_code_and_node():
    error = errors.FailedPreconditionError(None, None, "Attempting to use uninitialized value w",
                                           node_name="w/read")
    reply = codec.decode(codec.encode(m.error_reply(9, error)))
    assert reply == m.ErrorReply(id=9, code=errors.FAILED_PRECONDITION,
                                 message="Attempting to use uninitialized value w", node="w/read")
    with pytest.raises(errors.FailedPreconditionError, match="uninitialized value w") as caught:
        m.raise_error(reply)
    assert caught.value.node_name == "w/read"


def test_subclasses_travel_as_their_canonical_class():
    reply = m.error_reply(1, errors.FetchNotFoundError(None, None, "no such tensor"))
    with pytest.raises(errors.NotFoundError):
        m.raise_error(reply)


def test_other_exceptions_become_unknown_with_their_type_name():
    reply = m.error_reply(3, KeyError("x"))
    assert reply.code == errors.UNKNOWN and reply.message == "KeyError: 'x'" and reply.node is None
    with pytest.raises(errors.UnknownError, match="KeyError"):
        m.raise_error(reply)


def test_unknown_codes_raise_unknown_error_and_long_texts_are_cut():
    with pytest.raises(errors.UnknownError):
        m.raise_error(m.ErrorReply(code=999, message="?"))
    reply = m.error_reply(1, ValueError("v" * 100_000))
    assert len(reply.message) < 20_000 and reply.message.endswith("characters cut)")


# ---- fuzz: nothing but InvalidArgumentError, ever -------------------------------------------
def _random_value(rng, depth=0):
    choices = [None, True, -1, 0, 2**63, 2**64 - 1, -(2**63), 1.5, float("nan"), "", "x",
               "RunStep", "<f4", "|O", b"\x00", [], {}, [1, 2], {"a": 1}]
    if depth < 2 and rng.random() < 0.2:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    if depth < 2 and rng.random() < 0.2:
        return {rng.choice(["dtype", "shape", "parts", "x", "key"]): _random_value(rng, depth + 1)}
    return rng.choice(choices)


def _mutate_structure(rng, frames):
    """Unpack the header, change one value somewhere in it, pack it again."""
    head = msgpack.unpackb(frames[0])
    containers = [head]
    for value in head.values():
        if isinstance(value, (dict, list)):
            containers.append(value)
            containers.extend(v for v in (value.values() if isinstance(value, dict) else value)
                              if isinstance(v, (dict, list)))
    target = rng.choice(containers)
    if isinstance(target, dict) and target:
        key = rng.choice(list(target))
        if rng.random() < 0.15:
            del target[key]
        else:
            target[key] = _random_value(rng)
    elif isinstance(target, list) and target:
        target[rng.randrange(len(target))] = _random_value(rng)
    else:
        return [msgpack.packb(_random_value(rng))] + frames[1:]
    return [msgpack.packb(head)] + frames[1:]


def _mutate_bytes(rng, frames):
    frames = [bytearray(f) for f in frames]
    frame = rng.choice(frames)
    action = rng.randrange(4)
    if action == 0 and frame:
        frame[rng.randrange(len(frame))] = rng.randrange(256)
    elif action == 1:
        del frame[rng.randrange(len(frame) + 1):]
    elif action == 2:
        frame.extend(rng.randbytes(rng.randrange(1, 9)))
    else:
        position = rng.randrange(len(frames) + 1)
        garbage = bytearray(rng.randbytes(rng.randrange(64)))
        return frames[:position] + [garbage] + frames[position + 1:]
    return frames


def test_fuzz_decode_raises_only_invalid_argument():
    rng = random.Random(20261122)
    valid = [[bytes(f) for f in codec.encode(s)] for s in SAMPLES]
    outcomes = {"ok": 0, "refused": 0}
    for case in range(2400):
        kind = case % 4
        if kind == 0:
            frames = [rng.randbytes(rng.randrange(48)) for _ in range(rng.randrange(1, 4))]
        elif kind == 1:
            frames = [bytes(f) for f in _mutate_bytes(rng, rng.choice(valid))]
        elif kind == 2:
            frames = _mutate_structure(rng, rng.choice(valid))
        else:
            base = rng.choice(valid)
            tail = [] if rng.random() < 0.5 else [b"\x00" * 4]
            frames = base[:rng.randrange(len(base) + 1)] + tail
        try:
            codec.decode(frames)
            outcomes["ok"] += 1
        except InvalidArgumentError:
            outcomes["refused"] += 1
        assert isinstance(codec.peek_id(frames), int)
    assert outcomes["refused"] > 1500 and outcomes["ok"] > 20, outcomes
