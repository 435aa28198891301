"""``tf.estimator.Estimator``: train, evaluate and predict a model_fn, each in a fresh graph.

Every call builds its own graph from ``input_fn`` and ``model_fn`` and talks to the model
only through checkpoints in ``model_dir``: ``train`` resumes from the newest one (and returns
at once when ``max_steps`` is already reached), ``evaluate`` and ``predict`` restore it.
Training runs in a ``MonitoredTrainingSession`` on ``config.master``, so the same code
trains locally or as one task of a TF_CONFIG cluster (variables on the ps tasks through
``replica_device_setter``; the chief initializes and saves, the workers wait for it).
"""

from __future__ import annotations

import collections
import copy
import logging
import os
import re
import tempfile
from typing import Any, Callable, Iterator

from zmtf.client.monitored_session import ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession
from zmtf.estimator import evaluation
from zmtf.estimator.mode_keys import ModeKeys
from zmtf.estimator.model_fn import LOSS_METRIC_KEY, EstimatorSpec, check_types
from zmtf.estimator.model_fn_calls import (
    call_input_fn, call_model_fn, fn_args, parse_input_fn_result, verify_model_fn_args,
)
from zmtf.estimator.run_config import RunConfig, TaskType
from zmtf.estimator.saved_model_export import export_saved_model
from zmtf.formats.config_proto import ConfigProto
from zmtf.framework.graph import Graph, GraphKeys
from zmtf.ops.control_flow_ops import group
from zmtf.ops.random_ops import set_random_seed
from zmtf.ops.summary_ops import scalar as scalar_summary
from zmtf.framework.scopes import add_to_collection, device, get_collection
from zmtf.ops.variables import global_variables, trainable_variables
from zmtf.ops.metrics_impl import mean as mean_metric
from zmtf.training.checkpoint_reader import NewCheckpointReader, list_variables, load_variable
from zmtf.training.device_setter import STANDARD_PS_OPS, replica_device_setter
from zmtf.training.optimizers import create_global_step
from zmtf.training.saver import Saver, latest_checkpoint
from zmtf.training.session_run_hook import (
    CheckpointSaverHook, CheckpointSaverListener, LoggingTensorHook, NanTensorHook, SessionRunHook,
    StopAtStepHook,
)
from zmtf.training.warm_start import init_from_checkpoint

log = logging.getLogger("tensorflow")


class WarmStartSettings(collections.namedtuple(
        "WarmStartSettings", ["ckpt_to_initialize_from", "vars_to_warm_start",
                              "var_name_to_vocab_info", "var_name_to_prev_var_name"])):
    """``tf.estimator.WarmStartSettings``: start some variables from another model's checkpoint.

    ``vars_to_warm_start`` is a regex over the trainable variables, or a list of names or
    regexes over all global variables (TF1's rules). Vocabulary remapping is not built.
    """

    def __new__(cls, ckpt_to_initialize_from: str, vars_to_warm_start: Any = ".*",
                var_name_to_vocab_info: dict | None = None,
                var_name_to_prev_var_name: dict | None = None) -> WarmStartSettings:
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        if var_name_to_vocab_info:
            raise NotImplementedError("WarmStartSettings(var_name_to_vocab_info=...): vocabulary "
                                      "remapping is not built in zmtf")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def _warm_start(settings: WarmStartSettings) -> None:
    """Replace the chosen variables' initializers with the checkpoint's values."""
    wanted = settings.vars_to_warm_start
    if wanted is None:
        return
    if isinstance(wanted, str):
        candidates = [v for v in trainable_variables() if re.match(wanted, v.op.name)]
    else:
        candidates = [v for v in global_variables()
                      if any(re.match(pattern, v.op.name) for pattern in wanted)]
    renames = settings.var_name_to_prev_var_name
    mapping = {renames.get(v.op.name, v.op.name): v for v in candidates}
    log.info("Warm-starting %d variables from %s", len(mapping), settings.ckpt_to_initialize_from)
    if mapping:
        init_from_checkpoint(settings.ckpt_to_initialize_from, mapping)


def _warm_start_settings(warm_start_from: Any) -> WarmStartSettings | None:
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        return WarmStartSettings(os.fsdecode(warm_start_from))
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, instead got "
                     f"{type(warm_start_from)}")


def _check_hooks(hooks: Any) -> list[SessionRunHook]:
    return list(check_types(hooks, SessionRunHook, "Hooks must be a SessionRunHook, given: {}"))


