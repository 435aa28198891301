"""``tf.estimator.train_and_evaluate``: one call that does what this process's TF_CONFIG says.

No cluster: train locally, evaluating after each new checkpoint (at most every
``throttle_secs``) and at the end. In a cluster each task plays its role, as in TF1:

* ``ps``: serve its variables (a ``tf.train.Server``) until SIGTERM/SIGINT or ``stop()``;
* ``chief`` / ``worker`` (and the legacy ``master``): start the task's server and train on it,
  variables placed on the ps tasks; the chief initializes and checkpoints, the workers wait
  for it. A worker first waits ``(task_id + 1) * 5`` s, at most 60 s, as TF does; set
  ``RunConfig(experimental_max_worker_delay_secs=0)`` to start at once;
* ``evaluator``: after ``start_delay_secs``, evaluate each new checkpoint in ``model_dir``
  (at most one per ``throttle_secs``) until one reaches the TrainSpec's ``max_steps``.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import time
from typing import Any, Callable

from zmtf.distributed.server import Server
from zmtf.estimator.estimator import Estimator
from zmtf.estimator.model_fn import check_types
from zmtf.estimator.run_config import RunConfig, TaskType
from zmtf.formats.config_proto import ConfigProto
from zmtf.framework.graph import GraphKeys
from zmtf.training.checkpoint_utils import checkpoints_iterator
from zmtf.training.session_run_hook import CheckpointSaverListener, SecondOrStepTimer, SessionRunHook

log = logging.getLogger("tensorflow")

_MAX_DELAY_SECS = 60
_DELAY_SECS_PER_WORKER = 5
_TRAINER_JOBS = (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER)


def _validate_input_fn(input_fn: Any) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validate_typed(items: Any, kind: type, what: str) -> tuple:
    return check_types(items, kind, f"All {what} must be `{kind.__name__}` instances, given: {{}}")


def _validate_exporters(exporters: Any) -> tuple:
    """Exporters are kept and called as TF calls them (``name`` and ``export(...)``): an
    ``Exporter`` (LatestExporter, FinalExporter) or any object with both."""
    if not exporters:
        return ()
    exporters = (exporters,) if hasattr(exporters, "export") else tuple(exporters)
    names = [getattr(e, "name", None) for e in exporters]
    if not all(callable(getattr(e, "export", None)) for e in exporters):
        raise TypeError(f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, found {exporters}.")
    if not all(isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
        raise ValueError(f"`exporters` must have unique, non-empty string names. All exporter names: {names}")
    return exporters


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """``tf.estimator.TrainSpec(input_fn, max_steps=None, hooks=None, saving_listeners=None)``."""

    def __new__(cls, input_fn: Callable[..., Any], max_steps: int | None = None, hooks: Any = None,
                saving_listeners: Any = None) -> TrainSpec:
        _validate_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, _validate_typed(hooks, SessionRunHook, "hooks"),
                               _validate_typed(saving_listeners, CheckpointSaverListener, "saving_listeners"))


class EvalSpec(collections.namedtuple("EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters",
                                                   "start_delay_secs", "throttle_secs"])):
    """``tf.estimator.EvalSpec(input_fn, steps=100, name=None, hooks=None, exporters=None,
    start_delay_secs=120, throttle_secs=600)``."""

    def __new__(cls, input_fn: Callable[..., Any], steps: int | None = 100, name: str | None = None,
                hooks: Any = None, exporters: Any = None, start_delay_secs: float = 120,
                throttle_secs: float = 600) -> EvalSpec:
        _validate_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(cls, input_fn, steps, name, _validate_typed(hooks, SessionRunHook, "hooks"),
                               _validate_exporters(exporters), start_delay_secs, throttle_secs)


class _Evaluator:
    """Evaluate the newest checkpoint, once per checkpoint, and run the exporters on it."""

    def __init__(self, estimator: Estimator, eval_spec: EvalSpec, max_training_steps: int | None) -> None:
        self._estimator, self._spec, self._max_steps = estimator, eval_spec, max_training_steps
        self._previous: str | None = None

    def evaluate_and_export(self, checkpoint_path: str | None = None) -> tuple[dict | None, list]:
        path = checkpoint_path or self._estimator.latest_checkpoint()
        if not path or path == self._previous:
            log.warning("No new checkpoint ready for evaluation; skipping this evaluation.")
            return None, []
        metrics = self._estimator.evaluate(self._spec.input_fn, steps=self._spec.steps, name=self._spec.name,
                                           checkpoint_path=path, hooks=self._spec.hooks)
        self._previous = path
        final = bool(self._max_steps) and metrics[GraphKeys.GLOBAL_STEP] >= self._max_steps
        base = os.path.join(self._estimator.model_dir, "export")
        exports = [exporter.export(estimator=self._estimator, export_path=os.path.join(base, exporter.name),
                                   checkpoint_path=path, eval_result=metrics, is_the_final_export=final)
                   for exporter in self._spec.exporters]
        return metrics, exports


class _EvaluateAfterCheckpoints(CheckpointSaverListener):
    """Evaluate after each checkpoint but the first (at most every throttle_secs), and at the end."""

    def __init__(self, evaluator: _Evaluator, throttle_secs: float) -> None:
        self._evaluator, self._throttle_secs = evaluator, throttle_secs
        self.eval_result: dict | None = None
        self.export_results: list | None = None

    def begin(self) -> None:
        self._timer = SecondOrStepTimer(every_secs=self._throttle_secs)
        self._is_first_run = True

    def after_save(self, session: Any, global_step_value: int) -> None:
        if self._is_first_run:
            self._is_first_run = False
        elif self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            log.info("Skip the current checkpoint eval due to throttle secs (%s secs).", self._throttle_secs)

    def end(self, session: Any, global_step_value: int) -> None:
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value: int) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        metrics, exports = self._evaluator.evaluate_and_export()
        if metrics is None:
            raise RuntimeError("There was no new checkpoint after the training. Eval status: no new checkpoint")
        self.eval_result, self.export_results = metrics, exports


def _check_specs(estimator: Any, train_spec: Any, eval_spec: Any) -> None:
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}")


def train_and_evaluate(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> Any:
    """Train and evaluate locally, or play this task's role in a TF_CONFIG cluster (module docstring).

    Locally it returns ``(eval metrics, export results)`` of the last evaluation, as TF 1.15
    does; a cluster task returns None when its role is done.
    """
    _check_specs(estimator, train_spec, eval_spec)
    config = estimator.config
    if config.task_type == TaskType.EVALUATOR and config.task_id > 0:
        raise ValueError("For distributed training, there can only be one `evaluator` task (with task id 0).  "
                         f"Given task id {config.task_id}")
    if not config.cluster_spec and config.task_type != TaskType.EVALUATOR:
        log.info("Running training and evaluation locally (non-distributed).")
        return _run_local(estimator, train_spec, eval_spec)
    if not config.task_type:
        raise ValueError("`estimator.config` must have task_type set. This usually means TF_CONFIG "
                         "environment is not set correctly.")
    if config.task_type == "local":
        raise ValueError("`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and `task` properties "
                         "in TF_CONFIG absent triggers train and evaluate `Estimator` locally (non-distributed).")
    role = _ROLES.get(config.task_type)
    if role is None:
        raise ValueError(f"Task type {config.task_type} is not supported. Supported task types are "
                         f"{sorted(_ROLES)}")
    role(estimator, train_spec, eval_spec)
    return None


def _run_local(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> tuple[Any, Any]:
    config = estimator.config
    log.info("Start train and evaluate loop. The evaluate will happen after every checkpoint. Checkpoint "
             "frequency is determined based on RunConfig arguments: save_checkpoints_steps %s or "
             "save_checkpoints_secs %s.", config.save_checkpoints_steps, config.save_checkpoints_secs)
    listener = _EvaluateAfterCheckpoints(_Evaluator(estimator, eval_spec, train_spec.max_steps),
                                         eval_spec.throttle_secs)
    estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps, hooks=list(train_spec.hooks),
                    saving_listeners=list(train_spec.saving_listeners) + [listener])
    return listener.eval_result, listener.export_results


def start_std_server(config: RunConfig) -> Server | None:
    """Start this task's tf.train.Server (none for a one-task cluster's trainer, as TF)."""
    if not config.cluster_spec or not config.task_type or config.task_id is None:
        raise RuntimeError("Could not start server; be sure to specify cluster_spec, task_type, and task in "
                           "RunConfig or set the TF_CONFIG environment variable.")
    if not config.master:
        jobs = config.cluster_spec.jobs
        if len(jobs) == 1 and len(config.cluster_spec.job_tasks(jobs[0])) == 1 \
                and config.task_type in _TRAINER_JOBS:
            log.info("Skip starting Tensorflow server as there is only one node in the cluster.")
            return None
        raise RuntimeError("Could not start server; be sure to specify master in RunConfig or set the "
                           "TF_CONFIG environment variable.")
    log.info("Start Tensorflow server.")
    session_config = config.session_config
    server_config = ConfigProto(inter_op_parallelism_threads=session_config.inter_op_parallelism_threads,
                                intra_op_parallelism_threads=session_config.intra_op_parallelism_threads) \
        if session_config is not None else None
    return Server(config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
                  config=server_config, protocol=config.protocol)


def _is_google_env() -> bool:
    return json.loads(os.environ.get("TF_CONFIG") or "{}").get("environment") == "google"


def _worker_delay_secs(config: RunConfig) -> float:
    if config.task_type != TaskType.WORKER:
        return 0
    limit = _MAX_DELAY_SECS if config.experimental_max_worker_delay_secs is None \
        else int(config.experimental_max_worker_delay_secs)
    return min(limit, (config.task_id + 1) * _DELAY_SECS_PER_WORKER)


def _train_distributed(estimator: Estimator, train_spec: TrainSpec, saving_listeners: Any = ()) -> None:
    config = estimator.config
    # NOTE: the task's server must outlive its training session (it is the session's master);
    # TF's lives until the process ends, this one is stopped when training is done.
    server = None if _is_google_env() else start_std_server(config)
    try:
        delay = _worker_delay_secs(config)
        if delay > 0:
            log.info("Waiting %d secs before starting training.", delay)
            time.sleep(delay)
        estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps, hooks=list(train_spec.hooks),
                        saving_listeners=list(saving_listeners))
    finally:
        if server is not None:
            server.stop()


def _run_chief(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    _train_distributed(estimator, train_spec, train_spec.saving_listeners)


def _run_worker(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    _train_distributed(estimator, train_spec)


def _run_master(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    listener = _EvaluateAfterCheckpoints(_Evaluator(estimator, eval_spec, train_spec.max_steps),
                                         eval_spec.throttle_secs)
    _train_distributed(estimator, train_spec, tuple(train_spec.saving_listeners) + (listener,))


def _run_ps(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    from zmtf.distributed.serving import serve_until_signalled

    server = start_std_server(estimator.config)
    if server is not None:
        serve_until_signalled(server)


def _run_evaluator(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    """Evaluate each new checkpoint until one reaches max_steps."""
    if eval_spec.start_delay_secs:
        log.info("Waiting %f secs before starting eval.", eval_spec.start_delay_secs)
        time.sleep(eval_spec.start_delay_secs)
    evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
    for path in checkpoints_iterator(estimator.model_dir, min_interval_secs=eval_spec.throttle_secs):
        metrics, _ = evaluator.evaluate_and_export(path)
        step = metrics[GraphKeys.GLOBAL_STEP] if metrics else None
        if step and train_spec.max_steps and step >= train_spec.max_steps:
            log.info("Exiting evaluation, global_step=%s >= train max_steps=%s", step, train_spec.max_steps)
            return


_ROLES: dict[str, Callable[[Estimator, TrainSpec, EvalSpec], None]] = {
    TaskType.CHIEF: _run_chief, TaskType.WORKER: _run_worker, TaskType.MASTER: _run_master,
    TaskType.PS: _run_ps, TaskType.EVALUATOR: _run_evaluator,
}
