"""TensorFlow's V2 checkpoints: zmtf restores and reads the fixture TF 2.21 wrote
(make_tf_v2_checkpoint.py), writes the same format itself, and refuses damaged files."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import zmtf as tf
from make_tf_v2_checkpoint import (
    FOLDER, PARTITIONED, SHARDED_FOLDER, STEP, fixture_values, partitioned_value, sharded_values,
)
from zmtf.training.sstable import build_table, read_table
from zmtf.training.tensor_bundle import (
    BundleEntry, decode_entry, encode_entry, slice_key, write_bundle,
)

TF_PREFIX = os.path.join(FOLDER, f"model.ckpt-{STEP}")
DATA = ".data-00000-of-00001"


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


@pytest.fixture
def tf_checkpoint(tmp_path):
    """A private copy of TF's checkpoint folder (tests may damage it)."""
    folder = tmp_path / "tf"
    shutil.copytree(FOLDER, folder)
    return str(folder / f"model.ckpt-{STEP}")


def numeric_values():
    """The fixture's variables that zmtf can hold (it has no tf.string variables)."""
    return {k: v for k, v in fixture_values().items() if v.dtype != object}


def build_graph(values, partitions=3):
    variables = {name: tf.Variable(np.zeros(v.shape, v.dtype), name=name)
                 for name, v in values.items()}
    with tf.variable_scope("scope"):
        emb = tf.get_variable("emb", shape=[6, 2], initializer=tf.zeros_initializer(),
                              partitioner=tf.fixed_size_partitioner(partitions))
    return variables, emb


def assert_exact(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---- reading TF's files ----------------------------------------------------------------------
@pytest.mark.parametrize("partitions", [3, 2])
def test_saver_restores_tf_checkpoint_exactly(partitions):
    values = numeric_values()
    variables, emb = build_graph(values, partitions)
    assert [p.op.name for p in emb] == [f"{PARTITIONED}/part_{i}" for i in range(partitions)]
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(FOLDER))
        got = sess.run({name: v.value() for name, v in variables.items()})
        got_emb = sess.run(emb.as_tensor())
    for name, want in values.items():
        assert_exact(np.asarray(got[name]), want)
    assert_exact(got_emb, partitioned_value())


def test_sliced_tf_variable_restores_into_an_unpartitioned_one():
    whole = tf.Variable(np.zeros([6, 2], np.float32), name=PARTITIONED)
    with tf.Session() as sess:
        tf.train.Saver([whole]).restore(sess, TF_PREFIX)
        assert_exact(sess.run(whole), partitioned_value())


def test_reader_lists_tf_names_shapes_and_dtypes():
    reader = tf.train.NewCheckpointReader(TF_PREFIX)
    values = {**fixture_values(), PARTITIONED: partitioned_value()}
    assert reader.get_variable_to_shape_map() == {k: list(v.shape) for k, v in values.items()}
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes == {k: tf.as_dtype(v.dtype) for k, v in values.items()}
    assert dtypes["words"] == tf.string and dtypes["halfs"] == tf.float16
    assert reader.has_tensor(PARTITIONED) and not reader.has_tensor("nope")
    for name, want in values.items():
        assert_exact(reader.get_tensor(name), want)
    assert tf.train.list_variables(FOLDER) == sorted((k, list(v.shape)) for k, v in values.items())
    assert tf.train.load_variable(FOLDER, "name:0") == b"zmtf"
    assert tf.train.load_checkpoint(FOLDER).get_tensor("global_step") == STEP


def test_sharded_tf_checkpoint_restores_and_is_removed_whole(tmp_path):
    folder = tmp_path / "sharded"
    shutil.copytree(SHARDED_FOLDER, folder)
    prefix = tf.train.latest_checkpoint(str(folder))
    values = sharded_values()
    variables = {name: tf.Variable(np.zeros_like(v), name=name) for name, v in values.items()}
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        for name, v in variables.items():
            assert_exact(sess.run(v), values[name])
    assert tf.train.NewCheckpointReader(prefix).get_variable_to_shape_map() == {"a": [5],
                                                                                "b": [2, 2]}
    tf.train.remove_checkpoint(prefix)
    assert sorted(os.listdir(folder)) == ["checkpoint"]


def test_debug_string_is_tfs():
    """TF lists every entry but the sliced tensor's own: its slices, under their binary keys."""
    values = fixture_values()
    tf_names = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int32": "DT_INT32",
                "int64": "DT_INT64", "bool": "DT_BOOL", "float16": "DT_HALF", "int8": "DT_INT8",
                "uint8": "DT_UINT8", "object": "DT_STRING"}
    lines = [f"{k} ({tf_names[v.dtype.name]}) [{','.join(map(str, v.shape))}]\n".encode()
             for k, v in values.items()]
    lines += [slice_key(PARTITIONED, ((2 * i, 2), (0, 2))) + b" (DT_FLOAT) [2,2]\n"
              for i in range(3)]
    assert tf.train.NewCheckpointReader(TF_PREFIX).debug_string() == b"".join(sorted(lines))


