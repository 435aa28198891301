"""tf.gradients against central finite differences, op by op, plus the walk's rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.op_def import apply_op
from zmtf.training.gradients import gradients

rng = np.random.default_rng(1234)


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape)


def positive(*shape: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, size=shape)


def away_from_zero(*shape: int) -> np.ndarray:
    """Values in +-[0.3, 2]: no kink of relu/abs within a finite-difference step."""
    return rng.uniform(0.3, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def distinct(*shape: int) -> np.ndarray:
    """A permutation of well-separated values: no ties for max/min."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 - 1.0).astype(np.float64)


def distribution(*shape: int) -> np.ndarray:
    """Rows that sum to 1 (the op's ready-made backprop, softmax - labels, assumes it)."""
    p = positive(*shape)
    return p / p.sum(axis=-1, keepdims=True)


def raw(op_type: str) -> Callable[..., tf.Tensor]:
    return lambda *inputs: apply_op(op_type, list(inputs)).outputs[0]


@dataclass
class Case:
    id: str
    fn: Callable[..., Any]
    inputs: list[np.ndarray]
    shapes: list[Any] | None = None  # placeholder shapes; default: the arrays' shapes
    rtol: float = 1e-6
    eps: float = 1e-6  # the finite-difference step


CASES = [
    # broadcasting binary ops
    Case("add_same", tf.add, [normal(2, 3), normal(2, 3)]),
    Case("add_3x1_plus_4", tf.add, [normal(3, 1), normal(4)]),
    Case("add_scalar", tf.add, [normal(2, 3), normal()]),
    Case("addv2", raw("AddV2"), [normal(2, 1, 3), normal(4, 1)]),
    Case("sub_broadcast", tf.subtract, [normal(3, 1), normal(2, 1, 4)]),
    Case("mul_broadcast", tf.multiply, [normal(3, 1), normal(1, 4)]),
    Case("realdiv", tf.divide, [normal(2, 3), positive(3)]),
    Case("maximum", tf.maximum, [distinct(2, 3), distinct(3) + 0.1]),
    Case("minimum", tf.minimum, [distinct(2, 3), distinct(2, 1) + 0.1]),
    Case("pow", tf.pow, [positive(2, 3), normal(3)]),
    Case("pow_negative_base", lambda x: tf.pow(x, 3.0), [-positive(2, 2)]),
    Case("squared_difference", tf.squared_difference, [normal(2, 3), normal(3)]),
    Case("floormod", tf.floormod, [np.array([[1.3, 2.9, 4.3]]), np.array([[0.7], [1.6]])]),
    # unary ops
    Case("neg", tf.negative, [normal(2, 3)]),
    Case("abs", tf.abs, [away_from_zero(2, 3)]),
    Case("exp", tf.exp, [normal(2, 3)]),
    Case("log", tf.log, [positive(2, 3)]),
    Case("square", tf.square, [normal(2, 3)]),
    Case("sqrt", tf.sqrt, [positive(2, 3)]),
    Case("rsqrt", tf.rsqrt, [positive(2, 3)]),
    Case("reciprocal", tf.reciprocal, [positive(2, 3)]),
    Case("sigmoid", tf.sigmoid, [normal(2, 3)]),
    Case("tanh", tf.tanh, [normal(2, 3)]),
    Case("relu", tf.nn.relu, [away_from_zero(2, 3)]),
    Case("relu6", tf.nn.relu6, [np.array([[-1.0, 0.5, 3.0], [5.5, 6.5, 9.0]])]),
    Case("softplus", tf.nn.softplus, [normal(2, 3)]),
    Case("identity", tf.identity, [normal(2, 3)]),
    Case("add_n", lambda a, b, c: tf.add_n([a, b, c]), [normal(2, 3), normal(2, 3), normal(2, 3)]),
    Case("cast_f32_roundtrip", lambda x: tf.cast(tf.cast(x, tf.float32) * 3.0, tf.float64),
         [normal(2, 3)], rtol=1e-3, eps=1e-2),
    # matmul
    Case("matmul", tf.matmul, [normal(2, 3), normal(3, 4)]),
    Case("matmul_ta", lambda a, b: tf.matmul(a, b, transpose_a=True), [normal(3, 2), normal(3, 4)]),
    Case("matmul_tb", lambda a, b: tf.matmul(a, b, transpose_b=True), [normal(2, 3), normal(4, 3)]),
    Case("matmul_ta_tb", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
         [normal(3, 2), normal(4, 3)]),
    # reductions
    Case("sum_all", tf.reduce_sum, [normal(2, 3, 4)]),
    Case("sum_axis1", lambda x: tf.reduce_sum(x, axis=1), [normal(2, 3, 4)]),
    Case("sum_axes_0_2_keep", lambda x: tf.reduce_sum(x, axis=[0, 2], keepdims=True),
         [normal(2, 3, 4)]),
    Case("sum_negative_axis", lambda x: tf.reduce_sum(x, axis=-1), [normal(2, 3)]),
    Case("mean_all", tf.reduce_mean, [normal(2, 3)]),
    Case("mean_axis0", lambda x: tf.reduce_mean(x, axis=0), [normal(4, 3)]),
    Case("mean_keep", lambda x: tf.reduce_mean(x, axis=[1, 2], keep_dims=True), [normal(2, 3, 2)]),
    Case("max_axis1", lambda x: tf.reduce_max(x, axis=1), [distinct(3, 4)]),
    Case("max_all", tf.reduce_max, [distinct(3, 4)]),
    Case("min_axis0_keep", lambda x: tf.reduce_min(x, axis=0, keepdims=True), [distinct(3, 4)]),
    Case("prod_all", tf.reduce_prod, [normal(2, 3)]),
    Case("prod_axis1_with_a_zero", lambda x: tf.reduce_prod(x, axis=1),
         [np.array([[1.5, 0.0, -2.0], [0.5, 3.0, 1.2]])]),
    Case("prod_axes_0_2_keep", lambda x: tf.reduce_prod(x, axis=[0, 2], keepdims=True), [normal(2, 3, 2)]),
    Case("none_batch_prod", lambda x: tf.reduce_prod(x, axis=0), [normal(3, 2)], shapes=[[None, 2]]),
    # MeanGrad with shapes known only at run time, and its own gradient (second order)
    Case("none_batch_mean_all", tf.reduce_mean, [normal(3, 2)], shapes=[[None, 2]]),
    Case("unknown_dims_mean_axis0", lambda x: tf.reduce_mean(x, axis=0), [normal(4, 3)],
         shapes=[[None, None]]),
    Case("unknown_rank_mean_neg_axis_keep", lambda x: tf.reduce_mean(x, axis=-1, keepdims=True),
         [normal(2, 3, 2)], shapes=[None]),
    Case("mean_of_empty_batch_is_empty", lambda x: tf.reduce_mean(x, axis=1) * 2.0,
         [np.zeros((0, 3))], shapes=[[None, 3]]),
    Case("second_order_through_mean", lambda x: gradients(tf.reduce_mean(x * x * x, axis=1), x)[0],
         [normal(2, 3)], shapes=[[None, 3]]),
    # broadcasting that only the run time shows: x [None, 3] fed [1, 3] against [4, 3]
    Case("add_runtime_broadcast", tf.add, [normal(1, 3), normal(4, 3)],
         shapes=[[None, 3], [None, 3]]),
    Case("mul_bias_like", tf.multiply, [normal(4, 3), normal(3)], shapes=[[None, 3], [3]]),
    # array ops
    Case("reshape", lambda x: tf.reshape(x, [3, 2]) * tf.constant(normal(3, 2)), [normal(2, 3)]),
    Case("transpose_perm", lambda x: tf.transpose(x, [1, 2, 0]), [normal(2, 3, 4)]),
    Case("transpose_default", tf.transpose, [normal(2, 3)]),
    Case("expand_dims", lambda x: tf.expand_dims(x, 1) * tf.constant(normal(2, 4, 3)),
         [normal(2, 3)]),
    Case("squeeze", lambda x: tf.squeeze(x, [1]), [normal(2, 1, 3)]),
    Case("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 4]), [normal(3, 1)]),
    Case("sum_to_shape", lambda x: raw("SumToShape")(x, tf.constant([3, 1])), [normal(2, 3, 4)]),
    Case("fill", lambda v: tf.fill([2, 3], v), [normal()]),
    Case("concat_axis0", lambda a, b: tf.concat([a, b], 0), [normal(2, 3), normal(1, 3)]),
    Case("concat_axis1", lambda a, b, c: tf.concat([a, b, c], 1),
         [normal(2, 1), normal(2, 3), normal(2, 2)]),
    Case("concat_middle", lambda a, b: tf.concat([a, b], 1), [normal(2, 1, 3), normal(2, 2, 3)]),
    Case("concat_neg_axis", lambda a, b: tf.concat([a, b], -1), [normal(2, 2), normal(2, 3)]),
    Case("stack_axis0", lambda a, b: tf.stack([a, b]), [normal(2, 3), normal(2, 3)]),
    Case("stack_axis1", lambda a, b, c: tf.stack([a, b, c], axis=1),
         [normal(2, 3), normal(2, 3), normal(2, 3)]),
    Case("stack_last", lambda a, b: tf.stack([a, b], axis=-1), [normal(2, 3), normal(2, 3)]),
    # selection ops
    Case("where", lambda x, y: tf.where(tf.constant([[True, False, True], [False, False, True]]), x, y),
         [normal(2, 3), normal(2, 3)]),
    Case("where_vector_cond", lambda x, y: tf.where(tf.constant([False, True]), x, y),
         [normal(2, 3), normal(2, 3)]),
    Case("slice", lambda x: tf.slice(x, [1, 0, 2], [1, -1, 2]), [normal(2, 3, 4)]),
    Case("getitem", lambda x: x[1, ::2, 1:3], [normal(2, 3, 4)]),
    Case("getitem_negative_step", lambda x: x[::-2, tf.newaxis, ..., -1], [normal(3, 2, 4)]),
    Case("gather_repeated", lambda x: tf.gather(x, [2, 0, 2]), [normal(3, 2)]),
    Case("sin_cos", lambda x: tf.sin(x) * tf.cos(2.0 * x), [normal(3, 2)]),
    Case("log1p_expm1", lambda x: tf.log1p(x) + tf.expm1(x), [positive(4)]),
    Case("batch_normalization", lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
         [normal(4, 3), normal(3), positive(3), normal(3), normal(3)]),
    Case("batch_norm_of_batch_moments",
         lambda x: tf.nn.batch_normalization(x, *tf.nn.moments(x, [0]), None, None, 1e-3),
         [normal(5, 3)], rtol=1e-5),
    Case("boolean_mask", lambda x: tf.boolean_mask(x, [[True, False], [False, True], [True, True]]),
         [normal(3, 2, 2)]),
    Case("gather_axis1", lambda x: tf.gather(x, [[1, 0], [1, 1]], axis=1), [normal(2, 3)]),
    Case("none_batch_getitem", lambda x: x[:, 1], [normal(3, 2)], shapes=[[None, 2]]),
    Case("none_batch_gather", lambda x: tf.gather(x, [0, 0, 2]), [normal(3, 2)], shapes=[[None, 2]]),
    Case("unstack_axis1", lambda x: tf.unstack(x, axis=1)[2] * 2.0 + tf.unstack(x, axis=1)[0],
         [normal(2, 3)]),
    Case("split_sizes", lambda x: tf.concat(tf.split(x, [1, -1], axis=1)[::-1], 1), [normal(2, 3)]),
    Case("tile", lambda x: tf.tile(x, [2, 3]), [normal(2, 2)]),
    Case("pad", lambda x: tf.pad(x, [[1, 0], [2, 1]], constant_values=3.0), [normal(2, 2)]),
    Case("none_batch_tile", lambda x: tf.tile(x, [2, 1]), [normal(3, 2)], shapes=[[None, 2]]),
    Case("none_batch_pad", lambda x: tf.pad(x, [[0, 2], [1, 1]]), [normal(3, 2)], shapes=[[None, 2]]),
    Case("none_batch_slice", lambda x: tf.slice(x, [1, 0], [-1, 1]), [normal(3, 2)], shapes=[[None, 2]]),
    Case("top_k", lambda x: tf.nn.top_k(x, 2)[0], [distinct(3, 4)]),
    Case("top_k_3d_none_batch", lambda x: tf.nn.top_k(x, 3)[0], [distinct(2, 2, 5)],
         shapes=[[None, 2, 5]]),
    # nn ops
    Case("bias_add", tf.nn.bias_add, [normal(2, 3), normal(3)]),
    Case("bias_add_3d", tf.nn.bias_add, [normal(2, 2, 3), normal(3)]),
    Case("softmax", tf.nn.softmax, [normal(2, 4)]),
    Case("log_softmax", tf.nn.log_softmax, [normal(2, 4)]),
    Case("softmax_xent", lambda logits, labels: tf.nn.softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), [normal(3, 4), distribution(3, 4)]),
    Case("sparse_softmax_xent", lambda logits: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([0, 3, 1]), logits=logits), [normal(3, 4)]),
    # convolution and pooling (NHWC)
    Case("conv2d_valid", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"),
         [normal(2, 4, 5, 2), normal(3, 2, 2, 3)]),
    Case("conv2d_same_stride2_odd_padding", lambda x, w: tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
         [normal(1, 5, 6, 2), normal(4, 3, 2, 2)]),
    Case("conv2d_1x1", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
         [normal(2, 3, 3, 3), normal(1, 1, 3, 2)]),
    Case("conv2d_dilated", lambda x, w: tf.nn.conv2d(x, w, 1, "SAME", dilations=2),
         [normal(1, 5, 5, 1), normal(2, 2, 1, 2)]),
    Case("conv2d_transpose", lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 5, 6, 2], [1, 2, 2, 1]),
         [normal(1, 3, 3, 3), normal(3, 3, 2, 3)]),
    Case("conv2d_backprop_filter", lambda x, dy: tf.nn.conv2d_backprop_filter(
        x, [2, 2, 2, 3], dy, [1, 1, 1, 1], "VALID"), [normal(1, 3, 4, 2), normal(1, 2, 3, 3)]),
    Case("max_pool_same", lambda x: tf.nn.max_pool(x, [1, 2, 3, 1], [1, 2, 2, 1], "SAME"),
         [distinct(2, 5, 5, 2)]),
    Case("avg_pool_same", lambda x: tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
         [normal(1, 5, 4, 2)]),
    Case("none_batch_conv_pool", lambda x, w: tf.nn.max_pool2d(
        tf.nn.relu(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")), 2, 2, "VALID"),
        [away_from_zero(2, 4, 4, 1), normal(3, 3, 1, 2)], shapes=[[None, 4, 4, 1], [3, 3, 1, 2]]),
    # a None batch dimension: every shape-dependent gradient decided at run time
    Case("none_batch_add_bias", tf.add, [normal(3, 2), normal(2)], shapes=[[None, 2], [2]]),
    Case("none_batch_mul_column", tf.multiply, [normal(3, 2), normal(3, 1)],
         shapes=[[None, 2], [None, 1]]),
    Case("none_batch_sum0", lambda x: tf.reduce_sum(x, axis=0), [normal(3, 2)], shapes=[[None, 2]]),
    Case("none_batch_mean", tf.reduce_mean, [normal(3, 2)], shapes=[[None, 2]]),
    Case("none_batch_mean_axis1", lambda x: tf.reduce_mean(x, 1), [normal(3, 2)],
         shapes=[[None, 2]]),
    Case("none_batch_max", lambda x: tf.reduce_max(x, axis=1), [distinct(3, 4)],
         shapes=[[None, 4]]),
    Case("none_batch_reshape", lambda x: tf.reshape(x, [-1]), [normal(3, 2)], shapes=[[None, 2]]),
    Case("none_batch_concat_middle", lambda a, b: tf.concat([a, b], 1),
         [normal(2, 1, 3), normal(2, 2, 3)], shapes=[[None, 1, 3], [None, 2, 3]]),
    Case("none_batch_stack", lambda a, b: tf.stack([a, b], axis=1), [normal(3, 2), normal(3, 2)],
         shapes=[[None, 2], [None, 2]]),
    Case("none_batch_bias_add", tf.nn.bias_add, [normal(3, 2), normal(2)], shapes=[[None, 2], [2]]),
    Case("none_batch_xent", lambda logits: tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant([2, 0, 1]), logits=logits)),
        [normal(3, 3)], shapes=[[None, 3]]),
    Case("unknown_rank_sum_axis", lambda x: tf.reduce_sum(x, axis=1), [normal(2, 3)],
         shapes=[None]),
    Case("unknown_rank_mean", tf.reduce_mean, [normal(2, 3)], shapes=[None]),
    Case("unknown_rank_add", tf.add, [normal(2, 3), normal(3)], shapes=[None, None]),
    # a small network, end to end
    Case("mlp", lambda x, w1, w2: tf.reduce_mean(tf.square(
        tf.matmul(tf.tanh(tf.matmul(x, w1) + 0.1), w2) - 1.0)),
        [normal(4, 3), normal(3, 5), normal(5, 2)], shapes=[[None, 3], [3, 5], [5, 2]]),
]


