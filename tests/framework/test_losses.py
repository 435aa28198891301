"""tf.losses: every loss against its numpy formula under each Reduction, weights' broadcasting
rules and errors, names TF 2.21 gives the results, collections, label smoothing, gradients."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run

R = tf.losses.Reduction
RNG = np.random.default_rng(0)
LABELS = (RNG.random((4, 3)) > 0.5).astype(np.float32)
PREDS = RNG.random((4, 3)).astype(np.float32)
WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)


def _huber(e, delta=1.0):
    a = np.abs(e)
    q = np.minimum(a, delta)
    return 0.5 * q * q + delta * (a - q)


ELEMENTWISE = {
    "absolute_difference": lambda y, p: np.abs(p - y),
    "mean_squared_error": lambda y, p: (p - y) ** 2,
    "huber_loss": lambda y, p: _huber(p - y),
    "log_loss": lambda y, p: -y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7),
    "hinge_loss": lambda y, p: np.maximum(0.0, 1 - (2 * y - 1) * p),
}


def _reduce(losses, weights, reduction):
    weighted = losses * weights
    full = np.broadcast_to(weights, losses.shape)
    return {R.NONE: weighted, R.SUM: weighted.sum(), R.MEAN: weighted.sum() / full.sum(),
            R.SUM_OVER_BATCH_SIZE: weighted.sum() / losses.size,
            R.SUM_BY_NONZERO_WEIGHTS: weighted.sum() / np.count_nonzero(full)}[reduction]


@pytest.mark.parametrize("reduction", [R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE,
                                       R.SUM_BY_NONZERO_WEIGHTS])
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_losses_reduce_as_asked(name, reduction):
    preds = PREDS * 3 - 1 if name in ("huber_loss", "hinge_loss") else PREDS
    loss = getattr(tf.losses, name)(LABELS, preds, weights=WEIGHTS, reduction=reduction)
    expected = _reduce(ELEMENTWISE[name](LABELS, preds), WEIGHTS, reduction)
    assert loss.dtype == tf.float32 and loss.shape.as_list() == list(np.shape(expected))
    np.testing.assert_allclose(run(loss), expected, rtol=1e-5, atol=1e-6)


def test_sum_over_nonzero_weights_is_the_default_and_an_alias():
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS
    loss = tf.losses.absolute_difference(LABELS, PREDS, WEIGHTS)
    nonzero = 9   # rows 0, 2 and 3 have non-zero weights, 3 elements each
    np.testing.assert_allclose(run(loss), (np.abs(PREDS - LABELS) * WEIGHTS).sum() / nonzero,
                               rtol=1e-6)


def test_names_are_tfs():
    # TF 2.21 names: the reduced loss is "<scope>/value", NONE's is the weighted Mul.
    assert tf.losses.mean_squared_error(LABELS, PREDS).name == "mean_squared_error/value:0"
    assert tf.losses.huber_loss(LABELS, PREDS, reduction=R.NONE).name == "huber_loss/Mul_3:0"
    assert tf.losses.absolute_difference(LABELS, PREDS, reduction=R.SUM).name == \
        "absolute_difference/Sum:0"
    assert tf.losses.compute_weighted_loss(PREDS).name == "weighted_loss/value:0"
    assert tf.losses.log_loss(LABELS, PREDS, scope="mine").name == "mine/value:0"


def test_delta_and_epsilon():
    np.testing.assert_allclose(run(tf.losses.huber_loss(LABELS, PREDS * 5, delta=0.3)),
                               _huber(PREDS * 5 - LABELS, 0.3).mean(), rtol=1e-5)
    eps = 0.25
    expected = (-LABELS * np.log(PREDS + eps) - (1 - LABELS) * np.log(1 - PREDS + eps)).mean()
    np.testing.assert_allclose(run(tf.losses.log_loss(LABELS, PREDS, epsilon=eps)), expected,
                               rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{"axis": 1}, {"dim": 1}])
def test_cosine_distance_keeps_the_axis(kwargs):
    loss = tf.losses.cosine_distance(LABELS, PREDS, weights=WEIGHTS, reduction=R.NONE, **kwargs)
    assert loss.shape.as_list() == [4, 1]
    expected = (1 - (LABELS * PREDS).sum(1, keepdims=True)) * WEIGHTS
    np.testing.assert_allclose(run(loss), expected, rtol=1e-5)


def test_cross_entropies_with_label_smoothing():
    smooth = LABELS * 0.9 + 0.05
    x = PREDS
    sig = np.maximum(x, 0) - x * smooth + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(
        run(tf.losses.sigmoid_cross_entropy(LABELS, x, WEIGHTS, label_smoothing=0.1)),
        (sig * WEIGHTS).sum() / 9, rtol=1e-5)
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    soft_labels = onehot * 0.8 + 0.2 / 3
    log_softmax = x - np.log(np.exp(x).sum(1, keepdims=True))
    per_row = -(soft_labels * log_softmax).sum(1)
    loss = tf.losses.softmax_cross_entropy(onehot, x, WEIGHTS[:, 0], label_smoothing=0.2)
    np.testing.assert_allclose(run(loss), (per_row * WEIGHTS[:, 0]).sum() / 3, rtol=1e-5)


def test_sparse_softmax_squeezes_labels_and_weights():
    x = PREDS
    log_softmax = x - np.log(np.exp(x).sum(1, keepdims=True))
    ids = np.array([[0], [2], [1], [1]])
    loss = tf.losses.sparse_softmax_cross_entropy(ids, x, weights=WEIGHTS, reduction=R.NONE)
    assert loss.shape.as_list() == [4]
    expected = -log_softmax[np.arange(4), ids[:, 0]] * WEIGHTS[:, 0]
    np.testing.assert_allclose(run(loss), expected, rtol=1e-5)


def _pairwise(labels, preds, weights):
    total = 0.0
    for y, p, w in zip(labels, preds, np.broadcast_to(weights, (len(labels), 1))[:, 0]):
        d = p - y
        n = d.size
        pairs = [(d[i] - d[j]) ** 2 for i in range(n) for j in range(n) if i != j]
        total += w * np.sum(pairs) / (n * (n - 1))
    return total


@pytest.mark.parametrize("weights", [1.0, WEIGHTS])
def test_mean_pairwise_squared_error(weights):
    loss = tf.losses.mean_pairwise_squared_error(LABELS, PREDS, weights=weights)
    np.testing.assert_allclose(run(loss), _pairwise(LABELS, PREDS, weights), rtol=1e-5)


def test_losses_go_to_their_collection():
    a = tf.losses.hinge_loss(LABELS, PREDS)
    tf.losses.hinge_loss(LABELS, PREDS, loss_collection=None)
    b = tf.losses.log_loss(LABELS, PREDS, loss_collection="mine")
    assert tf.losses.get_losses() == [a]
    assert tf.get_collection("mine") == [b]


def test_integer_losses_come_back_in_their_dtype():
    loss = tf.losses.compute_weighted_loss(tf.constant([[1, 2], [3, 4]]), 2.0)
    assert loss.dtype == tf.int32 and run(loss) == 5


def test_all_zero_weights_give_zero_not_nan():
    loss = tf.losses.mean_squared_error(LABELS, PREDS, weights=0.0)
    assert run(loss) == 0.0


@pytest.mark.parametrize("weights,match", [
    (np.ones(4), "values.rank=2. weights.rank=1"),
    (np.ones((2, 3)), "Mismatch at dim 0"),
])
def test_weights_that_do_not_broadcast_fail_at_build_time(weights, match):
    with pytest.raises(ValueError, match=match):
        tf.losses.mean_squared_error(LABELS, PREDS, weights=weights)


def test_weights_checked_when_run_if_shapes_are_unknown():
    w = tf.placeholder(tf.float32)
    loss = tf.losses.mean_squared_error(LABELS, PREDS, weights=w)
    np.testing.assert_allclose(run(loss, {w: WEIGHTS}), ((PREDS - LABELS) ** 2 * WEIGHTS).sum() / 9,
                               rtol=1e-5)
    np.testing.assert_allclose(run(loss, {w: 2.0}), ((PREDS - LABELS) ** 2).mean() * 2, rtol=1e-5)
    with pytest.raises(InvalidArgumentError, match="weights can not be broadcast"):
        run(loss, {w: np.ones(4, np.float32)})


def test_argument_errors():
    with pytest.raises(ValueError, match="Invalid Reduction Key x"):
        tf.losses.mean_squared_error(LABELS, PREDS, reduction="x")
    with pytest.raises(ValueError, match="You must specify argument `axis`"):
        tf.losses.cosine_distance(LABELS, PREDS)
    with pytest.raises(ValueError, match=r"Shapes \(4, 2\) and \(4, 3\) are incompatible"):
        tf.losses.mean_squared_error(LABELS, PREDS[:, :2])
    with pytest.raises(ValueError, match="Argument `labels` must not be None"):
        tf.losses.hinge_loss(None, PREDS)


@pytest.mark.parametrize("name", ["huber_loss", "log_loss", "hinge_loss", "absolute_difference"])
def test_gradients_match_finite_differences(name):
    x = tf.placeholder(tf.float64, [4, 3])
    preds = PREDS.astype(np.float64) * 0.8 + 0.1
    loss = getattr(tf.losses, name)(LABELS, x, weights=WEIGHTS, reduction=R.SUM)
    grad = run(tf.gradients(loss, x)[0], {x: preds})
    f = ELEMENTWISE[name]
    h = 1e-4
    numeric = ((f(LABELS, preds + h) - f(LABELS, preds - h)) / (2 * h)) * WEIGHTS
    np.testing.assert_allclose(grad, numeric, rtol=2e-3, atol=2e-3)
