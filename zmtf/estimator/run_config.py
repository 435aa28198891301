"""``tf.estimator.RunConfig``: where an Estimator writes, how often, and which task it is.

The task comes from the ``TF_CONFIG`` environment variable, read exactly as TF1's RunConfig
reads it (same rules, same errors): ``{"cluster": {...}, "task": {"type": ..., "index": ...}}``.
A cluster needs one "chief" (or, in the legacy form, one "master"); an "evaluator" task
stands beside the cluster and sees none of it. The cluster itself is zmtf's ClusterSpec,
so a bad address is caught here, naming the task.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable

from zmtf.distributed.cluster_spec import ClusterSpec
from zmtf.formats.config_proto import ConfigProto

_USE_DEFAULT = object()
_TF_CONFIG_ENV = "TF_CONFIG"
_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"   # TF's spelling; zmtf's sessions accept it (and "zmtf://")
_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
_REPLACEABLE = (
    "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
    "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute", "device_fn",
    "protocol", "eval_distribute", "experimental_distribute", "experimental_max_worker_delay_secs",
    "session_creation_timeout_secs", "checkpoint_save_graph_def",
)


class TaskType:
    """The job names train_and_evaluate knows."""

    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


# ---- reading TF_CONFIG (pure: a dict in, the task's settings out) -------------------------


def _session_master(cluster: ClusterSpec, task_type: str, task_id: int, tf_config: dict) -> str:
    """The target a trainer's session connects to: its own task ("" in a one-task cluster)."""
    if "session_master" in tf_config:
        return tf_config["session_master"]
    jobs = cluster.jobs
    if len(jobs) == 1 and len(cluster.job_tasks(jobs[0])) == 1:
        return _LOCAL_MASTER
    address = cluster.job_tasks(task_type)[task_id]
    return address if "://" in address else _GRPC_SCHEME + address


def _validate_task(cluster: ClusterSpec, task_env: dict, chief_type: str) -> tuple[str, int]:
    """TF's checks of TF_CONFIG's "task" against its "cluster", with TF's messages."""
    if chief_type not in cluster.jobs:
        raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one "{chief_type}" node.')
    if len(cluster.job_tasks(chief_type)) > 1:
        raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{chief_type}" node.')
    task_type, task_id = task_env.get("type"), task_env.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == TaskType.EVALUATOR:
        return task_type, task_id
    note = "\n\nNote that these values may be coming from the TF_CONFIG environment variable."
    if task_type not in cluster.jobs:
        raise ValueError(f"{task_type} is not a valid task_type in the cluster_spec:\n{cluster}{note}")
    if not 0 <= task_id < len(cluster.job_tasks(task_type)):
        raise ValueError(f"{task_id} is not a valid task_id for task_type {task_type} in the "
                         f"cluster_spec:\n{cluster}{note}")
    return task_type, task_id


def _global_id(cluster: ClusterSpec, task_type: str, task_id: int, chief_type: str) -> int:
    """The task's place in chief, other jobs (sorted), then ps order."""
    order = [chief_type] + [job for job in sorted(cluster.jobs) if job not in (chief_type, TaskType.PS)]
    if TaskType.PS in cluster.jobs:
        order.append(TaskType.PS)
    next_id = 0
    for job in order:
        if job == task_type:
            return next_id + task_id
        next_id += len(cluster.job_tasks(job))
    raise RuntimeError(f"Internal Error: `task_type` ({task_type}) is not in cluster_spec ({cluster}).")


def _count(cluster: ClusterSpec, *jobs: str) -> int:
    return sum(len(cluster.job_tasks(job)) for job in jobs if job in cluster.jobs)


