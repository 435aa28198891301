"""tf.nn.rnn_cell and tf.nn.static_rnn: TF1's cell formulas (against numpy), variable names
and shapes, one set of variables over the time steps, state structures, gradients by finite
differences, and an LSTM that learns a small sequence task."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import zmtf as tf

rnn_cell = tf.nn.rnn_cell
rng = np.random.default_rng(11)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# ---- numpy versions of TF1's formulas (w: variable name below the cell's scope -> value) ----
def np_basic_rnn(w: dict, x: np.ndarray, h: np.ndarray) -> tuple[Any, Any]:
    out = np.tanh(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"])
    return out, out


def np_lstm(w: dict, x: np.ndarray, state: Any, forget_bias: float = 1.0, peep: bool = False,
            clip: float | None = None) -> tuple[Any, Any]:
    c, h = state
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"], 4, axis=1)
    if peep:
        i, f = i + w["w_i_diag"] * c, f + w["w_f_diag"] * c
    new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    if clip is not None:
        new_c = np.clip(new_c, -clip, clip)
    if peep:
        o = o + w["w_o_diag"] * new_c
    new_h = np.tanh(new_c) * sigmoid(o)
    if "projection/kernel" in w:
        new_h = new_h @ w["projection/kernel"]
    return new_h, (new_c, new_h)


def np_gru(w: dict, x: np.ndarray, h: np.ndarray) -> tuple[Any, Any]:
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ w["gates/kernel"] + w["gates/bias"]), 2, 1)
    cand = np.tanh(np.concatenate([x, r * h], 1) @ w["candidate/kernel"] + w["candidate/bias"])
    new_h = u * h + (1 - u) * cand
    return new_h, new_h


BATCH, DEPTH, UNITS = 3, 4, 5
LSTM_STATE = (rng.normal(size=(BATCH, UNITS)), rng.normal(size=(BATCH, UNITS)))
H_STATE = rng.normal(size=(BATCH, UNITS))

CELLS: dict[str, tuple[Callable[[], Any], Any, Callable[..., Any]]] = {
    "basic_rnn": (lambda: rnn_cell.BasicRNNCell(UNITS), H_STATE, np_basic_rnn),
    "basic_lstm": (lambda: rnn_cell.BasicLSTMCell(UNITS, forget_bias=0.5), LSTM_STATE,
                   lambda w, x, s: np_lstm(w, x, s, forget_bias=0.5)),
    "lstm": (lambda: rnn_cell.LSTMCell(UNITS), LSTM_STATE, np_lstm),
    "lstm_peepholes_clip": (lambda: rnn_cell.LSTMCell(UNITS, use_peepholes=True, cell_clip=0.3),
                            LSTM_STATE, lambda w, x, s: np_lstm(w, x, s, peep=True, clip=0.3)),
    "lstm_projection": (lambda: rnn_cell.LSTMCell(UNITS, num_proj=2),
                        (LSTM_STATE[0], LSTM_STATE[1][:, :2]), np_lstm),
    "gru": (lambda: rnn_cell.GRUCell(UNITS), H_STATE, np_gru),
}


def _as_state(value: Any) -> Any:
    return rnn_cell.LSTMStateTuple(*value) if isinstance(value, tuple) else value


def _random_weights(sess: tf.Session, cell: Any) -> dict[str, np.ndarray]:
    """Load random values into the cell's variables; return them by name below its scope."""
    weights = {}
    for v in tf.global_variables():
        value = rng.normal(size=v.shape.as_list())
        v.load(value, sess)
        weights[v.op.name.split("/", 2)[2]] = value
    return weights


