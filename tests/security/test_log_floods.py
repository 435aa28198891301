"""Logs a stranger can neither flood nor forge (issue 31, item 6), over real tcp://127.0.0.1:
malformed frames, unknown message kinds carrying newlines and ANSI escapes, a pushed tensor
whose key is 1 MB, cut streams. The server logs each kind of refusal once per peer and
interval, every network field clipped and escaped, no tracebacks; a normal client is served
within a second throughout."""

import logging
import random
import re
import time

import msgpack
import numpy as np
import pytest
import zmq

from quota_helpers import SERVED_WITHIN, NormalClient, server_process, stop_server_process
from zmtf.framework.log_limits import OTHER_PEERS, PeerLogLimiter, clip, clip_list
from zmtf.wire import codec
from zmtf.wire import messages as m

HOSTILE_MESSAGES = 1000
LOG_BYTES_PER_1000 = 20_000   # bound on what 1,000 hostile messages may add to the log


# ---- the helpers (pure) -----------------------------------------------------------------------
def test_clip_escapes_what_could_forge_a_line_and_cuts_what_is_long():
    forged = "x\n2026-12-07 I zmtf.server] all is well\x1b[31m\u202e"
    shown = clip(forged)
    assert "\n" not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert shown.isascii() and "\\n" in shown and "\\x1b" in shown
    long = clip("k" * 1_000_000)
    assert len(long) < 250 and long.endswith("(1000000 chars)")
    assert clip(b"\x00\xff") == repr(b"\x00\xff")
    listed = clip_list(["k" * 1_000_000] * 100)
    assert len(listed) < 2500 and "(92 more)" in listed


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_the_limiter_logs_once_per_peer_and_kind_per_interval_and_counts_the_rest():
    logger = logging.getLogger("zmtf.test_log_floods")
    lines = _Lines()
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    now = [100.0]
    limiter = PeerLogLimiter(logger, interval=60.0, max_peers=3, clock=lambda: now[0])
    try:
        for _ in range(1000):
            limiter.log(logging.WARNING, "10.0.0.1", "InvalidArgumentError", "bad: %s", "x")
        limiter.log(logging.WARNING, "10.0.0.1", "UnknownKind", "other kind")
        assert lines.lines == ["bad: x", "other kind"]
        for peer in range(10):   # a peer per reconnect: 3 peers get lines of their own
            limiter.log(logging.WARNING, f"10.0.1.{peer}", "InvalidArgumentError", "p%d", peer)
        assert lines.lines[2:] == ["p0", "p1", "p2"]   # p2 speaks for the other peers
        now[0] += 61
        limiter.log(logging.WARNING, "10.0.0.1", "InvalidArgumentError", "bad again")
        assert lines.lines[-1] == ("bad again (... and 999 more like it from '10.0.0.1' in the "
                                   "last 60 s)")
        limiter.log(logging.WARNING, "10.0.1.0", "InvalidArgumentError", "p0 again")
        limiter.log(logging.WARNING, "10.0.1.1", "InvalidArgumentError", "p1 again")
        limiter.log(logging.WARNING, "10.0.2.9", "InvalidArgumentError", "late")
        assert lines.lines[-1] == "late (... and 7 more like it from other peers in the last 60 s)"
        assert len(lines.lines) == 9
    finally:
        logger.removeHandler(lines)


# ---- a live server under a flood ----------------------------------------------------------
def hostile_messages(rng):
    """Frames a stranger sends, one kind after another: (kind, frames)."""
    huge_key = "k" * 1_000_000
    forged_kind = "Evil\n2026-12-07 I zmtf.server] forged line\x1b[31m" + "z" * 10_000

    def header(kind, body=None, version=2, tensors=()):
        return msgpack.packb({"v": version, "kind": kind, "id": rng.randrange(1 << 40),
                              "body": body or {}, "tensors": list(tensors)})

    push = codec.encode(m.PushTensor(id=1, step_id=9, keys=[huge_key, "b"],
                                     tensors=[np.zeros(2, np.float32)]))
    stream = codec.encode_messages(m.PushTensor(
        id=2, step_id=9, keys=["s"], tensors=[np.zeros(2 << 20, np.float32)]))
    return [
        ("unknown kind", lambda: [header(forged_kind)]),
        ("random bytes", lambda: [rng.randbytes(rng.randrange(1, 200))]),
        ("old version", lambda: [header("Ping", version=1)]),
        ("missing fields", lambda: [header("RunStep")]),
        ("bad tensors", lambda: [header("PushTensor", {"step_id": 1, "keys": ["a"]},
                                        tensors=[{"dtype": "float32", "shape": [2**40]}])]),
        ("1 MB key", lambda: push),
        ("cut stream", lambda: [*stream[0], b"x"]),
    ]


