"""tf.nn.ctc_loss against a brute-force sum over every alignment path (merge and no-merge
rules, collapsed labels), its gradient by finite differences, TF1's argument and run-time
errors, and tf.nn.ctc_greedy_decoder."""

import itertools

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(3)


def _brute_force_nll(logits, label, merge=True):
    """-log of the summed probability of every path that decodes to ``label``."""
    steps, classes = logits.shape
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    blank, total = classes - 1, 0.0
    for path in itertools.product(range(classes), repeat=steps):
        decoded, previous = [], None
        for cls in path:
            if cls != blank and not (merge and cls == previous):
                decoded.append(cls)
            previous = cls
        if decoded == label:
            total += np.prod(probs[np.arange(steps), path])
    return -np.log(total)


def _sparse(labels):
    indices = [[b, i] for b, row in enumerate(labels) for i in range(len(row))]
    values = np.array([v for row in labels for v in row], np.int32)
    return tf.SparseTensor(indices, values, [len(labels), max(len(r) for r in labels)])


@pytest.mark.parametrize("merge", [True, False])
def test_loss_is_minus_log_of_all_alignments(merge):
    logits = RNG.standard_normal((5, 3, 4))
    labels, lengths = [[1, 1], [0, 2], [2]], [5, 4, 3]
    loss = tf.nn.ctc_loss(_sparse(labels), logits, lengths, ctc_merge_repeated=merge)
    assert loss.op.type == "CTCLoss" and loss.shape.as_list() == [3]
    expected = [_brute_force_nll(logits[:n, b], labels[b], merge) for b, n in enumerate(lengths)]
    np.testing.assert_allclose(run(loss), expected, rtol=1e-10)


def test_collapse_repeated_and_batch_major_logits():
    logits = RNG.standard_normal((3, 5, 4))            # batch-major
    labels = [[1, 1, 2], [0, 0], [2]]
    loss = tf.nn.ctc_loss(_sparse(labels), logits, [5, 5, 4], preprocess_collapse_repeated=True,
                          time_major=False)
    expected = [_brute_force_nll(logits[0], [1, 2]), _brute_force_nll(logits[1], [0]),
                _brute_force_nll(logits[2, :4], [2])]
    np.testing.assert_allclose(run(loss), expected, rtol=1e-10)


def test_gradient_by_finite_differences():
    logits_value = RNG.standard_normal((5, 2, 4))
    logits = tf.placeholder(tf.float64, logits_value.shape)
    loss = tf.nn.ctc_loss(_sparse([[1, 1], [0, 2]]), logits, [5, 3])
    weights = np.array([1.0, 2.0])
    grad = run(tf.gradients(tf.reduce_sum(loss * weights), logits)[0], {logits: logits_value})
    numeric = np.zeros_like(logits_value)
    for index in np.ndindex(logits_value.shape):
        for sign in (1, -1):
            bumped = logits_value.copy()
            bumped[index] += sign * 1e-5
            numeric[index] += sign * (run(loss, {logits: bumped}) * weights).sum() / 2e-5
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    assert np.all(grad[3:, 1] == 0)                 # past the sequence length


def test_impossible_alignment_gives_infinite_loss_and_softmax_gradient():
    logits = RNG.standard_normal((2, 1, 3)).astype(np.float32)
    loss = tf.nn.ctc_loss(_sparse([[1, 1]]), logits, [2])     # needs a blank between the 1s
    got_loss, got_grad = run([loss, tf.gradients(loss, loss.op.inputs[0])[0]])
    assert np.isinf(got_loss[0])
    np.testing.assert_allclose(got_grad[:, 0], np.exp(logits[:, 0]) /
                               np.exp(logits[:, 0]).sum(-1, keepdims=True), rtol=1e-6)


def test_errors():
    logits = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    with pytest.raises(TypeError, match="to be a SparseTensor"):
        tf.nn.ctc_loss(np.zeros((2, 2), np.int32), logits, [3, 3])
    with pytest.raises(InvalidArgumentError, match="Not enough time.*required: 4, available: 3"):
        run(tf.nn.ctc_loss(_sparse([[0, 1, 2, 0], [1]]), logits, [3, 3]))
    ignored = tf.nn.ctc_loss(_sparse([[0, 1, 2, 0], [1]]), logits, [3, 3],
                             ignore_longer_outputs_than_inputs=True)
    assert run(ignored)[0] == 0
    with pytest.raises(InvalidArgumentError, match="sequence_length\\(0\\) = 4"):
        run(tf.nn.ctc_loss(_sparse([[0], [1]]), logits, [4, 3]))
    with pytest.raises(InvalidArgumentError, match="the last class is the blank"):
        run(tf.nn.ctc_loss(_sparse([[3], [1]]), logits, [3, 3]))


@pytest.mark.parametrize("merge", [True, False])
def test_greedy_decoder(merge):
    best = [[0, 0, 3, 0, 1], [2, 2, 2, 3, 3]]          # class per step for each example
    logits = np.full((5, 2, 4), -1.0, np.float32)
    for b, row in enumerate(best):
        logits[np.arange(5), b, row] = 2.0
    (decoded,), neg_sum = tf.nn.ctc_greedy_decoder(logits, [5, 3], merge_repeated=merge)
    indices, values, shape, got_neg = run([decoded.indices, decoded.values, decoded.dense_shape,
                                           neg_sum])
    rows = [[0, 0, 1], [2]] if merge else [[0, 0, 0, 1], [2, 2, 2]]
    assert values.tolist() == [v for r in rows for v in r]
    assert indices.tolist() == [[b, i] for b, r in enumerate(rows) for i in range(len(r))]
    assert shape.tolist() == [2, max(len(r) for r in rows)]
    np.testing.assert_array_equal(got_neg, [[-10.0], [-6.0]])
