"""atomic_write: a file appears whole or not at all; a special file (a FIFO, /dev/null) is
written in place, never replaced by a renamed regular file."""

import os
import stat
import threading

import pytest

from zmtf.training.atomic_file import atomic_write


def test_a_regular_file_is_replaced_whole(tmp_path):
    path = tmp_path / "ckpt"
    path.write_bytes(b"old")
    atomic_write(str(path), lambda f: f.write(b"new"))
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["ckpt"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "ckpt"
    path.write_bytes(b"old")

    def fail(f):
        f.write(b"half")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        atomic_write(str(path), fail)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["ckpt"]


def test_a_fifo_is_written_in_place_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []

    def read():
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    atomic_write(str(fifo), lambda f: f.write(b"through the pipe"))
    reader.join(10)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)   # still a FIFO, not a renamed file
