"""runtime.gradient_sums: an AddN of MatMuls (an RNN weight's gradient) runs as one product
of the stacked operands, an AddN of SumToShapes (its bias's) as one reduction, with the
AddN's name, the same values within float rounding, and the graph's own errors."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.device_spec import DeviceSpec
from zmtf.kernels import lookup, supports
from zmtf.kernels.cpu import matmul
from zmtf.placement.plan import StepPlanner
from zmtf.runtime import executor

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
TASK = DeviceSpec(job="localhost", replica=0, task=0)
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
_OP = "_StackedMatMul"
_SUMS = "_SumToShapeOfSum"


def _unfused() -> tf.ConfigProto:
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(global_jit_level=tf.OptimizerOptions.OFF)))


def _labels(meta) -> dict[str, str]:
    return {n.node_name: n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats}


def _rnn(time_steps: int):
    """h = tanh(h @ w + b + x_k) over ``time_steps`` steps and SGD's training op: w's gradient
    is the AddN of the products h_k^T @ dpre_k, b's the AddN of SumToShape(dpre_k)
    (tf.gradients' tuples give them control consumers too)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(4)
        xs = [tf.placeholder(tf.float32, [5, 7]) for _ in range(time_steps)]
        w = tf.Variable(tf.truncated_normal([7, 7], stddev=0.4, seed=5))
        b = tf.Variable(tf.fill([7], 0.1))
        h = tf.zeros([5, 7])
        for x in xs:
            h = tf.tanh(tf.matmul(h, w) + b + x)
        loss = tf.reduce_mean(tf.square(h))
        train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(6)
    feed = {x: rng.standard_normal((5, 7)).astype(np.float32) for x in xs}
    return graph, init, train, loss, w, b, feed


def _trained(config, steps=3, time_steps=6):
    """_rnn trained ``steps`` times: the loss, w and b, and the last step's trace labels."""
    graph, init, train, loss, w, b, feed = _rnn(time_steps)
    meta = tf.RunMetadata()
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train, feed, options=FULL, run_metadata=meta)
        return sess.run([loss, w, b], feed), _labels(meta)


def test_a_weights_and_a_biass_gradients_run_as_one_node_each_and_train_alike():
    values, labels = _trained(None)
    plain_values, plain_labels = _trained(_unfused())
    for op, term in ((_OP, "MatMul"), (_SUMS, "SumToShape")):
        summed = {name: label for name, label in labels.items() if op in label}
        assert len(summed) == 1, labels
        ((name, label),) = summed.items()
        assert name.startswith("gradients/AddN") and f"AddN of 6 {term}" in label, label
        assert not [label for label in plain_labels.values() if op in label]
    for got, want in zip(values, plain_values):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_many_steps_products_sum_in_stacks_that_the_pass_does_not_wait_for():
    """12 products: two stacks of 6 (gradient_sums.STACK_TERMS), the later steps' first (the
    backward pass reaches them first), then the AddN of the two. Only that AddN waits for
    a stack, so each runs beside the rest of the pass."""
    values, labels = _trained(None, time_steps=12)
    plain_values, _ = _trained(_unfused(), time_steps=12)
    for got, want in zip(values, plain_values):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    stacks = {name: label for name, label in labels.items() if _OP in label}
    assert sorted(name.rsplit("/", 1)[1] for name in stacks) == ["stack_0", "stack_1"], stacks
    first = next(label for name, label in stacks.items() if name.endswith("stack_0"))
    assert "AddN of 6 MatMul" in first
    assert {f"MatMul_{k}_grad" in first for k in range(6, 12)} == {True}
    assert not any(f"MatMul_{k}_grad" in first for k in range(1, 6))

    graph, init, train, loss, w, b, feed = _rnn(12)
    planner = StepPlanner(supports, TASK, allow_soft_placement=False)
    plan = executor.bind(planner.plan([], list(feed), [train], [CPU]), lookup).plan
    stack_nodes = [n for n in plan.nodes if n.op_type == _OP]
    assert len(stack_nodes) == 2
    for node in stack_nodes:
        (reader,) = node.consumers
        assert plan.nodes[reader].op_type == "AddN"


