"""tf.contrib.opt.DropStaleGradientOptimizer: fresh gradients are applied, stale ones are
dropped and counted (TF 1.15: a dropped update does not advance the global step)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zmtf as tf
from zmtf.contrib.opt import DropStaleGradientOptimizer
from zmtf.testing import running_servers


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def build(staleness):
    """loss = 3 w; the gradient waits on a gate queue, and a ready queue says when the
    optimizer has recorded its step, so another session can move the step in between."""
    w = tf.Variable(1.0, name="w")
    step = tf.train.get_or_create_global_step()
    opt = DropStaleGradientOptimizer(tf.train.GradientDescentOptimizer(0.5), staleness)
    [(grad, var)] = opt.compute_gradients(3.0 * w, [w])
    gate = tf.FIFOQueue(1, tf.float32, shapes=[], shared_name="gate")
    ready = tf.FIFOQueue(1, tf.int64, shapes=[], shared_name="ready")
    announce = ready.enqueue(opt._local_step)
    with tf.control_dependencies([announce]):
        gated = grad * gate.dequeue()
    train = opt.apply_gradients([(gated, var)], global_step=step)
    return dict(w=w, step=step, train=train, gate=gate.enqueue(1.0), ready=ready.dequeue(),
                bump=step.assign_add(1), init=tf.global_variables_initializer(),
                stale=tf.global_variables()[-1])


def train_while_others_step(others_steps, staleness):
    """One training step; while its gradient is in flight another session runs
    ``others_steps`` global step increments. Returns (dropped?, w, global step, counter)."""
    with running_servers({"worker": 1}) as servers:
        target = servers[("worker", 0)].target
        ops = build(staleness)
        with tf.Session(target) as trainer, tf.Session(target) as other:
            trainer.run(ops["init"])
            result = {}
            thread = threading.Thread(target=lambda: result.setdefault("out", trainer.run(ops["train"])))
            thread.start()
            assert other.run(ops["ready"]) == 0           # the step the gradient was computed at
            for _ in range(others_steps):
                other.run(ops["bump"])
            other.run(ops["gate"])
            thread.join(10)
            assert not thread.is_alive()
            return (result["out"], *trainer.run([ops["w"], ops["step"], ops["stale"]]))


def test_stale_counter_is_named_and_next_to_the_step():
    ops = build(2)
    assert ops["stale"].op.name == "stale_counter"
    assert tf.global_variables()[-1] is ops["stale"]


@pytest.mark.parametrize("others_steps", [0, 2])
def test_gradient_within_staleness_is_applied(others_steps):
    dropped, w, step, counter = train_while_others_step(others_steps, staleness=2)
    assert dropped == 0.0 and counter == 0.0
    np.testing.assert_allclose(w, 1.0 - 0.5 * 3.0)
    assert step == others_steps + 1


def test_stale_gradient_is_dropped_and_counted():
    dropped, w, step, counter = train_while_others_step(3, staleness=2)
    assert dropped == 1.0 and counter == 1.0
    assert w == 1.0            # not applied
    assert step == 3           # the other session's steps only


def test_needs_a_global_step_and_compute_gradients_first():
    w = tf.Variable(1.0)
    opt = DropStaleGradientOptimizer(tf.train.GradientDescentOptimizer(0.1), 1)
    with pytest.raises(ValueError, match="needs a global step"):
        opt.compute_gradients(w * 2.0)
    with pytest.raises(ValueError, match="call compute_gradients"):
        opt.apply_gradients([(tf.constant(1.0), w)], global_step=tf.train.get_or_create_global_step())
