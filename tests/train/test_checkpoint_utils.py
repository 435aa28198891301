"""Checkpoint files for evaluation jobs (checkpoints_iterator & co.) and the SGDR schedules."""

import math
import threading
import time

import numpy as np
import pytest

import zmtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_checkpoints_iterator_yields_each_new_checkpoint_then_times_out(tmp_path):
    v = tf.Variable(0.0)
    saver = tf.train.Saver(max_to_keep=10)
    seen = []

    def evaluator():
        for path in tf.train.checkpoints_iterator(str(tmp_path), timeout=1.5):
            seen.append(path)

    with tf.Session() as sess:
        sess.run(v.initializer)
        thread = threading.Thread(target=evaluator)
        thread.start()
        for step in (1, 2, 3):
            sess.run(v.assign(float(step)))
            saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
            time.sleep(1.2)   # the iterator looks once a second, as TF's
        thread.join(10)
    assert [p.rsplit("-", 1)[1] for p in seen] == ["1", "2", "3"]
    assert tf.train.load_checkpoint(str(tmp_path)).get_tensor("Variable") == 3.0
    mtimes = tf.train.get_checkpoint_mtimes(seen + [str(tmp_path / "missing")])
    assert len(mtimes) == 3 and mtimes == sorted(mtimes)
    tf.train.remove_checkpoint(seen[0])
    assert not tf.train.checkpoint_exists(seen[0]) and tf.train.checkpoint_exists(seen[1])
    assert not (tmp_path / "model.ckpt-1.meta").exists() and (tmp_path / "model.ckpt-2.meta").exists()


def test_checkpoints_iterator_asks_timeout_fn_whether_to_stop(tmp_path):
    asked = []
    found = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0.1,
                                               timeout_fn=lambda: asked.append(1) or len(asked) >= 2))
    assert found == [] and len(asked) == 2


def test_cosine_decay_restarts_follows_sgdr():
    step = tf.placeholder(tf.int64, [])
    plain = tf.train.cosine_decay_restarts(0.1, step, 10)                   # periods 10, 20, 40 ...
    flat = tf.train.cosine_decay_restarts(0.1, step, 10, t_mul=1.0, m_mul=0.5, alpha=0.1)
    with tf.Session() as sess:
        got = {k: sess.run([plain, flat], {step: k}) for k in (0, 5, 10, 20, 30)}
    assert got[0][0] == pytest.approx(0.1) and got[10][0] == pytest.approx(0.1)   # restart
    assert got[5][0] == pytest.approx(0.05, rel=1e-5)
    assert got[20][0] == pytest.approx(0.1 * 0.5 * (1 + math.cos(math.pi * 0.5)), rel=1e-5)
    assert got[30][0] == pytest.approx(0.1, rel=1e-5)                            # second restart
    assert got[20][1] == pytest.approx(0.1 * (0.9 * 0.25 + 0.1), rel=1e-5)        # m_mul ** 2


def test_noisy_linear_cosine_decay_is_noisy_around_its_mean():
    step = tf.placeholder(tf.int64, [])
    noisy = tf.train.noisy_linear_cosine_decay(1.0, step, 100, initial_variance=0.01)
    quiet = tf.train.linear_cosine_decay(1.0, step, 100)
    with tf.Session() as sess:
        draws = np.array([sess.run(noisy, {step: 10}) for _ in range(200)])
        mean = sess.run(quiet, {step: 10})
    cosine = 0.5 * (1 + math.cos(math.pi * 2 * 0.5 * 0.1))
    assert draws.std() > 0 and abs(draws.mean() - mean) < 4 * draws.std() / math.sqrt(200) + 1e-6
    assert draws.std() == pytest.approx(math.sqrt(0.01 / 11 ** 0.55) * cosine, rel=0.25)
