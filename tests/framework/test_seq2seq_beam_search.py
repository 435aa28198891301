"""tf.contrib.seq2seq.BeamSearchDecoder with dynamic_decode, and tile_batch: a lookup-table
model whose probabilities are hand-set (beam search finds the sequence greedy decoding
misses; the length penalty changes the winner; finished beams stay finished), beam_width=1
against greedy decoding, and an AttentionWrapper over tiled memory whose best beam's score
equals the log probability a teacher-forced decoder gives its ids."""

import numpy as np
import pytest

import zmtf as tf

s2s = tf.contrib.seq2seq
START, END = 0, 1


class TableCell(tf.nn.rnn_cell.RNNCell):
    """Emits its input as logits and keeps its state: with an embedding whose row v holds
    log p(next | v), the decoder is a bigram model with hand-set probabilities."""

    def __init__(self, vocab):
        super().__init__()
        self._vocab = vocab

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return self._vocab

    def call(self, inputs, state):
        return inputs, state


def _bigram(rows, vocab):
    """log-probability table from {token: {next: p}}; unlisted mass spread over the rest
    (a token without a row ends with probability 0.9)."""
    table = np.zeros((vocab, vocab))
    for token in range(vocab):
        given = rows.get(token, {END: 0.9})
        rest = (1.0 - sum(given.values())) / (vocab - len(given))
        table[token] = [given.get(v, rest) for v in range(vocab)]
    return np.log(table)


def _beam_search(table, beam_width, steps=5, batch=1, **kwargs):
    vocab = table.shape[0]
    decoder = s2s.BeamSearchDecoder(
        TableCell(vocab), tf.constant(table), tf.fill([batch], START), END,
        tf.zeros([batch * beam_width, 1], tf.float64), beam_width, **kwargs)
    outputs, state, lengths = s2s.dynamic_decode(decoder, maximum_iterations=steps)
    return tf.Session().run([outputs, state, lengths])


# token 2 is likelier first, but after it nothing is likely; 3 then END wins overall
AMBUSH = {START: {2: 0.5, 3: 0.4}, 2: {v: 0.15 for v in range(1, 7)}, 3: {END: 0.9}}


def test_beam_search_finds_the_sequence_greedy_decoding_misses():
    table = _bigram(AMBUSH, 8)
    greedy = s2s.BasicDecoder(TableCell(8), s2s.GreedyEmbeddingHelper(
        tf.constant(table), [START], END), tf.zeros([1, 1], tf.float64))
    greedy_ids = tf.Session().run(s2s.dynamic_decode(greedy, maximum_iterations=5)[0].sample_id)
    assert greedy_ids[0, 0] == 2
    outputs, state, _ = _beam_search(table, beam_width=2)
    assert isinstance(outputs, s2s.FinalBeamSearchDecoderOutput)
    assert isinstance(state, s2s.BeamSearchDecoderState)
    np.testing.assert_array_equal(outputs.predicted_ids[0, :, 0], [3, END])
    scores = outputs.beam_search_decoder_output.scores
    assert scores.shape == (1, 2, 2)     # [batch, time, beam]; stopped once both beams ended
    np.testing.assert_allclose(scores[0, -1, 0], np.log(0.4 * 0.9), rtol=1e-12)
    np.testing.assert_allclose(state.log_probs[0, 0], np.log(0.4 * 0.9), rtol=1e-12)
    np.testing.assert_array_equal(state.lengths[0], [2, 2])   # END counts in the lengths


def test_finished_beams_stay_finished_and_keep_their_score():
    table = _bigram({START: {END: 0.6, 3: 0.3}, 3: {4: 0.5, END: 0.1}, 4: {5: 0.8}}, 8)
    outputs, state, _ = _beam_search(table, beam_width=2, steps=6)
    raw = outputs.beam_search_decoder_output
    assert raw.scores.shape == (1, 4, 2)          # stopped once 3, 4, 5, END had ended too
    np.testing.assert_array_equal(raw.parent_ids[0, 1:, 0], 0)   # beam 0 extends itself ...
    np.testing.assert_array_equal(raw.predicted_ids[0, :, 0], END)   # ... with END only
    np.testing.assert_allclose(raw.scores[0, :, 0], np.log(0.6), rtol=1e-12)  # at no cost
    np.testing.assert_array_equal(outputs.predicted_ids[0], [[END, 3], [-1, 4], [-1, 5],
                                                             [-1, END]])
    np.testing.assert_allclose(raw.scores[0, -1, 1], np.log(0.3 * 0.5 * 0.8 * 0.9), rtol=1e-12)
    assert state.finished.all()
    np.testing.assert_array_equal(state.lengths[0], [1, 4])