def test_init_from_checkpoint_reads_tf_checkpoints():
    with tf.variable_scope("new"):
        bias = tf.get_variable("bias", shape=[2])
    tf.train.init_from_checkpoint(FOLDER, {"scope/": "new/"})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert_exact(sess.run(bias), fixture_values()["scope/bias"])


def test_missing_key_is_not_found_as_tf_words_it():
    tf.Variable(1.0, name="not_saved")
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError,
                                             match="Key not_saved not found in checkpoint"):
        tf.train.Saver().restore(sess, TF_PREFIX)
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found in checkpoint"):
        tf.train.NewCheckpointReader(TF_PREFIX).get_tensor("nope")
    with pytest.raises(tf.errors.NotFoundError, match="matching files"):
        tf.train.NewCheckpointReader(TF_PREFIX + "0")


def test_wrong_dtype_in_graph_is_invalid_argument():
    tf.Variable(np.zeros([2, 3], np.float64), name="floats")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="float64 in the graph.*float32"):
        tf.train.Saver().restore(sess, TF_PREFIX)


# ---- writing TF's format ---------------------------------------------------------------------
def test_v2_saver_round_trip_and_files(tmp_path):
    values = numeric_values()
    variables, emb = build_graph(values)
    saver = tf.train.Saver(write_version=tf.train.SaverDef.V2, max_to_keep=2)
    with tf.Session() as sess:
        sess.run([v.assign(values[n]) for n, v in variables.items()])
        sess.run([part.assign(partitioned_value()[2 * i:2 * i + 2]) for i, part in enumerate(emb)])
        paths = [saver.save(sess, str(tmp_path / "model.ckpt"), global_step=s,
                            write_meta_graph=False) for s in (1, 2, 3)]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + [
        f"model.ckpt-{s}{ext}" for s in (2, 3) for ext in (DATA, ".index")]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    assert tf.train.checkpoint_exists(paths[-1]) and not tf.train.checkpoint_exists(paths[0])
    assert len(tf.train.get_checkpoint_mtimes(paths)) == 2
    tf.reset_default_graph()
    variables, emb = build_graph(values, partitions=2)
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, paths[-1])
        for name, v in variables.items():
            assert_exact(np.asarray(sess.run(v.value())), values[name])
        assert_exact(sess.run(emb.as_tensor()), partitioned_value())
    tf.train.remove_checkpoint(paths[1])
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", f"model.ckpt-3{DATA}", "model.ckpt-3.index"]


def test_written_bundle_matches_tfs_files(tmp_path):
    """Same tensors -> TF's data file byte for byte, and the same index entries, except that
    zmtf stores the partitioned tensor whole where TF stores its slices."""
    prefix = str(tmp_path / "model.ckpt")
    write_bundle(prefix, {**fixture_values(), PARTITIONED: partitioned_value()})
    with open(prefix + DATA, "rb") as mine, open(TF_PREFIX + DATA, "rb") as tfs:
        assert mine.read() == tfs.read()
    with open(prefix + ".index", "rb") as mine, open(TF_PREFIX + ".index", "rb") as tfs:
        ours, theirs = dict(read_table(mine.read(), "ours")), dict(read_table(tfs.read(), "tf"))
    whole = decode_entry(ours.pop(PARTITIONED.encode()), "ours")
    assert (whole.dtype, whole.shape, whole.offset, whole.size) == (1, (6, 2), 135, 48)
    sliced = {k for k in theirs if k.startswith(b"\x00")} | {PARTITIONED.encode()}
    assert ours == {k: v for k, v in theirs.items() if k not in sliced}
    assert tf.train.NewCheckpointReader(prefix).get_tensor("words").tolist() == \
        fixture_values()["words"].tolist()


def test_table_builder_reproduces_tfs_index_byte_for_byte():
    with open(TF_PREFIX + ".index", "rb") as f:
        data = f.read()
    assert build_table(read_table(data, "tf")) == data


def index_keys(table):
    """The keys of a table's index block: one separator per data block."""
    from zmtf.formats.varint import read_varint
    from zmtf.training.sstable import _block, _block_entries

    footer = table[-48:]
    _, pos = read_varint(footer, read_varint(footer, 0, "f")[1], "f")
    offset, pos = read_varint(footer, pos, "f")
    size, _ = read_varint(footer, pos, "f")
    return [k for k, _ in _block_entries(_block(table[:-48], offset, size, "t"), "t")]


def test_table_with_many_blocks_round_trips():
    entries = sorted([(b"key/%05d" % i, b"v" * (i % 7)) for i in range(500)]
                     + [(b"key/big", b"x" * 600)])            # >= 2 blocks: a block of its own
    table = build_table(entries, block_size=256)
    assert read_table(table, "t") == entries
    separators = index_keys(table)
    assert len(separators) > 10 and separators == sorted(separators)
    assert separators[-2:] == [b"key/1", b"l"]    # between key/00499 and key/big; after key/big
    assert index_keys(build_table(entries)) == [b"l"]             # 256 KiB: one block
    # FindShortestSeparator("abc", "abx") and FindShortSuccessor("abx"), as TF's builder
    assert index_keys(build_table([(b"abc", b"1"), (b"abx", b"2" * 600)], 256)) == [b"abd", b"b"]


