"""tf.decode_csv: one tensor per column, typed by its default, with TF's quote rules and
messages; and the classic TF1 CSV pipeline (TextLineReader -> decode_csv -> batch)."""

import numpy as np
import pytest

import zmtf as tf


def decode(records, defaults, **kwargs):
    columns = tf.decode_csv(records, defaults, **kwargs)
    with tf.Session() as sess:
        return columns, sess.run(columns)


def test_columns_take_the_dtype_of_their_default_and_empty_fields_the_default():
    columns, (ints, floats, names, wide, doubles) = decode(
        ["1,2.5,a,7,1e3", "3,,,,-0.5"],
        [[0], [1.0], ["z"], [np.int64(9)], [np.float64(0)]])
    assert [c.dtype for c in columns] == [tf.int32, tf.float32, tf.string, tf.int64, tf.float64]
    assert [c.shape.as_list() for c in columns] == [[2]] * 5
    np.testing.assert_array_equal(ints, [1, 3])
    np.testing.assert_array_equal(floats, np.array([2.5, 1.0], np.float32))
    assert list(names) == [b"a", b"z"]
    assert wide.dtype == np.int64 and list(wide) == [7, 9]
    assert doubles.dtype == np.float64 and list(doubles) == [1000.0, -0.5]


def test_records_of_any_shape_and_a_scalar_record():
    _, (a, b) = decode([["1,2", "3,4"], ["5,6", "7,8"]], [[0], [0]])
    np.testing.assert_array_equal(a, [[1, 3], [5, 7]])
    np.testing.assert_array_equal(b, [[2, 4], [6, 8]])
    _, (a, b) = decode("1,2", [[0], [0]])
    assert (a, b) == (1, 2)


def test_quotes_delimiters_na_value_and_select_cols():
    _, (text, n) = decode(['"a,b",2', '"x""y",3', '"",4'], [["d"], [0]])
    assert list(text) == [b"a,b", b'x"y', b"d"] and list(n) == [2, 3, 4]
    _, (x, y) = decode(["NA|2", "1| 3 "], [[0.5], [0]], field_delim="|", na_value="NA")
    assert list(x) == [0.5, 1.0] and list(y) == [2, 3]
    _, (second, fourth) = decode(["1,2,3,4", "5,,7,"], [[0], [-1]], select_cols=[1, 3])
    assert list(second) == [2, 0] and list(fourth) == [4, -1]


@pytest.mark.parametrize("records,defaults,kwargs,message", [
    (["1,2", ",2"], [[], [0]], {}, "Field 0 is required but missing in record 1!"),
    (["1,2", "3,4,5"], [[0], [0]], {}, "Expect 2 fields but have 3 in record 1"),
    (["1,2"], [[0], [0], [0]], {}, "Expect 3 fields but have 2 in record 0"),
    (['"a,b",2'], [[""], [0]], {"use_quote_delim": False}, "Expect 2 fields but have 3"),
    (['a"b,2'], [[""], [0]], {}, "Unquoted fields cannot have quotes/CRLFs inside"),
    (['"ab"c,2'], [[""], [0]], {}, "Quote inside a string has to be escaped by another quote"),
    (['"ab,2'], [[""], [0]], {}, "Quoted field has to end with quote followed by delim or end"),
    (["x,2"], [[0], [0]], {}, "Field 0 in record 0 is not a valid int32: x"),
    (["1.5,2"], [[0], [0]], {}, "Field 0 in record 0 is not a valid int32: 1.5"),
    (["9999999999"], [[0]], {}, "Field 0 in record 0 is not a valid int32: 9999999999"),
    (["1,abc"], [[0], [0.0]], {}, "Field 1 in record 0 is not a valid float: abc"),
])
def test_bad_records_are_invalid_argument_with_tf_wording(records, defaults, kwargs, message):
    columns = tf.decode_csv(records, defaults, name="csv", **kwargs)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(columns)
    assert message in str(info.value) and "csv" in str(info.value)


def test_bad_arguments_fail_when_the_graph_is_built():
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        tf.decode_csv(["1"], [[True]])
    with pytest.raises(ValueError, match="select_cols is not strictly increasing."):
        tf.decode_csv(["1,2"], [[0], [0]], select_cols=[1, 0])
    with pytest.raises(ValueError, match="Length of select_cols and record_defaults do not match."):
        tf.decode_csv(["1,2"], [[0], [0]], select_cols=[1])


def test_text_line_reader_csv_pipeline(tmp_path):
    paths = []
    for part, rows in enumerate([["id,score,label", "1,0.5,cat", "2,,dog"],
                                 ["id,score,label", '3,1.5,"big, cat"']]):
        path = tmp_path / f"part{part}.csv"
        path.write_text("\n".join(rows) + "\n")
        paths.append(str(path))
    queue = tf.train.string_input_producer(paths, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader(skip_header_lines=1).read(queue)
    ident, score, label = tf.decode_csv(line, [[0], [-1.0], [""]])
    batch = tf.train.batch([ident, score, label], batch_size=3)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        ids, scores, labels = sess.run(batch)
        coord.request_stop()
        coord.join(threads)
    assert list(ids) == [1, 2, 3]
    np.testing.assert_array_equal(scores, np.array([0.5, -1.0, 1.5], np.float32))
    assert list(labels) == [b"cat", b"dog", b"big, cat"]


def test_dataset_map_decodes_lines():
    lines = tf.data.Dataset.from_tensor_slices(tf.constant(["1,a", "2,b", "3,"]))
    dataset = lines.map(lambda line: tf.decode_csv(line, [[0], ["?"]])).batch(3)
    ids, names = dataset.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got_ids, got_names = sess.run([ids, names])
    assert list(got_ids) == [1, 2, 3] and list(got_names) == [b"a", b"b", b"?"]
