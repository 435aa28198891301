"""tf.metrics: streaming values over several update runs, weights, reset, names, a remote run."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports

rng = np.random.default_rng(3)


def test_streaming_accuracy_over_three_batches_is_the_overall_accuracy():
    labels = tf.placeholder(tf.int64, [None])
    predictions = tf.placeholder(tf.int64, [None])
    accuracy, update = tf.metrics.accuracy(labels, predictions)
    data = [(rng.integers(0, 3, n), rng.integers(0, 3, n)) for n in (4, 7, 2)]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(accuracy) == 0.0                     # no update yet: 0, not NaN
        seen_l, seen_p = [], []
        for batch_labels, batch_predictions in data:
            seen_l.append(batch_labels)
            seen_p.append(batch_predictions)
            so_far = np.mean(np.concatenate(seen_l) == np.concatenate(seen_p))
            updated = sess.run(update, {labels: batch_labels, predictions: batch_predictions})
            assert updated == pytest.approx(so_far)          # update_op returns the new value
        assert sess.run(accuracy) == pytest.approx(so_far)
        assert accuracy.dtype == tf.float32 and accuracy.shape.as_list() == []


def test_local_variables_initializer_resets_the_metric():
    labels = tf.placeholder(tf.int32, [None])
    accuracy, update = tf.metrics.accuracy(labels, tf.constant([1, 1, 1]))
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {labels: [1, 0, 0]})
        assert sess.run(accuracy) == pytest.approx(1 / 3)
        sess.run(tf.local_variables_initializer())
        assert sess.run(accuracy) == 0.0
        sess.run(update, {labels: [1, 1, 0]})
        assert sess.run(accuracy) == pytest.approx(2 / 3)


def test_metric_state_is_local_and_named_like_tf():
    accuracy, update = tf.metrics.accuracy([1, 2], [1, 3])
    tf.metrics.accuracy([1, 2], [1, 3])
    tf.metrics.mean([1.0], name="loss_mean")
    names = [v.name for v in tf.local_variables()]
    assert names == ["accuracy/total:0", "accuracy/count:0", "accuracy_1/total:0",
                     "accuracy_1/count:0", "loss_mean/total:0", "loss_mean/count:0"]
    assert [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    assert accuracy.name == "accuracy/value:0" and update.name == "accuracy/update_op:0"
    with tf.Session() as sess:                      # only the local initializer is needed
        sess.run(tf.local_variables_initializer())
        assert sess.run(update) == 0.5


def test_metrics_and_updates_collections():
    value, update = tf.metrics.mean([1.0, 2.0], metrics_collections=["m"], updates_collections="u")
    assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]


def test_accuracy_with_weights_per_example_and_squeezable():
    labels = np.array([1, 0, 2, 2])
    predictions = np.array([1, 1, 2, 0])
    weights = np.array([0.5, 2.0, 1.0, 0.0], np.float32)
    want = np.average(labels == predictions, weights=weights)
    a1, u1 = tf.metrics.accuracy(labels, predictions, weights=weights)
    a2, u2 = tf.metrics.accuracy(labels[:, None], predictions, weights=weights[:, None])  # [n, 1]
    a3, u3 = tf.metrics.accuracy(labels, predictions, weights=3.0)                       # scalar
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run([u1, u2, u3])
        got = sess.run([a1, a2, a3])
    assert got == pytest.approx([want, want, np.mean(labels == predictions)])


def test_weighted_mean_broadcasts_weights_and_streams():
    values = tf.placeholder(tf.float32, [2, 3])
    weights = tf.placeholder(tf.float32, [1, 3])
    mean, update = tf.metrics.mean(values, weights)
    data = [(rng.normal(size=(2, 3)), rng.uniform(0, 2, size=(1, 3))) for _ in range(3)]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for v, w in data:
            sess.run(update, {values: v, weights: w})
        got = sess.run(mean)
    all_v = np.concatenate([v for v, _ in data])
    all_w = np.concatenate([np.broadcast_to(w, v.shape) for v, w in data])
    assert got == pytest.approx(np.average(all_v, weights=all_w), rel=1e-5)


def test_all_zero_weights_give_zero_not_nan():
    mean, update = tf.metrics.mean([1.0, 2.0], weights=[0.0, 0.0])
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update) == 0.0 and sess.run(mean) == 0.0


def test_weights_that_do_not_broadcast_are_refused():
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.metrics.mean(tf.zeros([2, 3]), weights=tf.ones([2, 2]))


def test_mean_squared_error_streams():
    labels = tf.placeholder(tf.float32, [None, 2])
    predictions = tf.placeholder(tf.float32, [None, 2])
    mse, update = tf.metrics.mean_squared_error(labels, predictions)
    data = [(rng.normal(size=(n, 2)), rng.normal(size=(n, 2))) for n in (3, 1, 4)]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for lab, pred in data:
            sess.run(update, {labels: lab, predictions: pred})
        got = sess.run(mse)
    errors = np.concatenate([(lab - pred) ** 2 for lab, pred in data])
    assert got == pytest.approx(errors.mean(), rel=1e-5)
    assert [v.name for v in tf.local_variables()] == ["mean_squared_error/total:0",
                                                      "mean_squared_error/count:0"]


def test_confusion_counts_precision_and_recall_stream():
    labels = tf.placeholder(tf.int32, [None])
    predictions = tf.placeholder(tf.float32, [None])   # cast to bool: nonzero is a positive
    weights = tf.placeholder(tf.float32, [None])
    metrics = {name: getattr(tf.metrics, name)(labels, predictions, weights) for name in
               ("true_positives", "false_positives", "false_negatives", "true_negatives",
                "precision", "recall")}
    data = [(rng.integers(0, 2, 6), rng.integers(0, 2, 6) * 0.7, rng.uniform(0, 1, 6))
            for _ in range(3)]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run({n: v for n, (v, _) in metrics.items()}) == dict.fromkeys(metrics, 0.0)
        for lab, pred, w in data:
            sess.run([u for _, u in metrics.values()], {labels: lab, predictions: pred, weights: w})
        got = sess.run({n: v for n, (v, _) in metrics.items()})
    lab = np.concatenate([d[0] for d in data]).astype(bool)
    pred = np.concatenate([d[1] for d in data]).astype(bool)
    w = np.concatenate([d[2] for d in data])
    tp, fp = w[lab & pred].sum(), w[~lab & pred].sum()
    fn, tn = w[lab & ~pred].sum(), w[~lab & ~pred].sum()
    want = {"true_positives": tp, "false_positives": fp, "false_negatives": fn,
            "true_negatives": tn, "precision": tp / (tp + fp), "recall": tp / (tp + fn)}
    assert got == pytest.approx(want, rel=1e-5)
    assert "precision/true_positives/count:0" in [v.name for v in tf.local_variables()]


def test_streaming_accuracy_updated_on_a_remote_worker():
    ports = free_tcp_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    servers = [tf.train.Server(cluster, "worker", i) for i in range(2)]
    try:
        logits = tf.placeholder(tf.float32, [None, 4])
        labels = tf.placeholder(tf.int32, [None])
        with tf.device("/job:worker/task:1"):
            hit = tf.nn.in_top_k(logits, labels, 1)
            accuracy, update = tf.metrics.accuracy(tf.ones_like(hit), hit)
        assert all(v.device.startswith("/job:worker/task:1") for v in tf.local_variables())
        data = [(rng.permutation(16).reshape(4, 4).astype(np.float32), rng.integers(0, 4, 4))
                for _ in range(3)]
        with tf.Session(servers[0].target) as sess:           # the master is task 0
            sess.run(tf.local_variables_initializer())
            for x, y in data:
                sess.run(update, {logits: x, labels: y})
            got = sess.run(accuracy)
            sess.run(tf.local_variables_initializer())
            assert sess.run(accuracy) == 0.0
        want = np.mean(np.concatenate([x.argmax(1) == y for x, y in data]))
        assert got == pytest.approx(want)
    finally:
        for server in servers:
            server.stop()


# ---- over thresholds: auc, precision/recall at thresholds ------------------------------------
def _reference_counts(labels, predictions, thresholds, weights=None):
    weights = np.ones(len(labels)) if weights is None else weights
    positive = predictions[None, :] > np.asarray(thresholds)[:, None]
    tp = (positive & labels).astype(float) @ weights
    fp = (positive & ~labels).astype(float) @ weights
    fn = (~positive & labels).astype(float) @ weights
    tn = (~positive & ~labels).astype(float) @ weights
    return tp, fp, fn, tn


def test_streaming_auc_is_the_trapezoid_area_over_tf1_thresholds():
    labels = rng.random(60) < 0.4
    predictions = np.clip(labels * 0.35 + rng.random(60) * 0.65, 0, 1).astype(np.float32)
    lab, p = tf.placeholder(tf.bool, [None]), tf.placeholder(tf.float32, [None])
    roc, roc_update = tf.metrics.auc(lab, p, num_thresholds=20)
    pr, pr_update = tf.metrics.auc(lab, p, num_thresholds=20, curve="PR", summation_method="minoring")
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for start in range(0, 60, 20):
            sess.run([roc_update, pr_update], {lab: labels[start:start + 20], p: predictions[start:start + 20]})
        got_roc, got_pr = sess.run([roc, pr])
    cuts = [-1e-7] + [(i + 1) / 19 for i in range(18)] + [1 + 1e-7]
    tp, fp, fn, tn = _reference_counts(labels, predictions, cuts)
    eps = 1e-6
    tpr, fpr = (tp + eps) / (tp + fn + eps), fp / (fp + tn + eps)
    precision = (tp + eps) / (tp + fp + eps)
    assert got_roc == pytest.approx(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2), rel=1e-5)
    assert got_pr == pytest.approx(np.sum((tpr[:-1] - tpr[1:]) * np.minimum(precision[:-1], precision[1:])),
                                   rel=1e-5)
    assert 0.5 < got_roc <= 1.0
    names = sorted(v.name for v in tf.local_variables())
    assert names[:4] == ["auc/false_negatives:0", "auc/false_positives:0", "auc/true_negatives:0",
                         "auc/true_positives:0"]


def test_precision_and_recall_at_thresholds_with_weights():
    labels = np.array([True, False, True, True, False])
    predictions = np.array([0.9, 0.8, 0.4, 0.2, 0.1], np.float32)
    weights = np.array([1.0, 2.0, 1.0, 0.5, 1.0], np.float32)
    precision, p_update = tf.metrics.precision_at_thresholds(labels, predictions, [0.3, 0.85], weights=weights)
    recall, r_update = tf.metrics.recall_at_thresholds(labels, predictions, [0.3, 0.85])
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run([p_update, r_update])
        got_p, got_r = sess.run([precision, recall])
    np.testing.assert_allclose(got_p, [2 / 4, 1.0], rtol=1e-5)   # weighted tp / (tp + fp)
    np.testing.assert_allclose(got_r, [2 / 3, 1 / 3], rtol=1e-5)


def test_auc_refuses_predictions_outside_0_1_and_unknown_curves():
    value, update = tf.metrics.auc(tf.constant([True, False]), tf.constant([0.5, 1.5]))
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
            sess.run(update)
    with pytest.raises(ValueError, match="ROC or PR"):
        tf.metrics.auc(tf.constant([True]), tf.constant([0.5]), curve="XY")


def test_confusion_matrix_counts_pairs_and_checks_bounds():
    labels, predictions = [0, 2, 1, 2, 2], [0, 1, 1, 2, 0]
    counted = tf.confusion_matrix(labels, predictions)
    weighted = tf.math.confusion_matrix(labels, predictions, num_classes=4,
                                        weights=[1.0, 0.5, 2.0, 1.0, 1.0], dtype=tf.float32)
    assert weighted.shape.as_list() == [4, 4]
    with tf.Session() as sess:
        got, got_w = sess.run([counted, weighted])
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bound"):
            sess.run(tf.confusion_matrix([0, 3], [0, 1], num_classes=3))
    want = np.zeros((3, 3), np.int32)
    for a, b in zip(labels, predictions):
        want[a, b] += 1
    np.testing.assert_array_equal(got, want)
    assert got_w[2, 1] == 0.5 and got_w[1, 1] == 2.0 and got_w.sum() == 5.5


def test_mean_iou_and_mean_per_class_accuracy_over_batches():
    labels = rng.integers(0, 3, 30)
    predictions = np.where(rng.random(30) < 0.7, labels, rng.integers(0, 3, 30))
    lab, p = tf.placeholder(tf.int64, [None]), tf.placeholder(tf.int64, [None])
    iou, iou_update = tf.metrics.mean_iou(lab, p, num_classes=4)   # class 3 never appears
    accuracy, accuracy_update = tf.metrics.mean_per_class_accuracy(lab, p, num_classes=3)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for start in range(0, 30, 10):
            matrix, per_class = sess.run([iou_update, accuracy_update],
                                         {lab: labels[start:start + 10], p: predictions[start:start + 10]})
        got_iou, got_accuracy = sess.run([iou, accuracy])
    cm = np.zeros((4, 4))
    for a, b in zip(labels, predictions):
        cm[a, b] += 1
    np.testing.assert_array_equal(matrix, cm)   # TF1: the update op is the running matrix
    union = cm.sum(0) + cm.sum(1) - np.diag(cm)
    assert got_iou == pytest.approx(np.mean(np.diag(cm)[union > 0] / union[union > 0]), rel=1e-6)
    class_accuracy = np.diag(cm)[:3] / cm.sum(1)[:3]
    np.testing.assert_allclose(per_class, class_accuracy, rtol=1e-6)
    assert got_accuracy == pytest.approx(class_accuracy.mean(), rel=1e-6)


def test_error_means_and_percentage_below():
    y = rng.standard_normal(12).astype(np.float32)
    y_hat = (y + rng.standard_normal(12) * 0.3).astype(np.float32)
    values = {
        "mae": tf.metrics.mean_absolute_error(y, y_hat),
        "rmse": tf.metrics.root_mean_squared_error(y, y_hat),
        "relative": tf.metrics.mean_relative_error(y, y_hat, normalizer=np.abs(y) + 1.0),
        "below": tf.metrics.percentage_below(y, 0.25),
        "tensor": tf.metrics.mean_tensor(np.arange(3, dtype=np.float32)),
    }
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run([u for _, u in values.values()])
        sess.run(values["tensor"][1])   # the same values again: the mean stays
        got = sess.run({k: v for k, (v, _) in values.items()})
    assert got["mae"] == pytest.approx(np.abs(y - y_hat).mean(), rel=1e-5)
    assert got["rmse"] == pytest.approx(np.sqrt(((y - y_hat) ** 2).mean()), rel=1e-5)
    assert got["relative"] == pytest.approx((np.abs(y - y_hat) / (np.abs(y) + 1)).mean(), rel=1e-5)
    assert got["below"] == pytest.approx((y < 0.25).mean())
    np.testing.assert_allclose(got["tensor"], [0.0, 1.0, 2.0])
