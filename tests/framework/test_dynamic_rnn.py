"""tf.nn.dynamic_rnn and bidirectional_dynamic_rnn: a tf.while_loop over time, checked against
static_rnn (the same cell, the same variables, unrolled in Python) and by training."""

import numpy as np
import pytest

import zmtf as tf

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 5, 4)).astype(np.float32)
LENGTHS = np.array([5, 2, 0], np.int32)


def _static(cell, x, lengths, steps=5):
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        outputs, state = tf.nn.static_rnn(cell, tf.unstack(tf.transpose(x, [1, 0, 2]), num=steps),
                                          sequence_length=lengths, dtype=tf.float32)
    return tf.stack(outputs, 1), state


def _leaves(state):
    return list(state) if isinstance(state, tuple) else [state]


@pytest.mark.parametrize("make_cell", [lambda: tf.nn.rnn_cell.BasicLSTMCell(6),
                                       lambda: tf.nn.rnn_cell.GRUCell(6)], ids=["lstm", "gru"])
def test_matches_static_rnn_values_and_gradients_with_sequence_lengths(make_cell):
    x = tf.placeholder(tf.float32, [3, None, 4])   # the time length is known at run time only
    cell = make_cell()
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=tf.float32)
    assert outputs.shape.as_list() == [3, None, 6]
    static_outputs, static_state = _static(cell, x, LENGTHS)
    variables = tf.trainable_variables()
    assert all(v.name.startswith("rnn/") for v in variables)
    grads = tf.gradients(tf.reduce_sum(outputs ** 2), variables + [x])
    static_grads = tf.gradients(tf.reduce_sum(static_outputs ** 2), variables + [x])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want = sess.run([[outputs, state, grads], [static_outputs, static_state, static_grads]],
                             {x: X})
    np.testing.assert_allclose(got[0], want[0], atol=1e-6)
    assert np.all(got[0][2] == 0) and np.all(got[0][1, 2:] == 0)   # past each length: zeros
    for a, b in zip(_leaves(got[1]), _leaves(want[1])):   # LSTM (c, h) or a GRU's h
        np.testing.assert_allclose(a, b, atol=1e-6)
    for a, b in zip(got[2], want[2]):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_time_major_and_an_initial_state():
    x = tf.placeholder(tf.float32, [5, 3, 4])
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    start = tf.fill([3, 2], 0.5)
    outputs, state = tf.nn.dynamic_rnn(cell, x, initial_state=start, time_major=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, final, kernel, bias = sess.run([outputs, state] + tf.trainable_variables(),
                                            {x: X.transpose(1, 0, 2)})
    h = np.full((3, 2), 0.5, np.float32)
    for t in range(5):
        h = np.tanh(np.concatenate([X[:, t], h], 1) @ kernel + bias)
        np.testing.assert_allclose(got[t], h, atol=1e-5)
    np.testing.assert_allclose(final, h, atol=1e-5)


def test_bidirectional_reverses_within_each_length():
    x = tf.placeholder(tf.float32, [3, 5, 4])
    fw, bw = tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3)
    (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
        fw, bw, x, sequence_length=LENGTHS, dtype=tf.float32)
    names = sorted(v.name for v in tf.trainable_variables())
    assert names[0].startswith("bidirectional_rnn/bw/") and names[-1].startswith("bidirectional_rnn/fw/")
    reversed_x = tf.reverse_sequence(x, LENGTHS, seq_axis=1, batch_axis=0)
    with tf.variable_scope("bidirectional_rnn/bw", reuse=True):
        manual, manual_state = tf.nn.dynamic_rnn(bw, reversed_x, sequence_length=LENGTHS,
                                                 dtype=tf.float32, scope="bidirectional_rnn/bw")
    back = tf.reverse_sequence(manual, LENGTHS, seq_axis=1, batch_axis=0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_bw, want_bw, got_state, want_state = sess.run([out_bw, back, state_bw, manual_state], {x: X})
    np.testing.assert_allclose(got_bw, want_bw, atol=1e-6)
    np.testing.assert_allclose(got_state, want_state, atol=1e-6)
    assert np.all(got_bw[1, 2:] == 0)


def test_an_lstm_learns_to_count_ones_in_variable_length_sequences():
    rng = np.random.default_rng(1)
    x = tf.placeholder(tf.float32, [None, None, 1])
    lengths = tf.placeholder(tf.int32, [None])
    target = tf.placeholder(tf.float32, [None])
    _, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(8), x, sequence_length=lengths,
                                 dtype=tf.float32)
    prediction = tf.squeeze(tf.layers.dense(state.h, 1), 1)
    loss = tf.reduce_mean(tf.square(prediction - target))
    train = tf.train.AdamOptimizer(0.02).minimize(loss)

    def batch():
        n = rng.integers(1, 7, 32)
        bits = (rng.random((32, 6)) < 0.5) * (np.arange(6) < n[:, None])
        return {x: bits[..., None].astype(np.float32), lengths: n, target: bits.sum(1).astype(np.float32)}

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, batch())
        for _ in range(250):
            sess.run(train, batch())
        last = np.mean([sess.run(loss, batch()) for _ in range(5)])
    assert last < first * 0.1 and last < 0.15


def test_inputs_must_have_time_and_a_dtype_or_state():
    with pytest.raises(ValueError, match="batch, time, depth"):
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), tf.zeros([3, 4]), dtype=tf.float32)
    with pytest.raises(ValueError, match="dtype must be specified"):
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), tf.zeros([3, 5, 4]))


def test_static_bidirectional_with_lengths_equals_the_dynamic_one():
    x = tf.placeholder(tf.float32, [3, 5, 4])
    fw, bw = tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3)
    steps = tf.unstack(tf.transpose(x, [1, 0, 2]), num=5)
    outputs, _, state_bw = tf.nn.static_bidirectional_rnn(fw, bw, steps, sequence_length=LENGTHS,
                                                           dtype=tf.float32)
    with tf.variable_scope("bidirectional_rnn", reuse=True):
        (out_fw, out_bw), (_, dyn_state_bw) = tf.nn.bidirectional_dynamic_rnn(
            fw, bw, x, sequence_length=LENGTHS, dtype=tf.float32, scope="bidirectional_rnn")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want, got_state, want_state = sess.run(
            [tf.stack(outputs, 1), tf.concat([out_fw, out_bw], 2), state_bw, dyn_state_bw], {x: X})
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(got_state, want_state, atol=1e-6)
