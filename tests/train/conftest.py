"""Fixtures shared by the input-pipeline tests."""

from __future__ import annotations

import threading

import pytest


@pytest.fixture
def no_thread_left():
    """Fails the test if it leaves a thread running (a queue runner that never ended). A
    fused loop that the test's steps started compiling (runtime/fused_kernels) is the
    runtime's, not the test's: it is waited for. So is the process's intra-op helper
    (runtime/intra_op, started by the first big convolution): it is left alone."""
    before = set(threading.enumerate())
    yield
    new = set(threading.enumerate()) - before
    for thread in new:
        if thread.name == "zmtf-fusion-compile":
            thread.join(60)
    left = [t.name for t in new if t.is_alive() and t.name != "zmtf-intra-op"]
    assert left == []
