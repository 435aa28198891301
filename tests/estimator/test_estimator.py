"""Estimator.train / evaluate / predict on a linear model, checked against numpy."""

import os

import numpy as np
import pytest

import zmtf as tf
from zmtf.training.summary_iterator import summary_iterator

from estimator_models import X, Y, linear_model_fn, numpy_linear_steps, train_input


def make(tmp_path, **config):
    return tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path), params={},
                                  config=tf.estimator.RunConfig(**config) if config else None)


def test_train_steps_match_numpy_gradient_descent(tmp_path):
    est = make(tmp_path)
    assert est.train(train_input(), steps=5) is est
    w, b = numpy_linear_steps(X, Y, 5, 4)
    np.testing.assert_allclose(est.get_variable_value("w"), w, rtol=1e-5)
    np.testing.assert_allclose(est.get_variable_value("b"), b, rtol=1e-5)
    assert est.get_variable_value("global_step") == 5
    assert sorted(est.get_variable_names()) == ["b", "global_step", "w"]
    assert est.latest_checkpoint() == os.path.join(str(tmp_path), "model.ckpt-5")


def test_train_resumes_from_checkpoint_and_max_steps_stops_or_skips(tmp_path):
    est = make(tmp_path)
    est.train(train_input(), steps=3)
    est.train(train_input(), steps=2)           # a new graph, restored from model.ckpt-3
    assert est.get_variable_value("global_step") == 5
    est.train(train_input(), max_steps=7)
    assert est.get_variable_value("global_step") == 7
    w7 = est.get_variable_value("w")
    est.train(train_input(), max_steps=7)       # already there: returns at once, nothing saved
    assert est.latest_checkpoint().endswith("model.ckpt-7")
    np.testing.assert_array_equal(est.get_variable_value("w"), w7)


def test_train_until_input_ends(tmp_path):
    est = make(tmp_path)
    est.train(train_input(batch_size=3, num_epochs=2))   # 16 rows in batches of 3: 6 steps
    assert est.get_variable_value("global_step") == 6


def test_evaluate_metrics_match_numpy_and_are_written_as_summaries(tmp_path):
    est = make(tmp_path)
    est.train(train_input(), steps=4)
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    results = est.evaluate(train_input(batch_size=3, num_epochs=1), name="holdout")
    residual = X @ w + b - Y
    batch_losses = [np.mean(residual[i:i + 3] ** 2) for i in range(0, 8, 3)]
    assert set(results) == {"loss", "mae", "global_step"}
    assert results["global_step"] == 4
    np.testing.assert_allclose(results["mae"], np.abs(residual).mean(), rtol=1e-5)
    np.testing.assert_allclose(results["loss"], np.mean(batch_losses), rtol=1e-5)  # mean of batch losses
    events = [e for path in (tmp_path / "eval_holdout").iterdir()
              for e in summary_iterator(str(path)) if e.HasField("summary")]
    assert [e.step for e in events] == [4]
    tags = {v.tag: v.simple_value for v in events[0].summary.value}
    assert set(tags) == {"loss", "mae"}
    np.testing.assert_allclose(tags["mae"], results["mae"], rtol=1e-6)


def test_evaluate_steps_and_without_checkpoint_uses_initial_values(tmp_path):
    est = make(tmp_path)
    results = est.evaluate(train_input(batch_size=2), steps=2)   # endless input, 2 batches
    assert results["global_step"] == 0
    np.testing.assert_allclose(results["mae"], np.abs(Y[:4]).mean(), rtol=1e-6)  # w = b = 0


def test_predict_yields_examples_or_batches_and_filters_keys(tmp_path):
    est = make(tmp_path)
    est.train(train_input(), steps=2)
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    predict_input = tf.estimator.inputs.numpy_input_fn({"x": X}, batch_size=3, shuffle=False)
    singles = list(est.predict(predict_input))
    assert len(singles) == 8 and set(singles[0]) == {"y", "twice"}
    np.testing.assert_allclose(np.stack([p["y"] for p in singles]), X @ w + b, rtol=1e-5)
    batches = list(est.predict(predict_input, predict_keys=["twice"], yield_single_examples=False))
    assert [len(batch["twice"]) for batch in batches] == [3, 3, 2] and set(batches[0]) == {"twice"}
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        next(est.predict(predict_input, predict_keys=["nope"]))


