"""A process's first local Session makes glibc keep freed memory (runtime/heap.py), so a
step's few-MB activations reuse the heap instead of faulting in fresh pages every step;
ZMTF_TUNE_PROCESS=0 opts out. Each case runs in a fresh process (mallopt is process-wide)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import zmtf as tf
from zmtf.runtime import heap
before = heap._kept
with tf.Session() as sess:
    print("@@", before, heap._kept, float(sess.run(tf.constant(2.0) * 3.0)))
"""


def kept_after_a_session(tune_env: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "ZMTF_TUNE_PROCESS"}   # conftest sets it
    if tune_env is not None:
        env["ZMTF_TUNE_PROCESS"] = tune_env
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return next(line for line in done.stdout.splitlines() if line.startswith("@@ ")).split()[1:]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_local_session_keeps_freed_memory_unless_opted_out():
    assert kept_after_a_session(None) == ["False", "True", "6.0"]
    assert kept_after_a_session("0") == ["False", "False", "6.0"]