@pytest.mark.parametrize("name", list(CELLS))
def test_two_steps_match_tfs_formulas(name):
    make, state0, reference = CELLS[name]
    xs = [rng.normal(size=(BATCH, DEPTH)) for _ in range(2)]
    cell = make()
    outputs, state = tf.nn.static_rnn(cell, [tf.constant(x) for x in xs],
                                      initial_state=_as_state(state0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w = _random_weights(sess, cell)
        got_outputs, got_state = sess.run([outputs, state])
    want_state, want_outputs = state0, []
    for x in xs:
        out, want_state = reference(w, x, want_state)
        want_outputs.append(out)
    np.testing.assert_allclose(got_outputs, want_outputs, rtol=1e-12, atol=1e-12)
    for got, want in zip(tf.nn.rnn_cell.flatten(got_state), tf.nn.rnn_cell.flatten(want_state)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make, shapes", [
    (lambda: rnn_cell.BasicRNNCell(5), {"rnn/basic_rnn_cell/kernel": [9, 5],
                                        "rnn/basic_rnn_cell/bias": [5]}),
    (lambda: rnn_cell.BasicLSTMCell(5), {"rnn/basic_lstm_cell/kernel": [9, 20],
                                         "rnn/basic_lstm_cell/bias": [20]}),
    (lambda: rnn_cell.LSTMCell(5, use_peepholes=True, num_proj=3), {
        "rnn/lstm_cell/kernel": [7, 20], "rnn/lstm_cell/bias": [20],
        "rnn/lstm_cell/w_f_diag": [5], "rnn/lstm_cell/w_i_diag": [5], "rnn/lstm_cell/w_o_diag": [5],
        "rnn/lstm_cell/projection/kernel": [5, 3]}),
    (lambda: rnn_cell.GRUCell(5), {
        "rnn/gru_cell/gates/kernel": [9, 10], "rnn/gru_cell/gates/bias": [10],
        "rnn/gru_cell/candidate/kernel": [9, 5], "rnn/gru_cell/candidate/bias": [5]}),
    (lambda: rnn_cell.MultiRNNCell([rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(5)),
                                    rnn_cell.GRUCell(2)]), {
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel": [9, 20],
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias": [20],
        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel": [7, 4],
        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias": [4],
        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel": [7, 2],
        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias": [2]}),
])
def test_one_set_of_tf1_named_variables_over_the_time_steps(make, shapes):
    inputs = [tf.placeholder(tf.float32, [None, 4]) for _ in range(3)]
    tf.nn.static_rnn(make(), inputs, dtype=tf.float32)
    got = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    assert got == shapes
    assert len(tf.trainable_variables()) == len(shapes)


def test_gru_bias_initializers_and_names_of_two_cells():
    x = [tf.zeros([2, 3])]
    tf.nn.static_rnn(rnn_cell.GRUCell(2), x, dtype=tf.float32)
    tf.nn.static_rnn(rnn_cell.GRUCell(2), x, dtype=tf.float32, scope="decoder")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    np.testing.assert_array_equal(values["rnn/gru_cell/gates/bias"], np.ones(4))
    np.testing.assert_array_equal(values["decoder/gru_cell/candidate/bias"], np.zeros(2))


def test_a_cell_called_by_hand_creates_variables_once():
    cell = rnn_cell.BasicLSTMCell(3)
    state = cell.zero_state(2, tf.float32)
    x = tf.ones([2, 4])
    with tf.variable_scope("encoder"):
        out, state = cell(x, state)
        out, state = cell(x * 2.0, state)
    assert [v.op.name for v in cell.variables] == ["encoder/basic_lstm_cell/kernel",
                                                   "encoder/basic_lstm_cell/bias"]
    assert out.op.name.startswith("encoder/basic_lstm_cell/")


def test_zero_state_and_state_structure():
    multi = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(3), rnn_cell.GRUCell(2),
                                   rnn_cell.LSTMCell(4, num_proj=1)])
    assert multi.state_size == (rnn_cell.LSTMStateTuple(3, 3), 2, rnn_cell.LSTMStateTuple(4, 1))
    assert multi.output_size == 1
    batch = tf.placeholder(tf.int32, [])
    zeros = multi.zero_state(batch, tf.float32)
    assert isinstance(zeros, tuple) and isinstance(zeros[0], rnn_cell.LSTMStateTuple)
    assert zeros[2].h.shape.as_list() == [None, 1]
    x = [tf.placeholder(tf.float32, [None, 2]) for _ in range(2)]
    outputs, final = tf.nn.static_rnn(multi, x, dtype=tf.float32)
    assert type(final[0]) is rnn_cell.LSTMStateTuple and final[1].shape.as_list() == [None, 2]
    with tf.Session() as sess:
        got = sess.run(zeros, {batch: 5})
        sess.run(tf.global_variables_initializer())
        out = sess.run(outputs[-1], {x[0]: np.ones((6, 2)), x[1]: np.ones((6, 2))})
    assert [a.shape for a in rnn_cell.flatten(got)] == [(5, 3), (5, 3), (5, 2), (5, 4), (5, 1)]
    assert not any(a.any() for a in rnn_cell.flatten(got)) and out.shape == (6, 1)


def test_state_is_tuple_false_concatenates_c_and_h():
    cell = rnn_cell.BasicLSTMCell(3, state_is_tuple=False)
    multi = rnn_cell.MultiRNNCell([cell, rnn_cell.GRUCell(2)], state_is_tuple=False)
    assert cell.state_size == 6 and multi.state_size == 8
    _, state = tf.nn.static_rnn(multi, [tf.ones([2, 4])] * 2, dtype=tf.float32)
    assert state.shape.as_list() == [2, 8]


def test_sequence_length_zeroes_outputs_and_carries_the_state():
    cell = rnn_cell.GRUCell(3)
    xs = [tf.constant(rng.normal(size=(2, 4))) for _ in range(3)]
    outputs, state = tf.nn.static_rnn(cell, xs, dtype=tf.float64, sequence_length=[1, 3])
    full, _ = tf.nn.static_rnn(cell, xs[:1], dtype=tf.float64, scope="rnn")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        outs, last, first_only = sess.run([outputs, state, full[0]])
    np.testing.assert_array_equal(outs[1][0], 0.0)
    np.testing.assert_array_equal(outs[2][0], 0.0)
    np.testing.assert_allclose(last[0], first_only[0], rtol=1e-12)
    np.testing.assert_allclose(last[1], outs[2][1], rtol=1e-12)


