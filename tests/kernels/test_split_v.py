"""tf.split as one SplitV node: values as numpy's, a concat for its gradient, TF's GraphDef form."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.errors import InvalidArgumentError


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("axis, sizes", [(0, [1, 3]), (1, [2, 2, 2]), (-2, [5, 1]), (2, [1, 1])])
def test_pieces_match_numpys_split(dtype, axis, sizes):
    value = np.arange(4 * 6 * 2).reshape(4, 6, 2).astype(dtype)
    x = tf.placeholder(dtype, value.shape)
    pieces = tf.split(x, sizes, axis=axis)
    with tf.Session() as sess:
        got = sess.run(pieces, {x: value})
    want = np.split(value, np.cumsum(sizes)[:-1], axis=axis)
    assert [p.shape.as_list() for p in pieces] == [list(w.shape) for w in want]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert [op.type for op in x.consumers()] == ["SplitV"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_concatenates_the_pieces_and_zero_fills_an_unused_one(dtype):
    value = np.random.default_rng(0).standard_normal((3, 8)).astype(dtype)
    x = tf.placeholder(dtype, value.shape)
    i, f, g, o = tf.split(x, 4, axis=1)           # g: unused
    loss = tf.reduce_sum(tf.sigmoid(i) * f) + tf.reduce_sum(o * o)
    grad = tf.gradients(loss, x)[0]
    with tf.Session() as sess:
        got = sess.run(grad, {x: value})
    iv, fv, _, ov = np.split(value, 4, axis=1)
    sig = 1 / (1 + np.exp(-iv))
    want = np.concatenate([sig * (1 - sig) * fv, sig, np.zeros_like(iv), 2 * ov], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert "StridedSliceGrad" not in {op.type for op in grad.graph.get_operations()}


def test_a_wrong_size_at_run_time_is_an_invalid_argument():
    x = tf.placeholder(tf.float32, [None, 4])
    a, _ = tf.split(x, [1, 3], axis=0)   # the batch dimension is only known at run time
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="add up to dimension 0"):
            sess.run(a, {x: np.zeros((5, 4), np.float32)})


def test_graph_def_carries_tfs_split_v_and_imports_back():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [2, 6], name="x")
    pieces = tf.split(x, [1, 2, 3], axis=-1, name="s")
    y = tf.identity(pieces[2], name="y")
    graph_def = tf.get_default_graph().as_graph_def()
    node = next(n for n in graph_def.node if n.op == "SplitV")
    assert node.attr["num_split"].i == 3 and len(node.input) == 3
    value = np.arange(12, dtype=np.float32).reshape(2, 6)
    with tf.Session() as sess:
        want = sess.run(y, {x: value})
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=graph) as sess:
            np.testing.assert_array_equal(sess.run("y:0", {"x:0": value}), want)