def parse_tf_config(tf_config: dict) -> dict[str, Any]:
    """The distributed settings TF_CONFIG gives a RunConfig (TF1's rules and errors)."""
    service = tf_config.get("service")
    if service is not None and not isinstance(service, dict):
        raise TypeError(f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(service)}')
    cluster = ClusterSpec(tf_config.get("cluster", {}))
    task_env = tf_config.get("task", {})
    if not cluster:
        return _without_cluster(task_env, tf_config, service)
    chief_type = TaskType.MASTER if TaskType.MASTER in cluster.jobs else TaskType.CHIEF
    if chief_type == TaskType.MASTER and TaskType.CHIEF in cluster.jobs:
        raise ValueError("If `master` node exists in `cluster`, job `chief` is not supported.")
    task_type, task_id = _validate_task(cluster, task_env, chief_type)
    evaluation_master = tf_config.get("eval_session_master", _LOCAL_MASTER) \
        if task_type == TaskType.EVALUATOR else _LOCAL_MASTER
    if task_type == TaskType.EVALUATOR:
        if chief_type == TaskType.MASTER:
            raise ValueError("If `master` node exists in `cluster`, task_type `evaluator` is not supported.")
        return dict(service=service, cluster_spec=ClusterSpec({}), task_type=task_type, task_id=task_id,
                    master=_LOCAL_MASTER, evaluation_master=evaluation_master, num_ps_replicas=0,
                    num_worker_replicas=0, global_id_in_cluster=None, is_chief=False)
    return dict(service=service, cluster_spec=cluster, task_type=task_type, task_id=task_id,
                master=_session_master(cluster, task_type, task_id, tf_config),
                evaluation_master=evaluation_master, num_ps_replicas=_count(cluster, TaskType.PS),
                num_worker_replicas=_count(cluster, TaskType.WORKER, chief_type),
                global_id_in_cluster=_global_id(cluster, task_type, task_id, chief_type),
                is_chief=task_type == chief_type)


def _without_cluster(task_env: dict, tf_config: dict, service: Any) -> dict[str, Any]:
    """No cluster: one local worker, the chief of itself."""
    task_type = task_env.get("type", TaskType.WORKER)
    task_id = int(task_env.get("index", 0))
    if task_type != TaskType.WORKER:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
    if task_id != 0:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
    return dict(service=service, cluster_spec=ClusterSpec({}), task_type=task_type, task_id=task_id,
                master=tf_config.get("session_master", _LOCAL_MASTER),
                evaluation_master=tf_config.get("eval_session_master", _LOCAL_MASTER),
                num_ps_replicas=0, num_worker_replicas=1, global_id_in_cluster=0, is_chief=True)


def _model_dir(tf_config: dict, model_dir: str | None) -> str | None:
    """RunConfig's model_dir, or TF_CONFIG's "model_dir"; both given must agree."""
    if model_dir == "":
        raise ValueError("model_dir should be non-empty.")
    from_tf_config = tf_config.get("model_dir")
    if from_tf_config == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    if from_tf_config and model_dir and from_tf_config != model_dir:
        raise ValueError("`model_dir` provided in RunConfig construct, if set, must have the same value "
                         f"as the model_dir in TF_CONFIG. model_dir: {model_dir}\n"
                         f'TF_CONFIG["model_dir"]: {from_tf_config}.\n')
    return model_dir or from_tf_config


def default_distributed_session_config(task_type: str | None, task_id: int) -> ConfigProto | None:
    """TF's device filters for between-graph training: a trainer sees the ps tasks and itself."""
    filters = {
        TaskType.MASTER: ["/job:ps", "/job:master"],
        TaskType.CHIEF: ["/job:ps", "/job:chief"],
        TaskType.WORKER: ["/job:ps", f"/job:worker/task:{task_id}"],
        TaskType.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"],
    }.get(task_type or "")
    return None if filters is None else ConfigProto(allow_soft_placement=True, device_filters=filters)


# ---- validating the settings ---------------------------------------------------------------

_CHECKS: list[tuple[str, Callable[[Any], bool], str]] = [
    ("model_dir", bool, "model_dir should be non-empty"),
    ("save_summary_steps", lambda v: v >= 0, "save_summary_steps should be >= 0"),
    ("save_checkpoints_steps", lambda v: v >= 0, "save_checkpoints_steps should be >= 0"),
    ("save_checkpoints_secs", lambda v: v >= 0, "save_checkpoints_secs should be >= 0"),
    ("session_config", lambda v: isinstance(v, ConfigProto), "session_config must be instance of ConfigProto"),
    ("keep_checkpoint_max", lambda v: v >= 0, "keep_checkpoint_max should be >= 0"),
    ("keep_checkpoint_every_n_hours", lambda v: v > 0, "keep_checkpoint_every_n_hours should be > 0"),
    ("log_step_count_steps", lambda v: v > 0, "log_step_count_steps should be > 0"),
    ("tf_random_seed", lambda v: isinstance(v, int), "tf_random_seed must be integer."),
    ("experimental_max_worker_delay_secs", lambda v: isinstance(v, int),
     "experimental_max_worker_delay_secs must be an integer if set."),
    ("session_creation_timeout_secs", lambda v: v > 0, "session_creation_timeout_secs should be > 0"),
    ("device_fn", lambda v: callable(v), 'device_fn must be callable with exactly one argument "op".'),
    ("protocol", lambda v: v in ("grpc", "grpc+verbs", "zmtf", "zmq"),
     "protocol should be grpc or grpc+verbs (zmtf: or zmtf/zmq)"),
]