def test_bidirectional_concatenates_forward_and_reversed_backward():
    xs = [tf.constant(rng.normal(size=(2, 3))) for _ in range(3)]
    fw, bw = rnn_cell.BasicRNNCell(2), rnn_cell.BasicRNNCell(4)
    outputs, state_fw, state_bw = tf.nn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float64)
    assert sorted(v.op.name for v in tf.global_variables()) == [
        "bidirectional_rnn/bw/basic_rnn_cell/bias", "bidirectional_rnn/bw/basic_rnn_cell/kernel",
        "bidirectional_rnn/fw/basic_rnn_cell/bias", "bidirectional_rnn/fw/basic_rnn_cell/kernel"]
    assert [o.shape.as_list() for o in outputs] == [[2, 6]] * 3
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        outs, sfw, sbw = sess.run([outputs, state_fw, state_bw])
    np.testing.assert_array_equal(outs[-1][:, :2], sfw)
    np.testing.assert_array_equal(outs[0][:, 2:], sbw)    # bw's last step reads xs[0]


def test_dropout_wrapper_keeps_names_and_drops_outputs():
    cell = rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(50), output_keep_prob=0.5, seed=3)
    outputs, _ = tf.nn.static_rnn(cell, [tf.ones([4, 2])], dtype=tf.float32)
    assert [v.op.name for v in tf.global_variables()] == ["rnn/basic_lstm_cell/kernel",
                                                          "rnn/basic_lstm_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(outputs[0])
    assert 0.2 < np.mean(out == 0) < 0.8


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="dtype must be specified"):
        tf.nn.static_rnn(rnn_cell.GRUCell(2), [tf.ones([1, 2])])
    with pytest.raises(ValueError, match=r"inputs.shape\[-1\] to be known"):
        rnn_cell.GRUCell(2)(tf.placeholder(tf.float32, [1, None]), tf.zeros([1, 2]))


# ---- gradients ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: rnn_cell.BasicLSTMCell(3), lambda: rnn_cell.GRUCell(3),
                                  lambda: rnn_cell.LSTMCell(3, use_peepholes=True, num_proj=2)],
                         ids=["basic_lstm", "gru", "lstm_peep_proj"])
def test_static_rnn_gradients_match_finite_differences(make):
    xs = [tf.placeholder(tf.float64, [2, 2]) for _ in range(3)]
    outputs, state = tf.nn.static_rnn(make(), xs, dtype=tf.float64)
    weights = [rng.normal(size=o.shape.as_list()) for o in outputs]
    final = rnn_cell.flatten(state)[0]
    loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outputs, weights)]) + tf.reduce_sum(final)
    variables = tf.global_variables()
    grads = tf.gradients(loss, xs + variables)
    feed = {x: rng.normal(size=(2, 2)) for x in xs}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = {v: rng.normal(size=v.shape.as_list()) * 0.5 for v in variables}
        for v, value in values.items():
            v.load(value, sess)
        symbolic = sess.run(grads, feed)

        def at(point: np.ndarray, target: Any) -> float:
            if target in feed:
                return float(sess.run(loss, {**feed, target: point}))
            target.load(point, sess)
            return float(sess.run(loss, feed))

        eps = 1e-6
        for target, grad in zip(xs + variables, symbolic):
            base = feed[target] if target in feed else values[target]
            numeric = np.zeros_like(base)
            for j in np.ndindex(base.shape):
                up, down = base.copy(), base.copy()
                up[j] += eps
                down[j] -= eps
                numeric[j] = (at(up, target) - at(down, target)) / (2 * eps)
            if target not in feed:
                target.load(base, sess)
            np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7, err_msg=str(target))


# ---- a tiny sequence task ----------------------------------------------------------------
def test_lstm_learns_the_sign_of_a_sequence_sum():
    steps, batch = 5, 64
    tf.set_random_seed(1)
    xs = [tf.placeholder(tf.float32, [None, 1]) for _ in range(steps)]
    labels = tf.placeholder(tf.float32, [None, 1])
    outputs, _ = tf.nn.static_rnn(rnn_cell.BasicLSTMCell(8), xs, dtype=tf.float32)
    logits = tf.layers.dense(outputs[-1], 1)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    data = np.random.default_rng(5)

    def batch_feed() -> dict:
        seq = data.normal(size=(batch, steps, 1)).astype(np.float32)
        feed = {x: seq[:, t] for t, x in enumerate(xs)}
        feed[labels] = (seq.sum(axis=1) > 0).astype(np.float32)
        return feed

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, batch_feed())
        for _ in range(100):
            sess.run(train, batch_feed())
        last = np.mean([sess.run(loss, batch_feed()) for _ in range(4)])
    assert first > 0.5 and last < 0.2, (first, last)
