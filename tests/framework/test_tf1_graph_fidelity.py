"""Graph-building details TF1 scripts rely on: integer random_uniform (RandomUniformInt),
bytes op names, _output_shapes in exported GraphDefs, and the tf.test / tf.contrib.training
names TF1 test and cluster code import."""

import logging

import numpy as np
import pytest

import zmtf as tf


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_random_uniform_of_an_int_dtype_draws_integers_in_the_half_open_range(dtype):
    labels = tf.random_uniform([2000], minval=-3, maxval=10, dtype=dtype, seed=7)
    assert labels.dtype == dtype and labels.op.type == "RandomUniformInt"
    with tf.Session() as sess:
        first, second = sess.run(labels), sess.run(labels)
    assert first.dtype == dtype.as_numpy_dtype
    assert first.min() == -3 and first.max() == 9 and len(np.unique(first)) == 13
    assert not np.array_equal(first, second)


def test_random_uniform_of_an_int_dtype_needs_maxval_and_a_nonempty_range():
    with pytest.raises(ValueError, match="Must specify maxval"):
        tf.random_uniform([3], dtype=tf.int32)
    empty = tf.random_uniform([3], minval=5, maxval=5, dtype=tf.int64)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval"):
            sess.run(empty)


def test_random_uniform_int_survives_a_graph_def_round_trip():
    tf.random_uniform([4], maxval=3, dtype=tf.int64, seed=1, name="labels")
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            values = sess.run("labels:0")
    assert values.dtype == np.int64 and set(values.tolist()) <= {0, 1, 2}


def test_a_bytes_name_is_the_names_text():
    c = tf.constant(1.0, name=b"e")
    with tf.name_scope(b"outer"):
        d = tf.constant(2.0, name=b"f")
    assert (c.name, d.name) == ("e:0", "outer/f:0")


def test_add_shapes_and_infer_shapes_put_output_shapes_on_every_node():
    tf.constant([[1, 2]], name="c")
    tf.placeholder(tf.float32, [None, 2], name="p")
    plain = tf.get_default_graph().as_graph_def()
    shaped = tf.get_default_graph().as_graph_def(add_shapes=True)
    assert all("_output_shapes" not in n.attr for n in plain.node)
    dims = {n.name: [d.size for d in n.attr["_output_shapes"].list.shape[0].dim] for n in shaped.node}
    assert dims == {"c": [1, 2], "p": [-1, 2]}
    assert "_output_shapes" not in tf.Session().graph_def.node[0].attr
    config = tf.ConfigProto(graph_options=tf.GraphOptions(infer_shapes=True))
    assert "_output_shapes" in tf.Session(config=config).graph_def.node[0].attr


def test_tf_test_gpu_support_and_proto_equality():
    assert tf.test.is_built_with_gpu_support() is tf.test.is_built_with_cuda()
    case = tf.test.TestCase()
    node = tf.constant(1.0, name="one").op
    message = tf.get_default_graph().as_graph_def().node[0]
    case.assertProtoEquals(message, message)
    case.assertProtoEquals(str(message), message)
    with pytest.raises(AssertionError):
        case.assertProtoEquals('name: "two"', message)
    assert node.name == "one"


class _AddBenchmark(tf.test.Benchmark):
    def benchmarkAdd(self):  # noqa: N802 - TF's naming
        with tf.Session() as sess:
            return self.run_op_benchmark(sess, tf.constant(1.0) + 1.0, min_iters=3)


def test_a_benchmark_subclass_runs_and_reports(caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REPORT_FILE_PREFIX", str(tmp_path / "bench_"))
    with caplog.at_level(logging.INFO, logger="zmtf.testing"):
        result = _AddBenchmark().benchmarkAdd()
        entry = _AddBenchmark().report_benchmark(iters=5, wall_time=0.5, extras={"k": 1}, name="named")
    assert result["iters"] == 3 and result["wall_time"] > 0
    assert entry["wall_time"] == 0.5
    assert "Benchmark [_AddBenchmark.benchmarkAdd] iters: 3" in caplog.text
    assert (tmp_path / "bench_named").is_file() and (tmp_path / "bench__AddBenchmark.benchmarkAdd").is_file()


def test_contrib_training_greedy_strategy_balances_ps_bytes():
    strategy = tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = tf.Variable(tf.zeros([1000]), name="big")
        small = [tf.Variable(tf.zeros([10]), name=f"s{i}") for i in range(3)]
    assert big.device == "/job:ps/task:0"
    assert [v.device for v in small] == ["/job:ps/task:1"] * 3


def test_complex64_constants_and_arithmetic():
    c = tf.constant([1 + 2j, 3 - 1j], dtype=tf.complex64)
    assert tf.constant(2 + 0j).dtype == tf.complex128
    assert tf.complex64.is_complex and tf.complex64.real_dtype == tf.float32
    assert tf.as_dtype(np.complex128) == tf.complex128 and tf.dtypes.complex64 == tf.complex64
    made = tf.complex(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]))
    fetches = [c * c + c - c / tf.constant(2 + 0j, dtype=tf.complex64), -c, tf.add_n([c, c]),
               tf.real(c), tf.imag(c), tf.conj(c), tf.abs(c), made]
    with tf.Session() as sess:
        got = sess.run(fetches)
    x = np.array([1 + 2j, 3 - 1j], np.complex64)
    expected = [x * x + x - x / 2, -x, 2 * x, x.real, x.imag, np.conj(x), np.abs(x),
                np.array([1 + 3j, 2 + 4j], np.complex64)]
    for value, want in zip(got, expected):
        assert value.dtype == want.dtype
        np.testing.assert_allclose(value, want, rtol=1e-6)


def test_complex_constants_survive_graph_defs_and_tensor_protos():
    c = tf.constant([1 + 2j, 3j], dtype=tf.complex64, name="c")
    tf.multiply(c, c, name="square")
    tf.constant(1 - 1j, name="single")
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            square, single = sess.run(["square:0", "single:0"])
    np.testing.assert_allclose(square, np.array([1 + 2j, 3j]) ** 2)
    assert square.dtype == np.complex64 and single == 1 - 1j and single.dtype == np.complex128
    pairs = tf.make_tensor_proto(np.array([1 + 2j, 3 + 4j], np.complex64))
    pairs.tensor_content = b""
    pairs.scomplex_val.extend([1.0, 2.0, 3.0, 4.0])    # how TF writes a few complex values
    np.testing.assert_array_equal(tf.make_ndarray(pairs), [1 + 2j, 3 + 4j])


def test_complex_tensors_cross_a_cluster():
    with tf.device("/job:ps/task:0"):
        c = tf.constant([1 + 2j], dtype=tf.complex64) * 2
    with tf.device("/job:worker/task:0"):
        d = c + tf.constant([1j], dtype=tf.complex64)
    workers, ps = tf.test.create_local_cluster(1, 1)
    try:
        with tf.Session(workers[0].target) as sess:
            assert sess.run(d).tolist() == [2 + 5j]
    finally:
        for server in workers + ps:
            server.stop()
