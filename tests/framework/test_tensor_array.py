"""tf.TensorArray: values against numpy, static shapes, TF 2.x's errors, gradients (hand-computed
and finite differences) straight-line, through tf.while_loop and through tf.cond."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run


def numeric_grad(f, x, eps=1e-6):
    """Central differences of the scalar f(x) (float64 numpy) with respect to x."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def test_write_read_stack_and_static_shapes():
    ta = tf.TensorArray(tf.float32, size=3)
    assert ta.element_shape.ndims is None and ta.handle is None and ta.flow.dtype == tf.variant
    ta = ta.write(0, [1., 2.]).write(2, [5., 6.])
    assert ta.element_shape.as_list() == [2]                  # learned from the first write
    assert ta.read(1).shape.as_list() == [2] and ta.stack().shape.as_list() == [3, 2]
    stacked, unwritten, size = run([ta.stack(), ta.read(1), ta.size()])
    np.testing.assert_array_equal(stacked, [[1, 2], [0, 0], [5, 6]])   # unwritten: zeros
    np.testing.assert_array_equal(unwritten, [0, 0])
    assert size == 3 and stacked.dtype == np.float32


def test_writing_an_index_again_replaces_it_and_earlier_arrays_keep_their_value():
    first = tf.TensorArray(tf.int32, size=2, element_shape=[]).write(0, 7)
    second = first.write(0, 9)
    np.testing.assert_array_equal(run([first.stack(), second.stack()]), [[7, 0], [9, 0]])


def test_unstack_gather_scatter_split_concat_match_numpy():
    x = np.arange(12.).reshape(4, 3).astype(np.float32)
    u = tf.TensorArray(tf.float32, size=4).unstack(x)
    assert u.element_shape.as_list() == [3] and u.gather([2, 0]).shape.as_list() == [2, 3]
    sc = tf.TensorArray(tf.float32, size=3).scatter([2, 0], x[:2])
    sp = tf.TensorArray(tf.float32, size=2).split(np.arange(5.).astype(np.float32), [2, 3])
    got = run([u.read(3), u.gather([2, 0, 2]), u.stack(), sc.stack(), sp.read(1), sp.concat()])
    np.testing.assert_array_equal(got[0], x[3])
    np.testing.assert_array_equal(got[1], x[[2, 0, 2]])
    np.testing.assert_array_equal(got[2], x)
    np.testing.assert_array_equal(got[3], [x[1], np.zeros(3), x[0]])
    np.testing.assert_array_equal(got[4], [2, 3, 4])
    np.testing.assert_array_equal(got[5], np.arange(5.))


def test_dynamic_size_grows_on_write():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(3, 1.).write(1, 2.)
    assert ta.stack().shape.as_list() == [None]
    stacked, size = run([ta.stack(), ta.size()])
    np.testing.assert_array_equal(stacked, [0, 2, 0, 1])
    assert size == 4


def test_empty_array_with_full_element_shape_stacks_to_zero_rows():
    out = run(tf.TensorArray(tf.float32, size=0, element_shape=[2, 3]).stack())
    assert out.shape == (0, 2, 3)


@pytest.mark.parametrize("build,message", [
    (lambda: tf.TensorArray(tf.float32, size=3).write(0, [1., 2.]).read(5),
     "Trying to access element 5 in a list with 3 elements"),
    (lambda: tf.TensorArray(tf.float32, size=3).write(5, [1., 2.]).stack(),
     "Trying to modify element 5 in a list with 3 elements"),
    (lambda: tf.TensorArray(tf.float32, size=3).write(-1, 1.).stack(),
     "Trying to modify element -1 in a list with 3 elements"),
    (lambda: tf.TensorArray(tf.float32, size=2).unstack([1., 2., 3.]).stack(),
     "Operation expected a list with 2 elements but got a list with 3 elements"),
    (lambda: tf.TensorArray(tf.float32, size=0).stack(),
     "Tried to stack elements of an empty list with non-fully-defined element_shape"),
    (lambda: tf.TensorArray(tf.float32, size=2).read(0),
     "Trying to read an uninitialized tensor but element_shape is not fully defined"),
    (lambda: tf.TensorArray(tf.float32, size=2).split([1., 2., 3.], [1, 1]).stack(),
     "Unused values in tensor. Length of tensor: 3 Values used: 2"),
])
def test_run_time_errors_are_typed_and_worded_as_tf(build, message):
    with pytest.raises(InvalidArgumentError, match=message):
        run(build())