@pytest.mark.parametrize("weight,winner", [(0.0, [END, -1, -1]), (2.0, [3, 3, 3])])
def test_length_penalty_can_make_a_longer_sequence_win(weight, winner):
    table = _bigram({START: {END: 0.3, 3: 0.6}, 3: {3: 0.6}}, 6)
    outputs, _, _ = _beam_search(table, beam_width=2, steps=3, length_penalty_weight=weight)
    np.testing.assert_array_equal(outputs.predicted_ids[0, :, 0], winner)
    # the penalty's length counts a beam's words before its END: 1 for [END] (which ended
    # at step 0 and counts as length 1 since), 3 for the live [3, 3, 3]
    def penalty(length):
        return ((5.0 + length) / 6.0) ** weight
    want = sorted([np.log(0.3) / penalty(1), np.log(0.6 ** 3) / penalty(3)], reverse=True)
    np.testing.assert_allclose(outputs.beam_search_decoder_output.scores[0, -1], want,
                               rtol=1e-12)


def test_beam_width_one_is_greedy_decoding():
    tf.set_random_seed(7)     # weights under which some entries stop early
    rng = np.random.default_rng(3)
    batch, hidden, vocab = 3, 6, 7
    embedding = tf.constant(rng.standard_normal((vocab, 4)))
    cell = tf.nn.rnn_cell.GRUCell(hidden)
    projection = tf.layers.Dense(vocab, name="projection")
    start_state = tf.constant(rng.standard_normal((batch, hidden)))
    greedy = s2s.BasicDecoder(cell, s2s.GreedyEmbeddingHelper(embedding, [0, 2, 4], END),
                              start_state, output_layer=projection)
    greedy_out, _, greedy_lengths = s2s.dynamic_decode(greedy, maximum_iterations=6)
    beam = s2s.BeamSearchDecoder(cell, embedding, [0, 2, 4], END, s2s.tile_batch(start_state, 1),
                                 beam_width=1, output_layer=projection)
    beam_out, _, _ = s2s.dynamic_decode(beam, maximum_iterations=6)
    assert beam_out.predicted_ids.shape.as_list() == [batch, None, 1]
    names = [v.op.name for v in tf.global_variables()]
    assert len(names) == 6 and all(n.startswith("decoder/") for n in names)   # shared
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ids, lengths, beams = sess.run([greedy_out.sample_id, greedy_lengths,
                                        beam_out.predicted_ids])
    for b in range(batch):
        n = lengths[b]
        np.testing.assert_array_equal(beams[b, :n, 0], ids[b, :n])
        assert (beams[b, n:, 0] == -1).all()
        assert n == 6 or ids[b, n - 1] == END
    assert (lengths < 6).any() and (lengths == 6).any(), \
        "premise: under seed 7 some entries stop at END and some run on"


def _ancestors(parent_ids, beam):
    """The beam index, after each step, on the path that ends at ``beam``."""
    path = [beam]
    for t in range(parent_ids.shape[0] - 1, 0, -1):
        path.insert(0, parent_ids[t, path[0]])
    return path