def _check_listeners(listeners: Any) -> list[CheckpointSaverListener]:
    return list(check_types(listeners, CheckpointSaverListener,
                            "saving_listeners must be a list of CheckpointSaverListener, given: {}"))


def _step_in_checkpoint(model_dir: str) -> int:
    """The global step saved in model_dir's newest checkpoint; 0 when there is none."""
    path = latest_checkpoint(model_dir)
    try:
        return int(NewCheckpointReader(path).get_tensor(GraphKeys.GLOBAL_STEP)) if path else 0
    except Exception:  # noqa: BLE001 - TF's rule: an unreadable step counts as 0
        return 0


def _replica_device_setter(config: RunConfig) -> Callable[..., str] | None:
    """Between-graph replication: variables round-robin over the ps tasks, the rest here."""
    if config.num_ps_replicas <= 0:
        return None
    worker = f"/job:{config.task_type}/task:{config.task_id}" if config.task_type else "/job:worker"
    return replica_device_setter(ps_tasks=config.num_ps_replicas, worker_device=worker,
                                 merge_devices=True, ps_ops=list(STANDARD_PS_OPS),
                                 cluster=config.cluster_spec)


def _config_with_model_dir(config: RunConfig | None, model_dir: Any) -> RunConfig:
    """TF's rules: model_dir from the constructor or the config (they must agree), else a temp dir."""
    if config is None:
        config = RunConfig()
        log.info("Using default config.")
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
    if config.session_config is None:
        config = config.replace(session_config=ConfigProto(allow_soft_placement=True))
    model_dir = os.fspath(model_dir) if model_dir is not None else None
    if model_dir is not None and config.model_dir is not None and config.model_dir != model_dir:
        raise ValueError(f"`model_dir` are set both in constructor and `RunConfig`, but with different "
                         f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' ")
    if model_dir:
        return config.replace(model_dir=model_dir)
    if config.model_dir is None:
        model_dir = tempfile.mkdtemp()
        log.warning("Using temporary folder as model directory: %s", model_dir)
        return config.replace(model_dir=model_dir)
    return config


class Estimator:
    """``tf.estimator.Estimator(model_fn, model_dir=None, config=None, params=None, warm_start_from=None)``."""

    def __init__(self, model_fn: Callable[..., EstimatorSpec], model_dir: Any = None,
                 config: RunConfig | None = None, params: dict | None = None,
                 warm_start_from: Any = None) -> None:
        self._config = _config_with_model_dir(config, model_dir)
        self._model_dir: str = self._config.model_dir
        self._device_fn = self._config.device_fn or _replica_device_setter(self._config)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        verify_model_fn_args(model_fn, params)
        if params is None and "params" in fn_args(model_fn):
            log.warning("Estimator's model_fn (%s) includes params argument, but params are not "
                        "passed to Estimator.", model_fn)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = _warm_start_settings(warm_start_from)

    # ---- what it was built with -------------------------------------------------------
    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return copy.deepcopy(self._config)

    @property
    def params(self) -> dict:
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable[..., EstimatorSpec]:
        """The model_fn as ``fn(features, labels, mode, config)``, with params bound."""
        def public_model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
            return call_model_fn(self._model_fn, features, labels, mode, self.params, config)
        return public_model_fn

    # ---- the checkpoints --------------------------------------------------------------
    def latest_checkpoint(self) -> str | None:
        return latest_checkpoint(self._model_dir)

    def _checkpoint_required(self) -> None:
        if not latest_checkpoint(self._model_dir):
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")

    def get_variable_names(self) -> list[str]:
        self._checkpoint_required()
        return [name for name, _ in list_variables(self._model_dir)]

    def get_variable_value(self, name: str) -> Any:
        self._checkpoint_required()
        return load_variable(self._model_dir, name)

    def eval_dir(self, name: str | None = None) -> str:
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # ---- building a graph -------------------------------------------------------------
    def _start_graph(self, graph: Graph) -> Any:
        if self._config.tf_random_seed is not None:
            set_random_seed(self._config.tf_random_seed)
        return create_global_step(graph)

    def _inputs(self, input_fn: Callable[..., Any], mode: str) -> tuple[Any, Any, list]:
        return parse_input_fn_result(call_input_fn(input_fn, mode, self.params, self.config))

    def _call_model_fn(self, features: Any, labels: Any, mode: str) -> EstimatorSpec:
        return call_model_fn(self._model_fn, features, labels, mode, self.params, self.config)

    # ---- train ------------------------------------------------------------------------
    def train(self, input_fn: Callable[..., Any], hooks: Any = None, steps: int | None = None,
              max_steps: int | None = None, saving_listeners: Any = None) -> Estimator:
        """Train until the input ends, ``steps`` more steps, or global step ``max_steps``."""
        if self._config.task_type in (TaskType.EVALUATOR, TaskType.PS):
            raise ValueError("Train has been called wrong configuration. Please use "
                             "tf.estimator.train_and_evaluate which calls proper API according to "
                             f"given configuration. Current configuration: {self._config}.")
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None and max_steps <= _step_in_checkpoint(self._model_dir):
            log.info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        listeners = _check_listeners(saving_listeners)
        with Graph().as_default() as graph, device(self._device_fn):
            global_step = self._start_graph(graph)
            features, labels, input_hooks = self._inputs(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
            loss = self._train_with_spec(spec, input_hooks + hooks, global_step, listeners)
        log.info("Loss for final step: %s.", loss)
        return self

    def _train_hooks(self, spec: EstimatorSpec, hooks: list, global_step: Any) -> list:
        """The hooks every trainer runs: the caller's, NaN check, loss logging, the spec's."""
        hooks = hooks + [NanTensorHook(spec.loss)]
        if self._config.log_step_count_steps is not None:
            hooks.append(LoggingTensorHook({"loss": spec.loss, "step": global_step},
                                           every_n_iter=self._config.log_step_count_steps))
        return hooks + list(spec.training_hooks)

    def _chief_saver_hooks(self, spec: EstimatorSpec, worker_hooks: list, listeners: list) -> list:
        """A CheckpointSaverHook on the RunConfig's cadence, unless a hook saves already."""
        config = self._config
        savers = [h for h in worker_hooks + list(spec.training_chief_hooks)
                  if isinstance(h, CheckpointSaverHook)]
        chief_hooks: list = []
        if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not savers:
            chief_hooks = [CheckpointSaverHook(
                self._model_dir, save_secs=config.save_checkpoints_secs,
                save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold,
                save_graph_def=config.checkpoint_save_graph_def)]
            savers = chief_hooks
        if listeners:
            if not savers:
                raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. Please "
                                 "set one of the RunConfig.save_checkpoints_steps or "
                                 "RunConfig.save_checkpoints_secs.")
            savers[0].add_listeners(listeners)
        return chief_hooks

    def _train_with_spec(self, spec: EstimatorSpec, hooks: list, global_step: Any,
                         listeners: list) -> Any:
        config = self._config
        if self._warm_start_settings and not latest_checkpoint(self._model_dir):
            _warm_start(self._warm_start_settings)
        if not any(t.op.name == "loss" for t in get_collection(GraphKeys.SUMMARIES)):
            scalar_summary("loss", spec.loss)
        add_to_collection(GraphKeys.LOSSES, spec.loss)
        worker_hooks = self._train_hooks(spec, hooks, global_step)
        if spec.scaffold.saver is None and not get_collection(GraphKeys.SAVERS):
            add_to_collection(GraphKeys.SAVERS, Saver(
                sharded=True, max_to_keep=config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
                save_relative_paths=True))
        chief_hooks = self._chief_saver_hooks(spec, worker_hooks, listeners)
        with MonitoredTrainingSession(
                master=config.master, is_chief=config.is_chief, checkpoint_dir=self._model_dir,
                scaffold=spec.scaffold, hooks=worker_hooks,
                chief_only_hooks=chief_hooks + list(spec.training_chief_hooks), save_checkpoint_secs=0,
                save_summaries_steps=config.save_summary_steps, config=config.session_config,
                max_wait_secs=config.session_creation_timeout_secs,
                log_step_count_steps=config.log_step_count_steps) as session:
            loss, steps = None, 0
            while not session.should_stop():
                steps += 1
                _, loss = session.run([spec.train_op, spec.loss])
        if steps == 0:
            log.warning("Training with estimator made no steps. Perhaps input is empty or misspecified.")
        return loss

    # ---- evaluate ---------------------------------------------------------------------
    def evaluate(self, input_fn: Callable[..., Any], steps: int | None = None, hooks: Any = None,
                 checkpoint_path: str | None = None, name: str | None = None) -> dict[str, Any]:
        """The metrics (plus "loss" and "global_step") of a checkpoint over input_fn's data."""
        hooks = _check_hooks(hooks)
        if steps is not None:
            if steps <= 0:
                raise ValueError(f"Must specify steps > 0, given: {steps}")
            hooks.append(evaluation.StopAfterNEvalsHook(steps))
        checkpoint_path = checkpoint_path or self._latest_or_init("evaluate")
        with Graph().as_default() as graph:
            global_step = self._start_graph(graph)
            features, labels, input_hooks = self._inputs(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL)
            metrics = dict(spec.eval_metric_ops)
            if LOSS_METRIC_KEY in metrics:
                raise ValueError(f'Metric with name "{LOSS_METRIC_KEY}" is not allowed, because Estimator '
                                 "already defines a default metric with the same name.")
            metrics[LOSS_METRIC_KEY] = mean_metric(spec.loss)
            if not checkpoint_path and self._warm_start_settings:
                _warm_start(self._warm_start_settings)
            if GraphKeys.GLOBAL_STEP in metrics:
                raise ValueError("Metric with name `global_step` is not allowed, because Estimator "
                                 "already defines a default metric with the same name.")
            names = sorted(metrics)
            final_ops = {name: metrics[name][0] for name in names}
            final_ops[GraphKeys.GLOBAL_STEP] = global_step
            results = evaluation.evaluate_once(
                checkpoint_path, self._config.evaluation_master, spec.scaffold,
                group(*[metrics[name][1] for name in names]), final_ops,
                input_hooks + hooks + list(spec.evaluation_hooks), self._config.session_config)
        evaluation.write_dict_to_summary(self.eval_dir(name), results, int(results[GraphKeys.GLOBAL_STEP]))
        return results

    def _latest_or_init(self, what: str) -> str | None:
        path = latest_checkpoint(self._model_dir)
        if not path:
            log.info("Could not find trained model in model_dir: %s, running initialization to %s.",
                     self._model_dir, what)
        return path

    # ---- predict ----------------------------------------------------------------------
    def predict(self, input_fn: Callable[..., Any], predict_keys: Any = None, hooks: Any = None,
                checkpoint_path: str | None = None, yield_single_examples: bool = True) -> Iterator[Any]:
        """Yield predictions for input_fn's features until the input ends."""
        hooks = _check_hooks(hooks)
        checkpoint_path = checkpoint_path or self._latest_or_init("predict")
        with Graph().as_default() as graph:
            self._start_graph(graph)
            features, _, input_hooks = self._inputs(input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT)
            if not checkpoint_path and self._warm_start_settings:
                _warm_start(self._warm_start_settings)
            predictions = _extract_keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(scaffold=spec.scaffold, master=self._config.master,
                                          config=self._config.session_config,
                                          checkpoint_filename_with_path=checkpoint_path)
            with MonitoredSession(creator, input_hooks + hooks + list(spec.prediction_hooks)) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for index in range(_batch_length(values)):
                            yield {key: value[index] for key, value in values.items()}

    # ---- export -----------------------------------------------------------------------
    def export_saved_model(self, export_dir_base: Any, serving_input_receiver_fn: Callable[[], Any],
                           assets_extra: dict[str, str] | None = None, as_text: bool = False,
                           checkpoint_path: str | None = None) -> bytes:
        """Write the PREDICT graph and a checkpoint (default: the newest) as a SavedModel in
        ``export_dir_base/<timestamp>`` for TF Serving; return that path (bytes)."""
        return export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                                  assets_extra=assets_extra, as_text=as_text,
                                  checkpoint_path=checkpoint_path)

    def export_savedmodel(self, export_dir_base: Any, serving_input_receiver_fn: Callable[[], Any],
                          assets_extra: dict[str, str] | None = None, as_text: bool = False,
                          checkpoint_path: str | None = None,
                          strip_default_attrs: bool = False) -> bytes:
        """TF1's older name of ``export_saved_model``; ``strip_default_attrs`` is accepted, unused."""
        return export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                                  assets_extra=assets_extra, as_text=as_text,
                                  checkpoint_path=checkpoint_path)


def _extract_keys(predictions: Any, predict_keys: Any) -> Any:
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    chosen = {key: value for key, value in predictions.items() if key in predict_keys}
    if not chosen:
        raise ValueError(f"Expected to run at least one output from {list(predictions)}, "
                         f"provided {predict_keys}.")
    return chosen


def _batch_length(values: dict[str, Any]) -> int:
    """The batch size all predictions share (TF's check: every key the same length)."""
    length = None
    for key, value in values.items():
        length = length or value.shape[0]
        if value.shape[0] != length:
            raise ValueError(f"Batch length of predictions should be same. {key} has different batch "
                             "length than others.")
    return length or 0
