"""tf.contrib.seq2seq.gather_tree (the GatherTree kernel): TF's expected beams, a numpy
backtracking reference with end tokens and lengths, static shapes and TF's errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run

s2s = tf.contrib.seq2seq


def _time_major(batch_major):
    return np.transpose(np.asarray(batch_major), [1, 0, 2]).astype(np.int32)


def _numpy_gather_tree(step_ids, parent_ids, lengths, end_token):
    """Follow each final beam's parents back to step 0, then blank out what follows the
    first end token (and everything past the entry's length) with -1."""
    max_time, batch, width = step_ids.shape
    out = np.full(step_ids.shape, -1, np.int32)
    for b in range(batch):
        length = min(max_time, lengths[b])
        for k in range(width if length > 0 else 0):
            beam = k
            for t in range(length - 1, -1, -1):
                out[t, b, k] = step_ids[t, b, beam]
                beam = parent_ids[t, b, beam]
            ends = np.flatnonzero(out[:length, b, k] == end_token)
            if ends.size:
                out[ends[0] + 1:, b, k] = -1
    return out


# The expected beams below are those of TF 1.x's own GatherTree kernel test
# (tensorflow/contrib/seq2seq/python/kernel_tests/beam_search_ops_test.py): TF 2.21 no
# longer has the op (tf.raw_ops.GatherTree is gone), so they cannot be re-recorded here.
def test_tf_recorded_single_batch_entry():
    step_ids = _time_major([[[1, 2, 3], [4, 5, 6], [7, 8, 9], [-1, -1, -1]]])
    parent_ids = _time_major([[[0, 0, 0], [0, 1, 1], [2, 1, 2], [-1, -1, -1]]])
    beams = s2s.gather_tree(step_ids, parent_ids, max_sequence_lengths=[3], end_token=10)
    assert beams.dtype == tf.int32 and beams.shape.as_list() == [4, 1, 3]
    np.testing.assert_array_equal(
        run(beams), _time_major([[[2, 2, 2], [6, 5, 6], [7, 8, 9], [-1, -1, -1]]]))


def test_tf_recorded_batch_with_lengths_zero_to_three():
    step_ids = _time_major([
        [[3, 4, 0, 4, 0], [4, 2, 0, 3, 1], [1, 1, 3, 2, 2], [3, 1, 2, 3, 4]],
        [[3, 4, 0, 4, 0], [4, 2, 0, 3, 1], [1, 1, 3, 2, 2], [3, 1, 2, 3, 4]],
        [[1, 2, 3, 4, 2], [2, 1, 1, 3, 2], [3, 0, 1, 0, 0], [3, 4, 0, 2, 4]],
        [[0, 2, 2, 3, 1], [3, 2, 2, 2, 3], [3, 4, 3, 0, 3], [1, 2, 2, 2, 4]]])
    parent_ids = _time_major([
        [[4, 2, 4, 3, 4], [3, 4, 0, 2, 0], [3, 1, 3, 2, 2], [0, 2, 1, 4, 2]],
        [[4, 2, 4, 3, 4], [3, 4, 0, 2, 0], [3, 1, 3, 2, 2], [0, 2, 1, 4, 2]],
        [[3, 0, 0, 4, 0], [1, 2, 4, 2, 2], [4, 4, 0, 3, 0], [2, 4, 4, 3, 0]],
        [[3, 1, 4, 1, 3], [3, 2, 4, 0, 4], [1, 0, 1, 4, 2], [0, 3, 2, 0, 1]]])
    blank = [-1] * 5
    expected = _time_major([
        [blank, blank, blank, blank],
        [[3, 4, 0, 4, 0], blank, blank, blank],
        [[2, 3, 2, 3, 3], [2, 1, 1, 3, 2], blank, blank],
        [[2, 3, 2, 1, 1], [2, 3, 2, 3, 2], [3, 4, 3, 0, 3], blank]])
    got = run(s2s.gather_tree(step_ids, parent_ids, [0, 1, 2, 3], end_token=10))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, _numpy_gather_tree(step_ids, parent_ids, [0, 1, 2, 3], 10))


