"""train_and_evaluate locally, and as ps + chief + worker + evaluator over real tcp servers.

The distributed run keeps every task in this process (threads), each Estimator built while
TF_CONFIG names its task, exactly as separate processes would see it; the example test
runs the same roles as real processes.
"""

import json
import threading

import numpy as np
import pytest

import zmtf as tf
from zmtf.estimator.training import start_std_server
from zmtf.testing import free_tcp_ports

from estimator_models import X, Y, linear_model_fn, train_input


def specs(max_steps, hooks=()):
    return (tf.estimator.TrainSpec(train_input(), max_steps=max_steps, hooks=list(hooks)),
            tf.estimator.EvalSpec(train_input(num_epochs=1), steps=None, start_delay_secs=0, throttle_secs=0))


def test_local_train_and_evaluate_evaluates_after_checkpoints_and_at_the_end(tmp_path):
    evaluated = []

    class Record(tf.estimator.SessionRunHook):
        def end(self, session):
            evaluated.append(int(session.run(tf.train.get_global_step())))

    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path), params={},
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=3))
    train_spec, _ = specs(7)
    eval_spec = tf.estimator.EvalSpec(train_input(num_epochs=1), steps=None, hooks=[Record()], throttle_secs=0)
    metrics, exports = tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
    assert evaluated == [3, 6, 7] and exports == []     # not the step-0 checkpoint
    assert metrics["global_step"] == 7
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    np.testing.assert_allclose(metrics["mae"], np.abs(X @ w + b - Y).mean(), rtol=1e-5)


def test_spec_errors():
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        tf.estimator.TrainSpec(1)
    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        tf.estimator.TrainSpec(train_input(), max_steps=0)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0"):
        tf.estimator.EvalSpec(train_input(), throttle_secs=-1)
    est = tf.estimator.Estimator(linear_model_fn, params={})
    with pytest.raises(TypeError, match="`eval_spec` must have type `tf.estimator.EvalSpec`"):
        tf.estimator.train_and_evaluate(est, specs(1)[0], None)


class CountSteps(tf.estimator.SessionRunHook):
    """Count this task's own training steps; the chief holds its 5th step until the worker has run."""

    def __init__(self, wait_for=None):
        self.steps, self.started, self._wait_for = 0, threading.Event(), wait_for

    def after_run(self, run_context, run_values):
        self.steps += 1
        self.started.set()
        if self._wait_for is not None and self.steps == 5:
            assert self._wait_for.wait(60), "the worker never ran a step"


def test_distributed_ps_chief_worker_and_evaluator(tmp_path, monkeypatch):
    ports = free_tcp_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "chief": [f"127.0.0.1:{ports[1]}"],
               "worker": [f"127.0.0.1:{ports[2]}"]}

    def estimator_for(job):
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": job, "index": 0}}))
        config = tf.estimator.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=10,
                                        experimental_max_worker_delay_secs=0, session_creation_timeout_secs=60)
        return tf.estimator.Estimator(linear_model_fn, params={}, config=config)

    ps_server = start_std_server(estimator_for("ps").config)   # what the ps role serves (then joins)
    worker_steps = CountSteps()
    chief_steps = CountSteps(wait_for=worker_steps.started)
    roles = {"chief": chief_steps, "worker": worker_steps, "evaluator": None}
    errors, threads = [], []
    for job, hook in roles.items():
        est = estimator_for(job)
        train_spec, eval_spec = specs(40, [hook] if hook else [])

        def play(est=est, train_spec=train_spec, eval_spec=eval_spec):
            try:
                tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)
        threads.append(threading.Thread(target=play, daemon=True))
        threads[-1].start()
    try:
        for thread in threads:
            thread.join(60)
        assert not errors, errors
        assert not any(thread.is_alive() for thread in threads)
    finally:
        ps_server.stop()
    assert chief_steps.steps > 0 and worker_steps.steps > 0
    assert chief_steps.steps + worker_steps.steps >= 40
    assert tf.train.load_variable(str(tmp_path), "global_step") >= 40
    events = [e for path in (tmp_path / "eval").iterdir() for e in tf.train.summary_iterator(str(path))
              if e.HasField("summary")]
    assert events and max(e.step for e in events) >= 40          # the evaluator saw the last one
    w, b = tf.train.load_variable(str(tmp_path), "w"), tf.train.load_variable(str(tmp_path), "b")
    final_mae = [v.simple_value for v in events[-1].summary.value if v.tag == "mae"][0]
    np.testing.assert_allclose(final_mae, np.abs(X @ w + b - Y).mean(), rtol=1e-4)