def assert_matches_finite_differences(case: Case) -> None:
    graph = tf.Graph()
    with graph.as_default():
        shapes = case.shapes or [a.shape for a in case.inputs]
        xs = [tf.placeholder(tf.float64, s) for s in shapes]
        y = case.fn(*xs)
        weights = tf.placeholder(tf.float64, y.shape)  # random grad_ys: a weighted sum of y
        grads = gradients(y, xs, grad_ys=weights)
        # a gather's gradient is an IndexedSlices: compare it densified
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
    assert all(g is not None for g in grads), grads
    feed = dict(zip(xs, case.inputs))
    with tf.Session(graph=graph) as sess:
        w = rng.normal(size=np.shape(sess.run(y, feed)))
        symbolic = sess.run(grads, {**feed, weights: w})

        def objective(values: list[np.ndarray]) -> float:
            return float(np.sum(sess.run(y, dict(zip(xs, values))) * w))

        for i, x in enumerate(case.inputs):
            assert symbolic[i].shape == x.shape, (i, symbolic[i].shape, x.shape)
            numeric = np.zeros_like(x)
            eps = case.eps
            for j in np.ndindex(x.shape):
                values = list(case.inputs)
                up, down = x.copy(), x.copy()
                up[j] += eps
                down[j] -= eps
                values[i] = up
                f_up = objective(values)
                values[i] = down
                numeric[j] = (f_up - objective(values)) / (2 * eps)
            np.testing.assert_allclose(symbolic[i], numeric, rtol=case.rtol, atol=case.rtol,
                                       err_msg=f"{case.id}: input {i}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_matches_finite_differences(case: Case) -> None:
    assert_matches_finite_differences(case)


# ---- the walk ---------------------------------------------------------------------------
@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def run(graph, fetches, feed=None):
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_several_paths_are_summed_with_add_n(graph):
    x = tf.constant(3.0, tf.float64)
    y = x * x + x * 2.0 + tf.exp(x)  # four uses of x
    (g,) = gradients(y, [x])
    assert g.op.type == "AddN" and len(g.op.inputs) == 4
    np.testing.assert_allclose(run(graph, g), 2 * 3.0 + 2.0 + np.exp(3.0))


def test_unreachable_xs_get_none(graph):
    x = tf.placeholder(tf.float32, [2])
    z = tf.placeholder(tf.float32, [2])
    y = tf.reduce_sum(x * 2.0)
    through_int = tf.cast(tf.argmax(z), tf.float32) * 1.0  # ints carry no gradient
    assert gradients(y, [z]) == [None]
    assert gradients(through_int, [z]) == [None]
    gx, gz = gradients([y, through_int], [x, z])
    assert gx is not None and gz is None


def test_unconnected_zero(graph):
    x = tf.placeholder(tf.float32, [2])
    z = tf.constant([1.0, 2.0])
    (g,) = gradients(tf.reduce_sum(x), [z], unconnected_gradients="zero")
    np.testing.assert_array_equal(run(graph, g, {x: [1, 2]}), [0, 0])


def test_grad_ys_weight_each_y(graph):
    x = tf.constant([1.0, 2.0, 3.0])
    y1, y2 = x * 2.0, tf.square(x)
    (g,) = gradients([y1, y2], [x], grad_ys=[tf.constant([1.0, 0.0, 1.0]), None])
    np.testing.assert_allclose(run(graph, g), [2 + 2, 0 + 4, 2 + 6])


def test_a_y_that_feeds_another_y_gets_both_gradients(graph):
    x = tf.constant([1.0, 2.0])
    square = tf.square(x)
    doubled = square * 2.0
    (g,) = gradients([doubled, square], [x])  # d(2x^2 + x^2)/dx
    np.testing.assert_allclose(run(graph, g), [6.0, 12.0])


def test_ys_of_a_graph_that_is_not_the_default():
    other = tf.Graph()
    with other.as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.reduce_sum(x * 3.0)
    before = len(tf.get_default_graph().get_operations())
    (g,) = gradients(y, [x])
    assert g.graph is other
    assert len(tf.get_default_graph().get_operations()) == before
    np.testing.assert_allclose(run(other, g, {x: [1.0, 2.0]}), [3.0, 3.0])


def test_gradient_of_x_wrt_itself_is_ones(graph):
    x = tf.constant([1.0, 2.0])
    (g,) = gradients(x, x)
    np.testing.assert_array_equal(run(graph, g), [1, 1])


def test_variables_as_xs_and_ys(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    loss = tf.reduce_sum(v * v) + tf.reduce_sum(v.value() * 3.0)
    gv, gread = gradients(loss, [v, v.value()])
    np.testing.assert_allclose(run(graph, [gv, gread]), [[5.0, 7.0]] * 2)
    (gy,) = gradients(v, [v])
    np.testing.assert_array_equal(run(graph, gy), [1, 1])


def test_stop_gradients(graph):
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    c = a * b
    y = c + a
    ga, gb = gradients(y, [a, b], stop_gradients=[c])
    assert run(graph, ga) == 1.0 and gb is None


def test_ops_live_under_the_gradients_name_scope(graph):
    x = tf.placeholder(tf.float32, [None, 2])
    (g,) = gradients(tf.reduce_sum(tf.square(x)), [x])
    (g2,) = gradients(tf.reduce_sum(tf.square(x)), [x], name="my_grads")
    assert g.op.name.startswith("gradients/Square_grad/")
    assert g2.op.name.startswith("my_grads/")
    assert g.shape.as_list() == [None, 2]


def test_gate_and_colocate_options_give_the_same_values(graph):
    with tf.device("/cpu:0"):
        x = tf.constant([[1.0, 2.0]])
        w = tf.constant([[3.0], [4.0]])
        y = tf.reduce_sum(tf.matmul(x, w) * x)
    plain = gradients(y, [x, w])
    gated = gradients(y, [x, w], gate_gradients=True, colocate_gradients_with_ops=True)
    gated_ops = [op for op in graph.get_operations() if op.name.startswith("gradients_1/")]
    assert any(op.type == "NoOp" for op in gated_ops)
    for a, b in zip(run(graph, plain), run(graph, gated)):
        np.testing.assert_allclose(a, b)


def test_op_without_gradient_raises_lookup_error(graph):
    x = tf.constant([1.0, 2.0])
    first = gradients(tf.reduce_prod(x), [x])[0]          # no second-order gradient for Prod
    with pytest.raises(LookupError, match=r"No gradient defined for operation .*\(op type: ProdGrad\)"):
        gradients(tf.reduce_sum(first), [x])


def test_non_differentiable_ops_stop_the_gradient(graph):
    x = tf.constant([1.0, 2.0])
    y = tf.reduce_sum(x * tf.cast(tf.shape(x), tf.float32)) + tf.reduce_sum(tf.zeros_like(x))
    (g,) = gradients(y, [x])
    np.testing.assert_allclose(run(graph, g), [2.0, 2.0])


def test_integer_y_has_no_gradient(graph):
    x = tf.constant([1.0])
    assert gradients(tf.constant([1]) + tf.cast(x, tf.int32), [x]) == [None]


def test_a_dynamic_batch_mean_and_bias_add_build_no_shape_arithmetic(graph):
    """reduce_mean's gradient is one MeanGrad (no Shape/Prod/FloorDiv chain run every step),
    and a [None, 4] + [4] add sums the bias side only: its other side was never broadcast."""
    x = tf.placeholder(tf.float32, [None, 4])
    b = tf.Variable(np.zeros(4, np.float32))
    loss = tf.reduce_mean(tf.nn.relu(x + b))
    before = {op.name for op in graph.get_operations()}
    grad_x, grad_b = gradients(loss, [x, b])
    added = [op.type for op in graph.get_operations() if op.name not in before]
    assert added.count("MeanGrad") == 1 and added.count("SumToShape") == 1
    assert not {"Prod", "FloorDiv", "Maximum", "BroadcastTo", "Cast"} & set(added), added
    value = np.array([[1.0, -2.0, 3.0, 0.5], [-1.0, 2.0, 4.0, -0.5]], np.float32)
    gx, gb = run(graph, [grad_x, grad_b], {x: value})
    np.testing.assert_allclose(gx, (value > 0) / 8.0)
    np.testing.assert_allclose(gb, (value > 0).sum(axis=0) / 8.0)
