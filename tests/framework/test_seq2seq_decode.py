"""tf.contrib.seq2seq BasicDecoder + dynamic_decode with the Training, GreedyEmbedding and
SampleEmbedding helpers: outputs, sample ids, lengths and final state against a numpy
BasicRNNCell decoder, impute_finished, maximum_iterations, and gradients by finite
differences."""

import numpy as np
import pytest

import zmtf as tf

s2s = tf.contrib.seq2seq
RNG = np.random.default_rng(0)
B, T, D, H, V = 3, 4, 3, 5, 6
X = RNG.standard_normal((B, T, D))
LENGTHS = np.array([4, 2, 1], np.int32)
EMBEDDING = RNG.standard_normal((V, D))


def _numpy_rnn(kernel, bias, proj_kernel, proj_bias, inputs_at, steps, state):
    """Run tanh([x, h] @ kernel + bias) then the projection; ``inputs_at(t, logits)``."""
    logits, states = [], []
    prev = None
    for t in range(steps):
        x = inputs_at(t, prev)
        state = np.tanh(np.concatenate([x, state], 1) @ kernel + bias)
        prev = state @ proj_kernel + proj_bias
        logits.append(prev)
        states.append(state)
    return np.stack(logits, 1), states


def _decoder(helper, dtype=tf.float64):
    cell = tf.nn.rnn_cell.BasicRNNCell(H)
    projection = tf.layers.Dense(V, name="projection")
    decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(B, dtype), output_layer=projection)
    return decoder, cell, projection


def _weights(cell, projection):
    return [v for v in cell.variables] + projection.variables