def test_element_shape_is_checked_at_run_time_when_unknown_statically():
    p = tf.placeholder(tf.float32, [None])
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[None]).write(0, p)
    fixed = tf.TensorArray(tf.float32, size=2, element_shape=[2]).write(0, tf.placeholder_with_default(p, None))
    np.testing.assert_array_equal(run(ta.read(0), {p: [1., 2., 3.]}), [1, 2, 3])
    with pytest.raises(InvalidArgumentError, match=r"element of shape \[3\].*element shape is \[2\]"):
        run(fixed.read(0), {p: [1., 2., 3.]})
    q = tf.placeholder(tf.float32, [None])
    mixed = tf.TensorArray(tf.float32, size=2).write(0, p).write(1, q).stack()
    with pytest.raises(InvalidArgumentError, match="Incompatible shapes during merge: \\[2\\] vs. \\[3\\]"):
        run(mixed, {p: [1., 2.], q: [1., 2., 3.]})


def test_build_time_errors():
    with pytest.raises(ValueError, match="Argument `size` must be provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected \(2,\)"):
        tf.TensorArray(tf.float32, size=2).write(0, [1., 2.]).write(1, [1., 2., 3.])
    with pytest.raises(ValueError, match=r"saw \(2,\) but expected \(3,\)"):
        tf.TensorArray(tf.float32, size=2, element_shape=[3]).write(0, [1., 2.])
    with pytest.raises(InvalidArgumentError, match="TensorArray dtype is float32 but Op is trying "
                                                   "to write dtype int32"):
        tf.TensorArray(tf.float32, size=2).write(0, tf.constant([1, 2]))
    with pytest.raises(TypeError, match="flow must be a TensorArray's flow"):
        tf.TensorArray(tf.float32, flow=tf.constant(0.))


def test_flow_rebuild_identity_and_close():
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[]).write(1, 4.)
    again = tf.TensorArray(tf.float32, flow=ta.flow)
    np.testing.assert_array_equal(run([again.stack(), ta.identity().stack()]), [[0, 4], [0, 4]])
    assert ta.close().type == "NoOp"


def test_straight_line_gradients_sum_repeated_reads_and_drop_overwritten_writes():
    v = tf.placeholder(tf.float64, [6])
    x = np.arange(6.) + 1.
    sp = tf.TensorArray(tf.float64, size=3).split(v, [1, 2, 3])
    sc = tf.TensorArray(tf.float64, size=4).scatter([3, 1], tf.reshape(v[:4], [2, 2]))
    ww = sc.write(0, v[4:]).write(0, v[:2] * 3.)    # the first write to 0 is overwritten
    loss = (tf.reduce_sum(sp.concat() ** 2) + tf.reduce_sum(sp.read(2) * 3.)
            + tf.reduce_sum(ww.gather([0, 1, 1]) ** 2) + tf.reduce_sum(ww.stack()))

    def f(a):
        rows = [a[:2] * 3., a[2:4], np.zeros(2), a[:2]]
        return (np.sum(a ** 2) + np.sum(a[3:] * 3.) + np.sum(rows[0] ** 2) + 2 * np.sum(rows[1] ** 2)
                + np.sum(rows))

    value, grad = run([loss, tf.gradients(loss, v)[0]], {v: x})
    np.testing.assert_allclose(value, f(x))
    np.testing.assert_allclose(grad, numeric_grad(f, x), rtol=1e-6)
    assert grad[4] == 2 * x[4] + 3.   # concat and read(2); not the overwritten write to 0


