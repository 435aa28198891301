"""Test-wide settings; must run before numba is first imported."""

import os
import pathlib
import sys

import pytest

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
# The test process starts servers but is no server process: gc.freeze would keep its garbage
# (tests that collect it would see leaks). Tests of the tuning unset it for their subprocesses.
os.environ.setdefault("ZMTF_TUNE_PROCESS", "0")
# Fused groups run member by member here, never compiling their loop in the background: the
# suite's many short sessions each paid a numba compile per group (~170 s of 690), and the
# loops are tested where they are the subject (tests/runtime/test_fusion.py sets it back).
os.environ.setdefault("ZMTF_FUSION_COMPILE_AFTER", "0")

# Examples run in subprocesses must import the zmtf under test (a git worktree, say), not
# whichever checkout an editable install points at.
_ROOT = str(pathlib.Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))


def _write_bytecode() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (as on this project's CI machine), every server,
    example and CLI process the suite starts (hundreds) compiled zmtf's modules from source:
    ~0.8 s of CPU each. The suite lets Python keep their bytecode, in the checkout's
    __pycache__ folders (git ignores them; numba's kernel cache is there already), so that
    this process compiles each module once and its subprocesses import it compiled."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        sys.dont_write_bytecode = False


_write_bytecode()

pytest_plugins = ["zmtf.testing"]


@pytest.fixture
def helper_runs_a_part(monkeypatch):
    """Every split kernel's second part runs on the helper: the caller waits (up to 5 s)
    for it to start one before running its own. Yields the parts the helper ran.
    (Imports inside: this file runs before numba is first imported.)"""
    import threading

    from zmtf.kernels.cpu import parts
    from zmtf.runtime import intra_op

    monkeypatch.setattr(intra_op._Spare, "MIN_CORES", -1.0)   # the helper whatever the load
    monkeypatch.setattr(parts, "ENABLED", True)
    # whatever BLAS cap an earlier test's session or server left this process
    monkeypatch.setattr(parts.blas, "threads_cap", lambda: 2)
    monkeypatch.setattr(parts._Timings, "choose", lambda self, key: parts.WORKERS)   # untimed
    helped: list[int] = []
    run = parts.run_parts

    def run_waiting(count, fn, workers):
        started = threading.Event()

        def part(k, worker):
            if worker == 1:
                helped.append(k)
                started.set()
            elif count > 1 and workers > 1:
                started.wait(5)
            fn(k, worker)

        run(count, part, workers)

    monkeypatch.setattr(parts, "run_parts", run_waiting)
    yield helped