def test_random_trees_with_end_tokens_match_the_numpy_reference():
    rng = np.random.default_rng(7)
    max_time, batch, width = 6, 4, 3
    step_ids = rng.integers(0, 5, (max_time, batch, width)).astype(np.int32)
    parent_ids = rng.integers(0, width, (max_time, batch, width)).astype(np.int32)
    lengths = np.array([6, 3, 0, 9], np.int32)    # 9: past max_time reads all 6 steps
    steps = tf.placeholder(tf.int32, [None, None, width])
    beams = s2s.gather_tree(steps, parent_ids, lengths, end_token=4)
    assert beams.shape.as_list() == [max_time, batch, width]   # merged with parent_ids
    got = run(beams, {steps: step_ids})
    want = _numpy_gather_tree(step_ids, parent_ids, lengths, 4)
    np.testing.assert_array_equal(got, want)
    assert (got == 4).any() and (got[:, 2] == -1).all()     # the test exercises end tokens


def test_an_end_token_blanks_the_rest_of_its_beam():
    step_ids = _time_major([[[2, 5], [10, 6], [7, 8]]])
    parent_ids = _time_major([[[0, 0], [0, 1], [1, 0]]])
    got = run(s2s.gather_tree(step_ids, parent_ids, [3], end_token=10))
    # beam 0 ends at 7 <- parent 1 <- 6 <- parent 1 <- 5; beam 1 ends 8 <- 10 <- 2
    np.testing.assert_array_equal(got[:, 0], [[5, 2], [6, 10], [7, -1]])


def test_bad_parent_ids_raise_with_their_position():
    step_ids = _time_major([[[1, 2, 3], [4, 5, 6], [7, 8, 9], [-1, -1, -1]]])
    parents = tf.placeholder(tf.int32, [4, 1, 3])
    beams = s2s.gather_tree(step_ids, parents, [3], end_token=10)
    bad = _time_major([[[0, 0, 0], [0, -1, 1], [2, 1, 2], [-1, -1, -1]]])
    with pytest.raises(InvalidArgumentError,
                       match=r"parent id -1 at \(batch, time, beam\) == \(0, 0, 1\)"):
        run(beams, {parents: bad})
    too_big = _time_major([[[0, 0, 0], [0, 3, 1], [2, 1, 2], [-1, -1, -1]]])
    with pytest.raises(InvalidArgumentError, match=r"parent id 3 .*must be in \[0, 3\)"):
        run(beams, {parents: too_big})     # TF's CPU check lets 3 through and reads past


def test_shape_errors_at_build_and_run_time():
    ids = np.zeros((4, 2, 3), np.int32)
    with pytest.raises(ValueError, match="step_ids must be rank 3"):
        s2s.gather_tree(ids[0], ids[0], [1, 1], 0)
    with pytest.raises(ValueError, match="same shape"):
        s2s.gather_tree(ids, ids[:, :, :2], [1, 1], 0)
    with pytest.raises(ValueError, match="batch size of step_ids \\(2\\) and "
                                         "max_sequence_lengths \\(3\\)"):
        s2s.gather_tree(ids, ids, [1, 1, 1], 0)
    with pytest.raises(ValueError, match="requested dtype int32 for Tensor with dtype int64"):
        s2s.gather_tree(ids, tf.constant(ids, tf.int64), [1, 1], 0)   # as TF's conversion
    lengths = tf.placeholder(tf.int32, [None])
    with pytest.raises(InvalidArgumentError, match="max_sequence_lengths.shape\\[0\\] must match"):
        run(s2s.gather_tree(ids, ids, lengths, 0), {lengths: [1, 1, 1]})
    ragged = tf.placeholder(tf.int32, [None, None, None])
    with pytest.raises(InvalidArgumentError, match="step_ids.shape must match parent_ids.shape"):
        run(s2s.gather_tree(ragged, ids, [1, 1], 0), {ragged: ids[:3]})


def test_not_differentiable():
    ids = tf.constant(np.zeros((2, 1, 2), np.int32))
    assert tf.gradients(tf.cast(s2s.gather_tree(ids, ids, [2], 0), tf.float32), ids) == [None]