def test_training_decoder_matches_numpy_and_reports_lengths():
    decoder, cell, projection = _decoder(s2s.TrainingHelper(tf.constant(X), LENGTHS))
    outputs, state, lengths = s2s.dynamic_decode(decoder)
    assert isinstance(outputs, s2s.BasicDecoderOutput)
    assert outputs.rnn_output.shape.as_list() == [B, None, V]
    assert outputs.sample_id.dtype == tf.int32
    assert [v.op.name for v in tf.global_variables()] == [
        "decoder/basic_rnn_cell/kernel", "decoder/basic_rnn_cell/bias",
        "decoder/projection/kernel", "decoder/projection/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, final, got_lengths, weights = sess.run(
            [outputs, state, lengths, _weights(cell, projection)])
    logits, states = _numpy_rnn(*weights, lambda t, _: X[:, t], T, np.zeros((B, H)))
    np.testing.assert_allclose(got.rnn_output, logits, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(got.sample_id, logits.argmax(-1))
    np.testing.assert_array_equal(got_lengths, LENGTHS)
    np.testing.assert_allclose(final, states[-1], rtol=1e-6)   # no imputation: every step counts


def test_impute_finished_zeroes_outputs_and_keeps_state_at_each_length():
    decoder, cell, projection = _decoder(s2s.TrainingHelper(tf.constant(X), LENGTHS))
    outputs, state, _ = s2s.dynamic_decode(decoder, impute_finished=True, output_time_major=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, final, weights = sess.run([outputs, state, _weights(cell, projection)])
    logits, states = _numpy_rnn(*weights, lambda t, _: X[:, t], T, np.zeros((B, H)))
    alive = np.arange(T)[None, :] < LENGTHS[:, None]
    want = np.where(alive[..., None], logits, 0.0).transpose(1, 0, 2)
    np.testing.assert_allclose(got.rnn_output, want, rtol=1e-6, atol=1e-8)
    for b, length in enumerate(LENGTHS):
        np.testing.assert_allclose(final[b], states[length - 1][b], rtol=1e-6)


def test_time_major_helper_and_a_second_decoder_share_the_cell_and_agree():
    decoder, cell, projection = _decoder(s2s.TrainingHelper(tf.constant(X), LENGTHS))
    batch_major, _, _ = s2s.dynamic_decode(decoder)
    time_major_helper = s2s.TrainingHelper(tf.constant(X.transpose(1, 0, 2)), LENGTHS,
                                           time_major=True)
    second = s2s.BasicDecoder(cell, time_major_helper, cell.zero_state(B, tf.float64),
                              output_layer=projection)
    time_major, _, _ = s2s.dynamic_decode(second, output_time_major=True)
    assert len(tf.global_variables()) == 4   # the second decoder reuses the first's variables
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([batch_major.rnn_output, time_major.rnn_output])
    np.testing.assert_allclose(a, b.transpose(1, 0, 2), rtol=1e-12)
    assert not np.allclose(a, 0)


def test_greedy_decoder_feeds_back_its_argmax_and_stops_at_the_end_token():
    decoder, cell, projection = _decoder(
        s2s.GreedyEmbeddingHelper(tf.constant(EMBEDDING), [0, 1, 2], end_token=3))
    outputs, _, lengths = s2s.dynamic_decode(decoder, maximum_iterations=6)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_lengths, weights = sess.run([outputs, lengths, _weights(cell, projection)])
    def feed(t, prev):
        return EMBEDDING[[0, 1, 2]] if prev is None else EMBEDDING[prev.argmax(-1)]
    steps = got.sample_id.shape[1]
    logits, _ = _numpy_rnn(*weights, feed, steps, np.zeros((B, H)))
    ids = logits.argmax(-1)
    np.testing.assert_array_equal(got.sample_id, ids)
    ended = [(list(row).index(3) + 1 if 3 in row else 6) for row in ids]
    np.testing.assert_array_equal(got_lengths, ended)
    assert steps == max(ended)


def test_maximum_iterations_zero_decodes_nothing():
    decoder, _, _ = _decoder(s2s.TrainingHelper(tf.constant(X), LENGTHS))
    outputs, _, lengths = s2s.dynamic_decode(decoder, maximum_iterations=0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_lengths = sess.run([outputs.rnn_output, lengths])
    assert got.shape == (B, 0, V)
    np.testing.assert_array_equal(got_lengths, [0, 0, 0])


def test_sample_embedding_helper_draws_valid_ids():
    decoder, _, _ = _decoder(s2s.SampleEmbeddingHelper(tf.constant(EMBEDDING), [0, 1, 2], 3,
                                                       softmax_temperature=0.5, seed=3))
    outputs, _, lengths = s2s.dynamic_decode(decoder, maximum_iterations=5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ids, got_lengths = sess.run([outputs.sample_id, lengths])
    assert ids.dtype == np.int32 and ((ids >= 0) & (ids < V)).all()
    assert ((got_lengths >= 1) & (got_lengths <= 5)).all()


def test_gradients_through_the_decode_loop_match_finite_differences():
    inputs = tf.placeholder(tf.float64, [B, T, D])
    decoder, cell, projection = _decoder(s2s.TrainingHelper(inputs, LENGTHS))
    outputs, state, _ = s2s.dynamic_decode(decoder, impute_finished=True)
    loss = tf.reduce_sum(tf.sin(outputs.rnn_output)) + tf.reduce_sum(tf.square(state))
    kernel = cell.variables[0]
    grads = tf.gradients(loss, [inputs, kernel])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g_inputs, g_kernel = sess.run(grads, {inputs: X})
        base_kernel = sess.run(kernel)
        eps = 1e-6
        for index in [(0, 0, 0), (1, 1, 2), (2, 0, 1), (1, 3, 0)]:
            plus, minus = X.copy(), X.copy()
            plus[index] += eps
            minus[index] -= eps
            numeric = (sess.run(loss, {inputs: plus}) - sess.run(loss, {inputs: minus})) / (2 * eps)
            np.testing.assert_allclose(g_inputs[index], numeric, rtol=1e-5, atol=1e-8)
        assert g_inputs[1, 3, 0] == 0.0   # past its length with impute_finished
        for index in [(0, 0), (4, 2), (7, 4)]:
            numeric = []
            for sign in (1, -1):
                moved = base_kernel.copy()
                moved[index] += sign * eps
                kernel.load(moved, sess)
                numeric.append(sess.run(loss, {inputs: X}))
            kernel.load(base_kernel, sess)
            np.testing.assert_allclose(g_kernel[index], (numeric[0] - numeric[1]) / (2 * eps),
                                       rtol=1e-5, atol=1e-8)


def test_build_time_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="Expected sequence_length to be a vector"):
        s2s.TrainingHelper(tf.constant(X), 3)
    with pytest.raises(ValueError, match="start_tokens must be a vector"):
        s2s.GreedyEmbeddingHelper(tf.constant(EMBEDDING), 0, 3)
    with pytest.raises(ValueError, match="end_token must be a scalar"):
        s2s.GreedyEmbeddingHelper(tf.constant(EMBEDDING), [0], [3])
    cell = tf.nn.rnn_cell.BasicRNNCell(H)
    with pytest.raises(TypeError, match="helper must be a Helper"):
        s2s.BasicDecoder(cell, "helper", cell.zero_state(B, tf.float32))
    with pytest.raises(TypeError, match="output_layer must be a Layer"):
        s2s.BasicDecoder(cell, s2s.TrainingHelper(tf.constant(X), LENGTHS),
                         cell.zero_state(B, tf.float32), output_layer=3)
    with pytest.raises(TypeError, match="Expected decoder to be type Decoder"):
        s2s.dynamic_decode(cell)
    decoder, _, _ = _decoder(s2s.TrainingHelper(tf.constant(X), LENGTHS))
    with pytest.raises(ValueError, match="maximum_iterations must be a scalar"):
        s2s.dynamic_decode(decoder, maximum_iterations=[3])
    with pytest.raises(AttributeError, match="monotonic attentions"):
        s2s.BahdanauMonotonicAttention