def test_a_flood_of_hostile_messages_writes_a_bounded_log_and_the_server_keeps_serving():
    proc, address, log_path = server_process("--peer-log-secs", "3")
    context = zmq.Context()
    rng = random.Random(31)
    try:
        normal = NormalClient(address)
        strangers = []
        for _ in range(5):   # several connections, one address: one peer
            sock = context.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://{address}")
            strangers.append(sock)
        kinds = hostile_messages(rng)
        with open(log_path, "rb") as f:
            before = len(f.read())
        strangers[0].send_multipart(kinds[0][1]())   # a forged line first: escaped in the log
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with open(log_path, "rb") as f:
                if b"Evil" in f.read()[before:]:
                    break
            time.sleep(0.05)
        started = time.monotonic()
        slowest = 0.0
        for n in range(HOSTILE_MESSAGES):
            _, frames = kinds[n % len(kinds)]
            strangers[n % len(strangers)].send_multipart(frames())
            if n % 100 == 99:
                slowest = max(slowest, normal.step())
                for sock in strangers:   # the error replies, read as any peer would
                    while sock.poll(0):
                        sock.recv_multipart()
        flood_seconds = time.monotonic() - started
        assert slowest < SERVED_WITHIN, f"a normal step took {slowest:.2f} s during the flood"
        time.sleep(0.5)   # the last refusals reach the log
        with open(log_path, "rb") as f:
            log = f.read()[before:]
        lines = log.count(b"\n")
        print(f"\n{HOSTILE_MESSAGES} hostile messages in {flood_seconds:.1f} s: {len(log)} "
              f"log bytes, {lines} lines")
        # one line per kind of refusal per 3 s interval, however many came
        intervals = 1 + int(flood_seconds / 3)
        assert len(log) < LOG_BYTES_PER_1000 * intervals, log[:3000]
        assert b"Traceback" not in log
        assert b"\x1b" not in log
        assert b"Evil" in log and b"\n2026-12-07 I zmtf.server] forged" not in log
        assert all(re.match(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [DIWEF] zmtf", line)
                   for line in log.splitlines()), log[:3000]   # no line a stranger began
        assert max(map(len, log.split(b"\n"))) < 1200
        assert b"(1000000 chars)" in log   # the 1 MB key, cut to a few hundred bytes
        time.sleep(3.1)   # a new interval: the next line says how many were held back
        strangers[0].send_multipart(kinds[0][1]())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with open(log_path, "rb") as f:
                tail = f.read()[before + len(log):]
            if b"more like it from '127.0.0.1'" in tail:
                break
            time.sleep(0.05)
        assert b"more like it from '127.0.0.1' in the last 3 s" in tail, tail
        assert normal.step() < SERVED_WITHIN
        assert proc.poll() is None
        normal.close()
        for sock in strangers:
            sock.close()
    finally:
        context.destroy(linger=0)
        stop_server_process(proc, log_path)


@pytest.mark.parametrize("peer_kind", ["PushTensor"])
def test_peer_caused_lines_name_no_peer_data_raw(peer_kind):
    """The limiter's own line for a refusal with no peer says 'any peer'."""
    logger = logging.getLogger("zmtf.test_log_floods.any")
    lines = _Lines()
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    now = [0.0]
    limiter = PeerLogLimiter(logger, interval=1.0, clock=lambda: now[0])
    try:
        limiter.log(logging.WARNING, None, peer_kind, "a")
        limiter.log(logging.WARNING, None, peer_kind, "b")
        now[0] = 2.0
        limiter.log(logging.WARNING, None, peer_kind, "c")
        assert lines.lines == ["a", "c (... and 1 more like it from any peer in the last 1 s)"]
        assert OTHER_PEERS == "other peers"
    finally:
        logger.removeHandler(lines)
