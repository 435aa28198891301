"""``tf.estimator.EstimatorSpec``: what a model_fn returns, checked as TF checks it.

TRAIN needs ``loss`` and ``train_op``, EVAL needs ``loss``, PREDICT needs ``predictions``;
every tensor must belong to the graph being built, hooks must be SessionRunHooks and
metrics ``(value, update_op)`` pairs. ``export_outputs`` (a dict of tf.estimator.export
ExportOutputs) become the signatures of ``Estimator.export_saved_model``.
"""

from __future__ import annotations

import collections
from typing import Any

from zmtf.client.monitored_session import Scaffold
from zmtf.estimator.mode_keys import ModeKeys
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.ops.array_ops import reshape
from zmtf.ops.variables import Variable
from zmtf.training.session_run_hook import SessionRunHook

LOSS_METRIC_KEY = "loss"
_GRAPH_ERROR = ("{0} with {1} must be from the default graph. Possible causes of this error "
                "include: \n\n1) {0} was created outside the context of the default graph.\n\n"
                "2) The object passed through to EstimatorSpec was not created in the most "
                "recent call to \"model_fn\".")


def _check_graph(value: Any, what: str, name: str) -> None:
    if value.graph is not get_default_graph():
        raise ValueError(_GRAPH_ERROR.format(what, name))


def _check_is_tensor(value: Any, name: str) -> Any:
    if isinstance(value, Variable):
        value = value.value()
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be Tensor, given: {value}")
    return value


def _train_op(train_op: Any, mode: str) -> Any:
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if isinstance(train_op, Variable):
        train_op = train_op.op
    if not isinstance(train_op, (Operation, Tensor)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    _check_graph(train_op, "train_op", train_op.name)
    return train_op


def _loss(loss: Any, mode: str) -> Any:
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    if loss.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    _check_graph(loss, "loss", loss.name)
    return loss if loss.shape.ndims in (None, 0) else reshape(loss, [])


def _predictions(predictions: Any, mode: str) -> Any:
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        checked = {key: _check_is_tensor(value, f"predictions[{key}]") for key, value in predictions.items()}
        for key, value in checked.items():
            _check_graph(value, "prediction values", f"{key}: {value.name}")
        return checked
    predictions = _check_is_tensor(predictions, "predictions")
    _check_graph(predictions, "prediction values", predictions.name)
    return predictions


def check_types(items: Any, kind: type, message: str) -> tuple:
    """items (None: none) as a tuple; one not a ``kind`` is a TypeError, message.format(it)."""
    items = tuple(items or ())
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(message.format(item))
    return items


def _hooks(hooks: Any) -> tuple:
    return check_types(hooks, SessionRunHook, "All hooks must be SessionRunHook instances, given: {}")


def _eval_metric_ops(eval_metric_ops: Any) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError("Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                            f"given: {value} for key: {key}")
        for part in value:
            _check_graph(part, "eval_metric_ops", f"{key}: {part.name}")
    return dict(eval_metric_ops)


def _scaffold(scaffold: Any) -> Scaffold:
    scaffold = scaffold or Scaffold()
    if not isinstance(scaffold, Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
    return scaffold


_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
           "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks", "prediction_hooks"]


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """``tf.estimator.EstimatorSpec(mode, predictions=, loss=, train_op=, eval_metric_ops=, ...)``."""

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None, train_op: Any = None,
                eval_metric_ops: Any = None, export_outputs: Any = None, training_chief_hooks: Any = None,
                training_hooks: Any = None, scaffold: Any = None, evaluation_hooks: Any = None,
                prediction_hooks: Any = None) -> EstimatorSpec:
        return super().__new__(
            cls, mode=mode, predictions=_predictions(predictions, mode), loss=_loss(loss, mode),
            train_op=_train_op(train_op, mode), eval_metric_ops=_eval_metric_ops(eval_metric_ops),
            export_outputs=export_outputs, training_chief_hooks=_hooks(training_chief_hooks),
            training_hooks=_hooks(training_hooks), scaffold=_scaffold(scaffold),
            evaluation_hooks=_hooks(evaluation_hooks), prediction_hooks=_hooks(prediction_hooks))

    def _replace(self, **changes: Any) -> EstimatorSpec:
        if "mode" in changes and self.mode != changes["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(**{**self._asdict(), **changes})