def _validate(config: RunConfig, replaced: set[str]) -> None:
    steps, secs = config._save_checkpoints_steps, config._save_checkpoints_secs
    if {"save_checkpoints_steps", "save_checkpoints_secs"} <= replaced:
        if steps is not None and secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
    elif "save_checkpoints_steps" in replaced and steps is not None:
        config._save_checkpoints_secs = None
    elif "save_checkpoints_secs" in replaced and secs is not None:
        config._save_checkpoints_steps = None
    for name, ok, message in _CHECKS:
        value = getattr(config, "_" + name)
        if value is not None and not ok(value):
            raise ValueError(message)


class RunConfig:
    """``tf.estimator.RunConfig``: checkpoint/summary cadence and the task from TF_CONFIG.

    ``save_checkpoints_steps`` and ``save_checkpoints_secs`` exclude each other; with neither
    given, a checkpoint is saved every 600 s. ``train_distribute``/``eval_distribute`` and
    ``experimental_distribute`` (tf.distribute strategies) are not built in zmtf.
    """

    def __init__(self, model_dir: str | os.PathLike | None = None, tf_random_seed: int | None = None,
                 save_summary_steps: int = 100, save_checkpoints_steps: Any = _USE_DEFAULT,
                 save_checkpoints_secs: Any = _USE_DEFAULT, session_config: ConfigProto | None = None,
                 keep_checkpoint_max: int = 5, keep_checkpoint_every_n_hours: float = 10000,
                 log_step_count_steps: int = 100, train_distribute: Any = None, device_fn: Any = None,
                 protocol: str | None = None, eval_distribute: Any = None,
                 experimental_distribute: Any = None, experimental_max_worker_delay_secs: int | None = None,
                 session_creation_timeout_secs: float = 7200, checkpoint_save_graph_def: bool = True) -> None:
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
        if train_distribute or eval_distribute or experimental_distribute:
            raise NotImplementedError("RunConfig(train_distribute=/eval_distribute=/experimental_distribute=): "
                                      "tf.distribute strategies are not built in zmtf; leave them None and "
                                      "train between-graph through TF_CONFIG (ps/chief/worker)")
        tf_config = json.loads(os.environ.get(_TF_CONFIG_ENV) or "{}")
        model_dir = _model_dir(tf_config, os.fspath(model_dir) if model_dir is not None else None)
        self._set(set(_REPLACEABLE), dict(
            model_dir=model_dir, tf_random_seed=tf_random_seed, save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps, save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config, keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps, train_distribute=None, device_fn=device_fn,
            protocol=protocol, eval_distribute=None, experimental_distribute=None,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
            checkpoint_save_graph_def=checkpoint_save_graph_def))
        for name, value in parse_tf_config(tf_config).items():
            setattr(self, "_" + name, value)
        if self._session_config is None and self._cluster_spec:
            self._session_config = default_distributed_session_config(self._task_type, self._task_id)

    def _set(self, replaced: set[str], values: dict[str, Any]) -> RunConfig:
        for key, value in values.items():
            if key not in _REPLACEABLE:
                raise ValueError(f"Replacing {key} is not supported. Allowed properties are "
                                 f"{list(_REPLACEABLE)}.")
            setattr(self, "_" + key, value)
        _validate(self, replaced)
        return self

    def replace(self, **kwargs: Any) -> RunConfig:
        """A copy with some of the settings replaced (not the TF_CONFIG ones)."""
        return copy.deepcopy(self)._set(set(kwargs), kwargs)

    def __repr__(self) -> str:
        return f"RunConfig({', '.join(f'{k[1:]}={v!r}' for k, v in sorted(vars(self).items()))})"


def _property(name: str) -> property:
    return property(lambda self: getattr(self, "_" + name), doc=f"The ``{name}`` setting.")


for _name in (*_REPLACEABLE, "cluster_spec", "task_type", "task_id", "master", "evaluation_master",
              "num_ps_replicas", "num_worker_replicas", "global_id_in_cluster", "is_chief", "service"):
    setattr(RunConfig, _name, _property(_name))
