"""Lookup tables: static tables and their initializers (tensors, text files), the
"Table not initialized." rule, tf.tables_initializer, persistence across runs, mutable tables,
and the vocabulary helpers with their out-of-vocabulary hash buckets (ids checked against
the FarmHash Fingerprint64 reference values of test_string_hashes.py)."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from zmtf.kernels.cpu.string_hashes import fingerprint64

lookup = tf.contrib.lookup


def test_static_table_maps_keys_of_any_shape_and_defaults_the_rest():
    table = lookup.HashTable(lookup.KeyValueTensorInitializer(["a", "b", "c"], [7, 8, 9],
                                                              value_dtype=tf.int64), -1)
    out = table.lookup(tf.constant([["a", "z"], ["c", "b"]]))
    assert out.dtype == tf.int64 and out.shape.as_list() == [2, 2]
    assert out.op.name == "hash_table_Lookup/LookupTableFindV2"
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(out), [[7, -1], [9, 8]])
        assert sess.run(table.size()) == 3
        keys, values = sess.run(table.export())
        assert dict(zip(keys.tolist(), values.tolist())) == {b"a": 7, b"b": 8, b"c": 9}


@pytest.mark.parametrize("keys,values,key_dtype,value_dtype,query,default,expected", [
    ([1, 2], [0.5, 1.5], tf.int64, tf.float32, [2, 3], 0.0, [1.5, 0.0]),
    ([0, 1], ["x", "y"], tf.int64, tf.string, [1, 5], "?", [b"y", b"?"]),
    (["a", "b"], [1.25, 2.5], tf.string, tf.float64, ["b", "q"], -1.0, [2.5, -1.0]),
])
def test_key_and_value_dtypes(keys, values, key_dtype, value_dtype, query, default, expected):
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, values, key_dtype, value_dtype), default)
    out = table.lookup(tf.constant(query, key_dtype))
    assert out.dtype == value_dtype
    with tf.Session() as sess:
        sess.run(table.initializer)
        assert sess.run(out).tolist() == expected


def test_lookup_before_initialization_fails_and_size_is_zero():
    table = lookup.HashTable(lookup.KeyValueTensorInitializer(["a"], [1], value_dtype=tf.int64), -1)
    out = table.lookup(tf.constant(["a"]))
    with tf.Session() as sess:
        with pytest.raises(FailedPreconditionError, match="Table not initialized."):
            sess.run(out)
        assert sess.run(table.size()) == 0
        sess.run(table.init)
        assert sess.run(out).tolist() == [1]


def test_tables_initializer_runs_every_table_initializer():
    first = lookup.index_table_from_tensor(["a", "b"])
    second = lookup.index_to_string_table_from_tensor(["x", "y"])
    collected = tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)
    assert collected == [first.initializer, second.initializer]
    init = tf.tables_initializer()
    assert init.name == "init_all_tables"
    with tf.Session() as sess:
        sess.run(init)
        assert sess.run(first.lookup(tf.constant(["b", "q"]))).tolist() == [1, -1]
        assert sess.run(second.lookup(tf.constant([1, 2], tf.int64))).tolist() == [b"y", b"UNK"]


def test_table_persists_across_runs_and_a_second_initializer_is_ignored():
    keys = tf.placeholder(tf.string, [None])
    values = tf.placeholder(tf.int64, [None])
    table = lookup.HashTable(lookup.KeyValueTensorInitializer(keys, values), -1)
    out = table.lookup(tf.constant(["a", "c"]))
    with tf.Session() as sess:
        sess.run(table.init, {keys: ["a", "b"], values: [1, 2]})
        assert sess.run(out).tolist() == [1, -1]
        sess.run(table.init, {keys: ["a", "c"], values: [5, 6]})   # as TF: kept, not replaced
        assert sess.run(out).tolist() == [1, -1]
    with tf.Session() as fresh:                                     # a local session's own table
        with pytest.raises(FailedPreconditionError):
            fresh.run(out)


def test_initializer_errors():
    keys = tf.placeholder(tf.string, [None])
    values = tf.placeholder(tf.int64, [None])
    table = lookup.HashTable(lookup.KeyValueTensorInitializer(keys, values), -1)
    with tf.Session() as sess:
        with pytest.raises(FailedPreconditionError,
                           match="different value for same key. Key a has 1 and trying to add "
                                 "value 2"):
            sess.run(table.init, {keys: ["a", "a"], values: [1, 2]})
        with pytest.raises(InvalidArgumentError, match=r"Expected shape \[2\] for value, got \[1\]"):
            sess.run(table.init, {keys: ["a", "b"], values: [1]})
        sess.run(table.init, {keys: ["a", "a"], values: [3, 3]})   # a repeated pair is fine
        assert sess.run(table.size()) == 1


def test_build_time_errors():
    table = lookup.index_table_from_tensor(["a"])
    with pytest.raises(TypeError, match="Dtype of argument `keys` must be"):
        table.lookup(tf.constant([1]))
    with pytest.raises(ValueError, match="not compatible"):
        lookup.HashTable(lookup.KeyValueTensorInitializer(["a"], [1]), [1, 2])
    with pytest.raises(ValueError, match="must be greater or equal than 0"):
        lookup.index_table_from_tensor(["a"], num_oov_buckets=-1)
    with pytest.raises(TypeError, match="must either be integer or string"):
        lookup.index_table_from_tensor(["a"], dtype=tf.float32)
    with pytest.raises(ValueError, match="Expected integer"):
        lookup.index_table_from_tensor(["a"], dtype=tf.int64)
    with pytest.raises(ValueError, match="must be > 0 if no `table`"):
        lookup.IdTableWithHashBuckets(None, 0)


def _oov_id(word: bytes, vocab_size: int, buckets: int) -> int:
    return vocab_size + fingerprint64(word) % buckets


def test_out_of_vocabulary_keys_go_to_fingerprint64_buckets():
    table = lookup.index_table_from_tensor(["emerson", "lake", "palmer"], num_oov_buckets=3)
    words = [b"emerson", b"lake", b"palmer", b"king", b"crimson", b""]
    out = table.lookup(tf.constant(words))
    assert out.op.name == "hash_table_Lookup/SelectV2"
    with tf.Session() as sess:
        sess.run(table.init)
        # TF 2.21 gives [0, 1, 2, 4, 3, 5]: known ids, then 3 + Fingerprint64 % 3
        assert sess.run(out).tolist() == [0, 1, 2, 4, 3, 5]
        assert sess.run(out).tolist()[3:] == [_oov_id(w, 3, 3) for w in words[3:]]
        assert sess.run(table.size()) == 6


def test_integer_keys_are_hashed_as_their_decimal_text():
    table = lookup.index_table_from_tensor(tf.constant([10, 20], tf.int64), num_oov_buckets=7,
                                           dtype=tf.int64)
    out = table.lookup(tf.constant([10, 20, 30, -4], tf.int64))
    with tf.Session() as sess:
        sess.run(table.init)
        assert sess.run(out).tolist() == [0, 1, _oov_id(b"30", 2, 7), _oov_id(b"-4", 2, 7)]


def test_only_buckets_without_a_table():
    table = lookup.IdTableWithHashBuckets(None, 11)
    words = [b"a", b"bb", b"a much longer key than sixty-four bytes, to take the long path!!"]
    with tf.Session() as sess:
        assert sess.run(table.lookup(tf.constant(words))).tolist() == \
            [fingerprint64(w) % 11 for w in words]
        assert sess.run(table.size()) == 11


def test_static_vocabulary_table():
    init = tf.lookup.KeyValueTensorInitializer(["a", "b"], np.array([0, 1], np.int64))
    table = tf.lookup.StaticVocabularyTable(init, num_oov_buckets=4)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(table.lookup(tf.constant(["b", "zz"]))).tolist() == \
            [1, _oov_id(b"zz", 2, 4)]


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"emerson 10\nlake 20\r\npalmer 30\n")
    return str(path)


def test_index_table_from_file_and_back(vocab_file):
    ids = lookup.index_table_from_file(vocab_file, key_column_index=0, value_column_index=1,
                                       delimiter=" ")
    lines = lookup.index_to_string_table_from_file(vocab_file, default_value="?")
    whole = lookup.index_table_from_file(vocab_file, num_oov_buckets=2)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(ids.lookup(tf.constant(["lake", "x"]))).tolist() == [20, -1]
        assert sess.run(lines.lookup(tf.constant([1, 3], tf.int64))).tolist() == \
            [b"lake 20", b"?"]                                # "\r\n" ends a line too
        assert sess.run(whole.lookup(tf.constant(["palmer 30", "q"]))).tolist() == \
            [2, _oov_id(b"q", 3, 2)]


def test_text_file_initializer_line_numbers_offset_and_vocab_size(vocab_file):
    init = tf.lookup.TextFileInitializer(vocab_file, tf.string, 0, tf.int64,
                                         tf.lookup.TextFileIndex.LINE_NUMBER, delimiter=" ",
                                         value_index_offset=5, vocab_size=2)
    table = tf.lookup.StaticHashTable(init, -1)
    with tf.Session() as sess:
        sess.run(table.initializer)
        assert sess.run(table.lookup(tf.constant(["emerson", "lake", "palmer"]))).tolist() == \
            [5, 6, -1]


@pytest.mark.parametrize("content,kwargs,error,message", [
    (b"a 1\n\nb 2\n", {}, InvalidArgumentError, "empty line found at position 5"),
    (b"a 1\n", {"vocab_size": 3}, InvalidArgumentError, "expected 3 but got 1"),
    (b"a 1\nb\n", {}, InvalidArgumentError, r"line 1 \(b\) : expected at least 2 got 1"),
    (b"a x\n", {}, InvalidArgumentError, "Field x in line 0 is not a valid int64"),
])
def test_text_file_errors(tmp_path, content, kwargs, error, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    init = tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int64, 1, delimiter=" ",
                                         **kwargs)
    table = tf.lookup.StaticHashTable(init, -1)
    with tf.Session() as sess, pytest.raises(error, match=message):
        sess.run(table.initializer)


def test_missing_vocabulary_file(tmp_path):
    table = lookup.index_table_from_file(str(tmp_path / "nope.txt"))
    with tf.Session() as sess, pytest.raises(NotFoundError, match="No such file"):
        sess.run(table.init)


def test_text_file_tables_of_one_file_share_a_table(vocab_file):
    first = lookup.index_table_from_file(vocab_file)
    second = lookup.index_table_from_file(vocab_file)
    assert first.resource_handle.op.get_attr("shared_name") == \
        second.resource_handle.op.get_attr("shared_name") == f"hash_table_{vocab_file}_-2_-1"
    with tf.Session() as sess:
        sess.run(first.init)                                   # fills the table both use
        assert sess.run(second.lookup(tf.constant(["lake 20"]))).tolist() == [1]


def test_mutable_hash_table_insert_lookup_remove_export():
    table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.int64, -1)
    keys = tf.constant([1, 2, 3], tf.int64)
    found = table.lookup(tf.constant([[1, 2], [3, 4]], tf.int64))
    assert found.shape.as_list() == [2, 2]
    with tf.Session() as sess:
        assert sess.run(table.size()) == 0
        sess.run(table.insert(keys, tf.constant([10, 20, 30], tf.int64)))
        sess.run(table.insert(tf.constant([2], tf.int64), tf.constant([99], tf.int64)))
        np.testing.assert_array_equal(sess.run(found), [[10, 99], [30, -1]])
        sess.run(table.remove(tf.constant([1, 7], tf.int64)))
        exported_keys, exported_values = sess.run(table.export())
        assert dict(zip(exported_keys.tolist(), exported_values.tolist())) == {2: 99, 3: 30}
        dynamic = table.lookup(tf.constant([1, 3], tf.int64),
                               dynamic_default_values=tf.constant([-5, -6], tf.int64))
        assert sess.run(dynamic).tolist() == [-5, 30]
        with pytest.raises(InvalidArgumentError, match=r"Expected shape \[2\] for value"):
            sess.run(table.insert(keys[:2], tf.constant([1], tf.int64)))


def test_mutable_hash_table_of_vectors():
    table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, [0.0, 0.0])
    out = table.lookup(tf.constant(["x", "q"]))
    assert out.shape.as_list() == [2, 2] and out.dtype == tf.float32
    assert table.resource_handle.op.type == "MutableHashTableOfTensorsV2"
    with tf.Session() as sess:
        sess.run(table.insert(["x", "y"], [[1.0, 2.0], [3.0, 4.0]]))
        np.testing.assert_array_equal(sess.run(out), [[1.0, 2.0], [0.0, 0.0]])


def test_deprecated_contrib_helpers():
    ids = lookup.string_to_index(tf.constant(["b", "z"]), mapping=["a", "b"])
    words = lookup.index_to_string(tf.constant([0, 9], tf.int64), mapping=["a", "b"])
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(ids).tolist() == [1, -1]
        assert sess.run(words).tolist() == [b"a", b"UNK"]

