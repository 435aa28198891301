"""tf.gfile: TF1's file API on local paths, with TF's typed errors (checked against TF 2.21's
tf.compat.v1.gfile)."""

from __future__ import annotations

import os

import pytest

import zmtf as tf


@pytest.fixture
def text_file(tmp_path):
    path = str(tmp_path / "a.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("hello\nworld\n")
    return path


def test_read_modes_and_lines(text_file):
    assert tf.gfile.GFile(text_file).read() == "hello\nworld\n"
    assert tf.gfile.GFile(text_file, "rb").read() == b"hello\nworld\n"
    assert tf.gfile.GFile(text_file).read(3) == "hel"
    assert tf.gfile.Open(text_file).readline() == "hello\n"
    assert tf.gfile.GFile(text_file).readlines() == ["hello\n", "world\n"]
    assert list(tf.gfile.FastGFile(text_file, "rb")) == [b"hello\n", b"world\n"]
    assert tf.gfile.GFile(text_file).size() == 12


def test_append_and_write_bytes(text_file):
    with tf.gfile.GFile(text_file, "a") as f:
        f.write(b"more")
    assert tf.gfile.GFile(text_file).read() == "hello\nworld\nmore"


def test_lazy_open_raises_not_found_on_first_read(tmp_path):
    f = tf.gfile.GFile(str(tmp_path / "missing"))
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        f.read()


def test_wrong_direction_and_bad_mode(text_file, tmp_path):
    with pytest.raises(tf.errors.PermissionDeniedError, match="open for writing"):
        tf.gfile.GFile(text_file).write("x")
    with pytest.raises(tf.errors.PermissionDeniedError, match="open for reading"):
        tf.gfile.GFile(str(tmp_path / "w"), "w").read()
    with pytest.raises(tf.errors.InvalidArgumentError, match="'q'"):
        tf.gfile.GFile(text_file, "q")


def test_directories(tmp_path):
    nested = str(tmp_path / "x" / "y")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.MkDir(nested)
    tf.gfile.MakeDirs(nested)
    tf.gfile.MakeDirs(nested)  # existing is fine
    tf.gfile.MkDir(nested)
    assert tf.gfile.IsDirectory(nested) and tf.gfile.Exists(nested)
    assert tf.gfile.ListDirectory(str(tmp_path)) == ["x"]
    walked = [(d, sorted(s), sorted(f)) for d, s, f in tf.gfile.Walk(str(tmp_path))]
    assert walked == [(str(tmp_path), ["x"], []), (str(tmp_path / "x"), ["y"], []), (nested, [], [])]
    with pytest.raises(tf.errors.FailedPreconditionError):
        tf.gfile.Remove(str(tmp_path / "x"))
    tf.gfile.DeleteRecursively(str(tmp_path / "x"))
    assert not tf.gfile.Exists(nested)
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.DeleteRecursively(str(tmp_path / "x"))
    with pytest.raises(tf.errors.NotFoundError, match="Could not find directory"):
        tf.gfile.ListDirectory(str(tmp_path / "x"))


def test_makedirs_over_a_file_fails(text_file):
    with pytest.raises(tf.errors.FailedPreconditionError, match="not a directory"):
        tf.gfile.MakeDirs(text_file)


def test_copy_rename_respect_overwrite(text_file, tmp_path):
    other = str(tmp_path / "b.txt")
    tf.gfile.Copy(text_file, other)
    with pytest.raises(tf.errors.AlreadyExistsError, match="overwrite=True"):
        tf.gfile.Copy(text_file, other)
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Rename(text_file, other)
    tf.gfile.Rename(text_file, other, overwrite=True)
    assert not tf.gfile.Exists(text_file)
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Copy(text_file, str(tmp_path / "c"))
    assert sorted(tf.gfile.Glob(str(tmp_path / "*.txt"))) == [other]
    assert tf.gfile.Glob(str(tmp_path / "nope*")) == []


def test_stat_and_remove(text_file):
    st = tf.gfile.Stat(text_file)
    assert st.length == 12 and not st.is_directory
    assert st.mtime_nsec == os.stat(text_file).st_mtime_ns == st.mtime_nsecs
    tf.gfile.Remove(text_file)
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Stat(text_file)
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Remove(text_file)


@pytest.mark.parametrize("path", ["gs://bucket/model.ckpt", "hdfs://namenode/x"])
def test_remote_paths_are_unimplemented(path):
    with pytest.raises(tf.errors.UnimplementedError, match=path.split(":")[0]):
        tf.gfile.Exists(path)