def test_attention_over_tiled_memory_scores_its_best_beam_by_its_log_probability():
    tf.set_random_seed(11)   # the projection's weights: unseeded, ~1 run in 12 ended every beam early
    rng = np.random.default_rng(5)
    batch, mem_time, depth, hidden, vocab, width, steps = 2, 4, 3, 5, 6, 3, 4
    memory = rng.standard_normal((batch, mem_time, depth))
    embedding = tf.constant(rng.standard_normal((vocab, 3)))
    mechanism = s2s.BahdanauAttention(hidden, s2s.tile_batch(tf.constant(memory), width),
                                      s2s.tile_batch(np.array([4, 2], np.int32), width))
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(hidden), mechanism,
                                attention_layer_size=4, alignment_history=True)
    encoder_state = tf.constant(rng.standard_normal((batch, hidden)))
    start = cell.zero_state(batch * width, tf.float64).clone(
        cell_state=s2s.tile_batch(encoder_state, width))
    projection = tf.layers.Dense(vocab, name="projection")
    decoded = []
    for reorder in (True, False):
        beam = s2s.BeamSearchDecoder(cell, embedding, [0, 0], END, start, width,
                                     output_layer=projection, reorder_tensor_arrays=reorder)
        outputs, state, _ = s2s.dynamic_decode(beam, maximum_iterations=steps)
        history = state.cell_state.alignment_history
        decoded.append((outputs, history if reorder else history.stack()))
    assert decoded[0][1].shape.as_list() == [None, batch * width, mem_time]   # stacked
    # teacher-force every copy of entry b with its best beam, through the same cell
    ids = tf.placeholder(tf.int32, [batch * width, steps])
    inputs = tf.nn.embedding_lookup(embedding, tf.concat(
        [tf.zeros([batch * width, 1], tf.int32), ids[:, :-1]], 1))
    forced = s2s.BasicDecoder(cell, s2s.TrainingHelper(inputs, [steps] * (batch * width)),
                              start, output_layer=projection)
    forced_out, forced_state, _ = s2s.dynamic_decode(forced)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        (got, sorted_history), (_, raw_history) = sess.run(decoded)
        best = got.predicted_ids[:, :, 0]
        assert best.shape == (batch, steps)
        tokens = np.repeat(np.where(best >= 0, best, END), width, axis=0)  # ended: END again
        logits, forced_history = sess.run(
            [forced_out.rnn_output, forced_state.alignment_history.stack()], {ids: tokens})
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, tokens[..., None], -1)[..., 0]
    picked = picked.reshape(batch, width, steps)
    np.testing.assert_allclose(picked, picked[:, :1].repeat(width, 1), rtol=1e-12)  # copies agree
    want = np.where(best >= 0, picked[:, 0], 0.0).sum(1)
    np.testing.assert_allclose(got.beam_search_decoder_output.scores[:, -1, 0], want, rtol=1e-9)
    raw = raw_history.reshape(steps, batch, width, mem_time)
    forced = forced_history.reshape(steps, batch, width, mem_time)
    sorted_ = sorted_history.reshape(steps, batch, width, mem_time)
    parents = got.beam_search_decoder_output.parent_ids
    for b in range(batch):
        path = _ancestors(parents[b], 0)
        # step t's alignments are written before the step picks its beams, so the best
        # path's are at its parent's row ...
        on_path = np.stack([raw[t, b, parents[b, t, path[t]]] for t in range(steps)])
        np.testing.assert_allclose(on_path, forced[:, b, 0], rtol=1e-9)
        # ... but TF1's reordering (gather_tree over beam ids) reads the row of the beam
        # itself; zmtf reorders as TF does
        np.testing.assert_array_equal(sorted_[:, b, 0],
                                      np.stack([raw[t, b, path[t]] for t in range(steps)]))
    np.testing.assert_array_equal(raw[:, 1, :, 2:], 0)     # entry 1's memory is 2 long


def test_tile_batch_repeats_each_entry_in_place_for_nests():
    x = tf.placeholder(tf.float32, [None, 2])
    tiled = s2s.tile_batch({"a": x, "b": tf.constant([[1], [2]])}, 3)
    assert tiled["a"].shape.as_list() == [None, 2] and tiled["b"].shape.as_list() == [6, 1]
    a, b = tf.Session().run([tiled["a"], tiled["b"]], {x: [[1, 2], [3, 4]]})
    np.testing.assert_array_equal(a, np.repeat([[1, 2], [3, 4]], 3, axis=0))
    np.testing.assert_array_equal(b[:, 0], [1, 1, 1, 2, 2, 2])
    with pytest.raises(ValueError, match="statically known rank"):
        s2s.tile_batch(tf.constant(1.0), 2)