def test_model_fn_signatures_and_dataset_input(tmp_path):
    seen = {}

    def model_fn(features, mode, config):     # no labels, no params
        seen["mode"], seen["config"] = mode, config
        v = tf.get_variable("v", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features - v))
        with tf.control_dependencies([loss]):   # a step that reads no input would run past its end
            train_op = tf.group(tf.assign_add(v, 1.0), tf.assign_add(tf.train.get_global_step(), 1))
        return tf.estimator.EstimatorSpec(mode, loss=loss, predictions=features, train_op=train_op)

    def input_fn(params):
        seen["params"] = params
        return tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(input_fn)
    assert est.get_variable_value("v") == 3.0 and seen["mode"] == "train" and seen["params"] == {}
    assert isinstance(seen["config"], tf.estimator.RunConfig)
    assert list(est.predict(input_fn)) == [0, 1, 2, 3, 4, 5]


def test_model_fn_and_input_errors(tmp_path):
    with pytest.raises(ValueError, match="must include features argument"):
        tf.estimator.Estimator(lambda x, labels: None)
    with pytest.raises(ValueError, match="does not include params argument"):
        tf.estimator.Estimator(lambda features, labels: None, params={"a": 1})
    with pytest.raises(ValueError, match=r"has following not expected args: \['extra'\]"):
        tf.estimator.Estimator(lambda features, extra: None)
    est = tf.estimator.Estimator(lambda features, mode: None, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="model_fn does not take labels, but input_fn returns labels"):
        est.train(train_input(), steps=1)
    est = tf.estimator.Estimator(lambda features, labels, mode: "spec", model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        est.train(train_input(), steps=1)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(train_input(), steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0, given: 0"):
        est.train(train_input(), steps=0)
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        est.train(train_input(), steps=1, hooks=[object()])
    with pytest.raises(ValueError, match="Could not find trained model in model_dir"):
        est.get_variable_names()
    with pytest.raises(ValueError, match="`model_dir` are set both in constructor and `RunConfig`"):
        tf.estimator.Estimator(linear_model_fn, model_dir="/a", params={},
                               config=tf.estimator.RunConfig(model_dir="/b"))


def test_model_dir_defaults_to_a_temporary_folder():
    est = tf.estimator.Estimator(linear_model_fn, params={})
    assert os.path.isdir(est.model_dir) and est.config.model_dir == est.model_dir
    os.rmdir(est.model_dir)


def test_saving_listeners_see_each_checkpoint_and_keep_checkpoint_max(tmp_path):
    steps = []

    class Listener(tf.estimator.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            steps.append(global_step_value)

    est = make(tmp_path, save_checkpoints_steps=2, keep_checkpoint_max=2)
    est.train(train_input(), steps=6, saving_listeners=[Listener()])
    assert steps == [0, 2, 4, 6]
    assert list(tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths) == [
        os.path.join(str(tmp_path), "model.ckpt-4"), os.path.join(str(tmp_path), "model.ckpt-6")]
    assert not os.path.exists(os.path.join(str(tmp_path), "model.ckpt-2.index"))


def test_warm_start_from_another_model_dir(tmp_path):
    source = make(tmp_path / "a")
    source.train(train_input(), steps=3)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "b"), params={"learning_rate": 0.0},
                                 warm_start_from=str(tmp_path / "a"))
    est.train(train_input(), steps=1)
    np.testing.assert_array_equal(est.get_variable_value("w"), source.get_variable_value("w"))
    assert est.get_variable_value("global_step") == 1     # only trainable variables warm-start