@pytest.mark.parametrize("transpose_a,transpose_b,limit", [(True, False, None), (False, False, None),
                                                          (False, True, None), (True, False, 0)])
def test_products_of_different_inner_sizes_sum_as_numpy(transpose_a, transpose_b, limit, monkeypatch):
    """Stacked, or (operands past STACK_MAX_BYTES) as the products and their sum."""
    if limit is not None:
        monkeypatch.setattr(matmul, "STACK_MAX_BYTES", limit)
    rng = np.random.default_rng(1)
    inner = (3, 8, 1, 5)
    a = [rng.standard_normal((k, 4) if transpose_a else (4, k)) for k in inner]
    b = [rng.standard_normal((6, k) if transpose_b else (k, 6)) for k in inner]
    graph = tf.Graph()
    with graph.as_default():
        total = tf.add_n([tf.matmul(tf.constant(x), tf.placeholder_with_default(y, y.shape),
                                    transpose_a=transpose_a, transpose_b=transpose_b)
                          for x, y in zip(a, b)])
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        got = sess.run(total, options=FULL, run_metadata=meta)
    assert any(_OP in label for label in _labels(meta).values())
    want = sum((x.T if transpose_a else x) @ (y.T if transpose_b else y) for x, y in zip(a, b))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_product_read_elsewhere_or_fetched_keeps_the_graph_as_it_is():
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float64, [2, 3]) for _ in range(4)]
        products = [tf.matmul(x, x, transpose_a=True) for x in xs]
        total = tf.add_n(products)
        doubled = products[0] * 2.0
    feed = {x: np.full((2, 3), k + 1.0) for k, x in enumerate(xs)}
    for fetches in ([total, products[2]], [total, doubled]):
        meta = tf.RunMetadata()
        with tf.Session(graph=graph) as sess:
            got = sess.run(fetches, feed, options=FULL, run_metadata=meta)
        assert not [label for label in _labels(meta).values() if _OP in label]
        np.testing.assert_array_equal(got[0], sum(2 * (k + 1.0) ** 2 for k in range(4)) * np.ones((3, 3)))


def test_operands_that_do_not_fit_fail_as_the_matmul_would():
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float32, [None, None]) for _ in range(4)]
        total = tf.add_n([tf.matmul(x, x, transpose_a=True) for x in xs[:3]]
                         + [tf.matmul(xs[3], tf.ones([5, 3]), transpose_a=True)])
    feed = {x: np.ones((2, 3), np.float32) for x in xs}
    with tf.Session(graph=graph) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
            sess.run(total, feed)



@pytest.mark.parametrize("batches", [(4, 4, 4, 4), (2, 5, 1, 3)])
def test_a_bias_read_by_several_terms_gets_their_summed_gradient(batches):
    """x_k + b for four fed x_k: b's gradient is an AddN of four SumToShapes, one reduction
    of their sum when the x_k have one shape, each SumToShape when they do not."""
    rng = np.random.default_rng(2)
    data = [rng.standard_normal((n, 3)) for n in batches]
    scale = [rng.standard_normal(3) for _ in batches]
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float64, [None, 3]) for _ in batches]
        b = tf.Variable(np.zeros(3))
        loss = tf.add_n([tf.reduce_sum((x + b) * c) for x, c in zip(xs, scale)])
        (grad,) = tf.gradients(loss, [b])
        init = tf.global_variables_initializer()
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        got = sess.run(grad, dict(zip(xs, data)), options=FULL, run_metadata=meta)
    assert any(_SUMS in label for label in _labels(meta).values()), _labels(meta)
    np.testing.assert_allclose(got, sum(n * c for n, c in zip(batches, scale)), rtol=1e-12)