def test_build_time_errors():
    cell = TableCell(4)
    table = tf.zeros([4, 4])
    state = tf.zeros([2, 1])
    with pytest.raises(ValueError, match="start_tokens must be a vector"):
        s2s.BeamSearchDecoder(cell, table, 0, END, state, 2)
    with pytest.raises(ValueError, match="end_token must be a scalar"):
        s2s.BeamSearchDecoder(cell, table, [0], [END], state, 2)
    with pytest.raises(ValueError, match="zero_state with batch_size=encoder_batch_size"):
        s2s.BeamSearchDecoder(cell, table, [0], END, tf.zeros([3, 1]), 2)   # not tiled
    with pytest.raises(TypeError, match="output_layer must be a Layer"):
        s2s.BeamSearchDecoder(cell, table, [0], END, state, 2, output_layer=tf.nn.relu)
    with pytest.raises(ValueError, match="coverage_penalty_weight must be 0.0 if no cell is "
                                         "attentional"):
        s2s.BeamSearchDecoder(cell, table, [0], END, state, 2,
                              coverage_penalty_weight=0.5).initialize()


def test_coverage_penalty_adds_to_beams_that_had_ended():
    tf.set_random_seed(7)     # weights under which some beams end early
    rng = np.random.default_rng(11)
    batch, mem_time, hidden, vocab, width, steps, weight = 2, 3, 4, 4, 3, 5, 0.7
    mechanism = s2s.LuongAttention(hidden, s2s.tile_batch(
        tf.constant(rng.standard_normal((batch, mem_time, hidden))), width),
        s2s.tile_batch(np.array([3, 2], np.int32), width))
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(hidden), mechanism)
    beam = s2s.BeamSearchDecoder(
        cell, tf.constant(rng.standard_normal((vocab, 2))), [0, 0], END,
        cell.zero_state(batch * width, tf.float64), width,
        output_layer=tf.layers.Dense(vocab, name="projection"), coverage_penalty_weight=weight)
    outputs, state, _ = s2s.dynamic_decode(beam, maximum_iterations=steps)
    assert state.accumulated_attention_probs.shape.as_list() == [batch, width, mem_time]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, final = sess.run([outputs, state])
    covered = np.where(final.accumulated_attention_probs == 0, 1.0,
                       final.accumulated_attention_probs)
    penalty = weight * np.log(np.minimum(covered, 1.0)).sum(-1)
    ended_before = got.predicted_ids[:, -1] == -1     # [batch, beam]: ended before the last step
    want = final.log_probs + np.where(ended_before, penalty, 0.0)
    np.testing.assert_allclose(got.beam_search_decoder_output.scores[:, -1], want, rtol=1e-9)
    assert ended_before.any(), "premise: under seed 7 some beams end before the last step"
    assert (penalty[ended_before] < 0).all()
    np.testing.assert_array_equal(final.accumulated_attention_probs[1, :, 2], 0)   # padding


def test_a_fed_batch_size_and_an_lstm_state_tuple():
    rng = np.random.default_rng(2)
    width = 3
    cell = tf.nn.rnn_cell.LSTMCell(4)
    start_tokens = tf.placeholder(tf.int32, [None])
    beam = s2s.BeamSearchDecoder(cell, tf.constant(rng.standard_normal((5, 3))), start_tokens,
                                 END, cell.zero_state(tf.size(start_tokens) * width, tf.float64),
                                 width, output_layer=tf.layers.Dense(5))
    outputs, state, _ = s2s.dynamic_decode(beam, maximum_iterations=5, output_time_major=True)
    assert outputs.predicted_ids.shape.as_list() == [None, None, width]
    assert state.cell_state.c.shape.as_list() == [None, width, 4]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ids, scores = sess.run([outputs.predicted_ids, outputs.beam_search_decoder_output.scores],
                               {start_tokens: [2, 3, 2, 4]})
    assert ids.shape[1:] == (4, width)
    np.testing.assert_array_equal(ids[:, 0], ids[:, 2])      # same start, same zero state
    np.testing.assert_array_equal(scores[:, 0], scores[:, 2])
    assert not np.array_equal(scores[:, 0], scores[:, 1])
    assert (np.diff(scores[-1], axis=-1) <= 0).all()         # beams come best first