def _rnn_numpy(xs, w, h0):
    h, outs = h0, []
    for x in xs:
        h = np.tanh(x @ w + h)
        outs.append(h)
    return np.stack(outs), h


def test_classic_unstack_read_write_stack_loop_values_and_gradients():
    rng = np.random.default_rng(0)
    T, xs0, w0 = 5, rng.normal(size=(5, 2, 3)), rng.normal(size=(3, 3)) * 0.5
    xs, w = tf.placeholder(tf.float64, [T, 2, 3]), tf.placeholder(tf.float64, [3, 3])
    inputs = tf.TensorArray(tf.float64, size=T).unstack(xs)      # captured by the body
    outputs = tf.TensorArray(tf.float64, size=T)

    def body(t, h, out):
        h = tf.tanh(tf.matmul(inputs.read(t), w) + h)
        return t + 1, h, out.write(t, h)

    _, final, outputs = tf.while_loop(lambda t, h, o: t < T, body,
                                      [0, tf.zeros([2, 3], tf.float64), outputs])
    stacked = outputs.stack()
    assert stacked.shape.as_list() == [T, 2, 3] and outputs.element_shape.as_list() == [2, 3]
    loss = tf.reduce_sum(stacked ** 2) + tf.reduce_sum(final)
    feed = {xs: xs0, w: w0}
    got, gx, gw = run([stacked, *tf.gradients(loss, [xs, w])], feed)

    def f_of(x_, w_):
        outs, last = _rnn_numpy(x_, w_, np.zeros((2, 3)))
        return np.sum(outs ** 2) + np.sum(last)

    np.testing.assert_allclose(got, _rnn_numpy(xs0, w0, np.zeros((2, 3)))[0], rtol=1e-12)
    np.testing.assert_allclose(gx, numeric_grad(lambda a: f_of(a, w0), xs0), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(gw, numeric_grad(lambda a: f_of(xs0, a), w0), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(run(stacked, feed), got)       # a second run: same plan, same values


def test_dynamic_size_array_in_a_loop_with_run_time_length_and_nested_loop_vars():
    xs = tf.placeholder(tf.float64, [None, 2])
    n = tf.shape(xs)[0]
    inputs = tf.TensorArray(tf.float64, size=n).unstack(xs)
    state = {"acc": tf.TensorArray(tf.float64, size=0, dynamic_size=True),
             "pair": (tf.constant(0.0, tf.float64), tf.TensorArray(tf.float64, size=n))}

    def body(t, s):
        x = inputs.read(t)
        scaled = x * tf.cast(t + 1, tf.float64)
        return t + 1, {"acc": s["acc"].write(t, scaled),
                       "pair": (s["pair"][0] + tf.reduce_sum(x), s["pair"][1].write(n - 1 - t, x))}

    _, s = tf.while_loop(lambda t, s: t < n, body, [0, state])
    acc, (total, rev) = s["acc"], s["pair"]
    assert acc.stack().shape.as_list() == [None, 2]
    cat = acc.concat()
    loss = tf.reduce_sum(cat ** 2) + tf.reduce_sum(rev.stack() * rev.stack()[::-1]) + total
    x0 = np.arange(8.).reshape(4, 2) / 4.
    got = run([acc.stack(), cat, rev.stack(), total, acc.size(), tf.gradients(loss, xs)[0]], {xs: x0})
    weights = np.arange(1., 5.)[:, None]
    np.testing.assert_allclose(got[0], x0 * weights)
    np.testing.assert_allclose(got[1], (x0 * weights).reshape(-1))
    np.testing.assert_allclose(got[2], x0[::-1])
    assert got[3] == x0.sum() and got[4] == 4

    def f(a):
        return np.sum((a * weights) ** 2) + np.sum(a[::-1] * a) + a.sum()

    np.testing.assert_allclose(got[5], numeric_grad(f, x0), rtol=1e-6)
    three = run(acc.stack(), {xs: x0[:3]})     # another length, the same graph
    np.testing.assert_allclose(three, x0[:3] * weights[:3])


def test_tensor_array_as_a_cond_branch_value():
    p, v = tf.placeholder(tf.bool, []), tf.placeholder(tf.float64, [4])
    ta = tf.TensorArray(tf.float64, size=2)
    out = tf.cond(p, lambda: ta.write(0, v[:2]), lambda: ta.write(1, v[2:] * 2.)).stack()
    grad = tf.gradients(tf.reduce_sum(out ** 2), v)[0]
    x = np.array([1., 2., 3., 4.])
    yes, g_yes = run([out, grad], {p: True, v: x})
    no, g_no = run([out, grad], {p: False, v: x})
    np.testing.assert_array_equal(yes, [[1, 2], [0, 0]])
    np.testing.assert_array_equal(no, [[0, 0], [6, 8]])
    np.testing.assert_array_equal(g_yes, [2, 4, 0, 0])
    np.testing.assert_array_equal(g_no, [0, 0, 24, 32])


def test_loop_reads_back_what_it_wrote_and_passes_an_array_through_unchanged():
    xs = tf.placeholder(tf.float64, [4, 2])
    inputs = tf.TensorArray(tf.float64, size=4).unstack(xs)
    out = tf.TensorArray(tf.float64, size=4, element_shape=[2])

    def body(t, i, o, acc):
        x, prev = i.read(t), o.read(tf.maximum(t - 1, 0))
        return t + 1, i, o.write(t, x * 2. + prev), acc + tf.reduce_sum(x * prev)

    _, same, out, acc = tf.while_loop(lambda t, *_: t < 4, body,
                                      [0, inputs, out, tf.constant(0., tf.float64)])
    loss = tf.reduce_sum(out.stack() ** 2) + acc + tf.reduce_sum(same.stack())

    def forward(a):
        rows, total = [], 0.
        for t in range(4):
            prev = rows[t - 1] if t else np.zeros(2)
            total += np.sum(a[t] * prev)
            rows.append(a[t] * 2. + prev)
        return np.stack(rows), total

    def f(a):
        rows, total = forward(a)
        return np.sum(rows ** 2) + total + a.sum()

    x0 = np.arange(8.).reshape(4, 2)
    stacked, grad = run([out.stack(), tf.gradients(loss, xs)[0]], {xs: x0})
    np.testing.assert_allclose(stacked, forward(x0)[0])
    np.testing.assert_allclose(grad, numeric_grad(f, x0), rtol=1e-6)


def test_a_tensor_array_rnn_trains_a_ps_variable_from_a_worker_and_stays_on_one_task():
    from zmtf.testing import running_servers
    with running_servers({"ps": 1, "worker": 1}) as servers:
        with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
            w = tf.get_variable("w", [3, 3], initializer=tf.constant_initializer(0.1))
            x = tf.placeholder(tf.float32, [5, 2, 3])
            inputs = tf.TensorArray(tf.float32, size=5).unstack(x)

            def body(t, h, out):
                h = tf.tanh(tf.matmul(inputs.read(t), w) + h)
                return t + 1, h, out.write(t, h)

            _, _, out = tf.while_loop(lambda t, *_: t < 5, body,
                                      (0, tf.zeros([2, 3]), tf.TensorArray(tf.float32, size=5)))
            loss = tf.reduce_sum(out.stack())
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.device("/job:ps/task:0"):
            misplaced = out.read(0)     # the list would have to cross tasks
        xv = np.random.default_rng(0).normal(size=(5, 2, 3)).astype(np.float32)
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(tf.global_variables_initializer())
            before, _ = sess.run([loss, train], {x: xv})
            assert sess.run(loss, {x: xv}) < before
            assert w.device.startswith("/job:ps")
            with pytest.raises(InvalidArgumentError, match="Cannot colocate nodes"):
                sess.run(misplaced, {x: xv})