def test_slice_keys_use_tfs_ordered_code():
    assert slice_key("a\x00b", ((0, -1), (4242, 3))) == (
        b"\x00" + b"a\x00\xffb\x00\x01" + b"\x01\x02" + b"\x80" + b"\x7f" + b"\xd0\x92" + b"\x83")
    assert slice_key("w", ((0x424242, -0x800),))[-6:] == b"\xf0\x42\x42\x42\x38\x00"


def test_v1_and_unknown_write_versions_are_refused():
    tf.Variable(1.0)
    with pytest.raises(NotImplementedError, match="V1"):
        tf.train.Saver(write_version=tf.train.SaverDef.V1)
    with pytest.raises(ValueError, match="write_version"):
        tf.train.Saver(write_version=7)
    with pytest.raises(NotImplementedError, match="saver_def"):
        tf.train.SaverDef()


def test_saver_def_keeps_the_write_version(tmp_path):
    v = tf.Variable(3.0, name="v")
    saver_def = tf.train.Saver(write_version=tf.train.SaverDef.V2).saver_def
    assert saver_def["write_version"] == 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = tf.train.Saver(saver_def=saver_def).save(sess, str(tmp_path / "m"),
                                                        write_meta_graph=False)
    assert os.path.isfile(path + ".index") and not os.path.exists(path + ".npz")


# ---- damaged files ---------------------------------------------------------------------------
def damage(path, offset=None, truncate=None):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        if truncate is not None:
            data = data[:truncate]
        if offset is not None:
            data[offset] ^= 0x01
        f.seek(0)
        f.truncate()
        f.write(data)


@pytest.mark.parametrize("suffix,offset,truncate,message", [
    (".index", 20, None, "block checksum mismatch"),
    (".index", -3, None, "bad magic number"),
    (".index", None, 40, "too short"),
    (".index", None, 300, "bad magic number"),
    (".index", -45, None, "runs past the end|checksum|bad block handle|truncated"),
])
def test_damaged_index_is_data_loss(tf_checkpoint, suffix, offset, truncate, message):
    path = tf_checkpoint + suffix
    if offset is not None and offset < 0:
        offset += os.path.getsize(path)
    damage(path, offset, truncate)
    with pytest.raises(tf.errors.DataLossError, match=message) as error:
        tf.train.NewCheckpointReader(tf_checkpoint)
    assert path in str(error.value)


@pytest.mark.parametrize("name,offset,truncate,message", [
    ("floats", 30, None, "floats: checksum does not match"),
    ("words", 200, None, "words: checksum does not match"),
    ("words", 186, None, "string lengths|length checksum"),
    ("small", None, 184, "small: needs bytes 183 to 186 but the file has 184"),
])
def test_damaged_data_is_data_loss(tf_checkpoint, name, offset, truncate, message):
    damage(tf_checkpoint + DATA, offset, truncate)
    reader = tf.train.NewCheckpointReader(tf_checkpoint)
    with pytest.raises(tf.errors.DataLossError, match=message) as error:
        reader.get_tensor(name)
    assert tf_checkpoint + DATA in str(error.value)


def test_damaged_data_fails_restore_too(tf_checkpoint):
    damage(tf_checkpoint + DATA, 30)
    tf.Variable(np.zeros([2, 3], np.float32), name="floats")
    with tf.Session() as sess, pytest.raises(tf.errors.DataLossError, match="checksum"):
        tf.train.Saver().restore(sess, tf_checkpoint)


def rewrite_entry(prefix, name, **changes):
    """Replace one index entry (with a valid table around it), as a hostile writer could."""
    with open(prefix + ".index", "rb") as f:
        entries = read_table(f.read(), "index")
    entries = [(k, encode_entry(BundleEntry(**{**decode_entry(v, "e").__dict__, **changes}))
                if k == name.encode() else v) for k, v in entries]
    with open(prefix + ".index", "wb") as f:
        f.write(build_table(entries))


@pytest.mark.parametrize("name,changes,message", [
    ("floats", {"shape": (1 << 40, 1 << 20)}, "invalid size in bundle entry"),
    ("floats", {"offset": 1 << 60}, "needs bytes"),
    ("words", {"shape": (1 << 40,)}, "expected at least"),
    ("floats", {"dtype": 8}, "DT_COMPLEX64 are not supported"),
    ("scope/emb", {"slices": (((0, 2), (0, 2)), ((1, 2), (0, 2)))}, "overlap"),
    ("scope/emb", {"slices": (((0, 2), (0, 2)),)}, "sufficient slices"),
    ("scope/emb", {"slices": (((5, 2), (0, 2)),)}, "outside shape"),
])
def test_hostile_entries_are_refused_before_allocating(tf_checkpoint, name, changes, message):
    rewrite_entry(tf_checkpoint, name, **changes)
    with pytest.raises((tf.errors.DataLossError, tf.errors.UnimplementedError), match=message):
        tf.train.NewCheckpointReader(tf_checkpoint).get_tensor(name)
