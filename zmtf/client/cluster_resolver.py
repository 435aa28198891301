"""``tf.distribute.cluster_resolver``: where a TF1 script learns its cluster, its own task and
the session target (``master()``) from its environment, as TF's resolvers do.

``TFConfigClusterResolver`` reads the TF_CONFIG environment variable on every query (with
zmtf's ClusterSpec reader, so a bad address names its task), ``SimpleClusterResolver``
holds what it is given, and ``UnionClusterResolver`` merges several. ``master()`` returns
"grpc://host:port" as TF does; zmtf's Session accepts that target. ``num_accelerators()``
opens a session on the master and counts the devices that are not CPUs, as TF does.
"""

from __future__ import annotations

import abc
import collections
from typing import Any

from zmtf.distributed.cluster_spec import ClusterSpec, tf_config_from_env, tf_config_task
from zmtf.formats.config_proto import ConfigProto

_SESSION_MASTER_KEY = "session_master"
_RPC_LAYER_KEY = "rpc_layer"
_HOST_DEVICE_TYPES = frozenset({"CPU", "XLA_CPU"})


def format_master_url(master: str, rpc_layer: str | None = None) -> str:
    """"host:port" with the rpc layer in front ("grpc://host:port"), as TF writes targets."""
    # NOTE: a zmtf-only address that already has a scheme (inproc://, ipc://) is kept as is;
    # TF would write "grpc://inproc://...", which no session could open.
    if rpc_layer and "://" not in master:
        return f"{rpc_layer}://{master}"
    return master


def _accelerator_counts(master: str, config_proto: ConfigProto | None, task_type: str | None,
                        task_id: int | None) -> collections.defaultdict[str, int]:
    """{device type: count} of the non-CPU devices a session on master sees (of one task)."""
    from zmtf.client.session import Session
    from zmtf.framework.graph import Graph

    with Session(master, graph=Graph(), config=config_proto) as session:
        devices = session.list_devices()
    counts: collections.defaultdict[str, int] = collections.defaultdict(int)
    for device in devices:
        if device.device_type in _HOST_DEVICE_TYPES:
            continue
        if task_type is not None and task_id is not None and not (
                f"/job:{task_type}" in device.name and f"/task:{task_id}" in device.name):
            continue
        counts[device.device_type] += 1
    return counts


class ClusterResolver(abc.ABC):
    """The abstract resolver: a cluster, a master target, and this process's task.

    Subclasses implement ``cluster_spec()`` and ``master()``; ``task_type``, ``task_id`` and
    ``rpc_layer`` read ``self._task_type`` etc. unless a subclass overrides them.
    """

    @abc.abstractmethod
    def cluster_spec(self) -> ClusterSpec:
        """The cluster as it is now (re-read on every call, not cached)."""

    @abc.abstractmethod
    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The session target ("grpc://host:port"), or "" for an in-process session."""

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: ConfigProto | None = None) -> dict[str, int]:
        """{"GPU": n} for the master's task (or the named one); {} on a CPU-only cluster.

        A defaultdict(int) here, as in TF; a subclass may return a plain dict."""
        return _accelerator_counts(self.master(task_type, task_id), config_proto, task_type,
                                   task_id)

    @property
    def environment(self) -> str | None:
        """"google" inside Google, "" elsewhere: always "" for zmtf's own resolvers."""
        return ""

    @property
    def task_type(self) -> str | None:
        """This process's job name ("worker", "ps", "chief", "evaluator"), or None."""
        return getattr(self, "_task_type", None)

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        """This process's task index within its job, or None."""
        return getattr(self, "_task_id", None)

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def rpc_layer(self) -> str | None:
        """The protocol named in targets ("grpc"), or None for bare "host:port"."""
        return getattr(self, "_rpc_layer", None)

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer


class SimpleClusterResolver(ClusterResolver):
    """A resolver that returns what it was given: ``SimpleClusterResolver(cluster_spec, ...)``."""

    def __init__(self, cluster_spec: ClusterSpec, master: str = "", task_type: str | None = None,
                 task_id: int | None = None, environment: str = "",
                 num_accelerators: dict[str, int] | None = None,
                 rpc_layer: str | None = None) -> None:
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("cluster_spec must be a `tf.train.ClusterSpec`.")
        if not isinstance(master, str):
            raise TypeError("master must be a string.")
        self._cluster_spec, self._master = cluster_spec, master
        self._task_type, self._task_id, self._rpc_layer = task_type, task_id, rpc_layer
        self._environment, self._num_accelerators = environment, num_accelerators

    def cluster_spec(self) -> ClusterSpec:
        return self._cluster_spec

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The given master; the named task's address when both task_type and task_id are given."""
        if task_type is not None and task_id is not None:
            master = self._cluster_spec.task_address(task_type, task_id)
        else:
            master = self._master
        return format_master_url(master, rpc_layer or self._rpc_layer)

    @property
    def environment(self) -> str | None:
        return self._environment

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: ConfigProto | None = None) -> dict[str, int]:
        """The counts given to the constructor ({} when none were): nothing is probed."""
        del task_type, task_id, config_proto
        return {} if self._num_accelerators is None else self._num_accelerators


class TFConfigClusterResolver(ClusterResolver):
    """The cluster and task of the TF_CONFIG environment variable, read again on every query.

    ``TF_CONFIG='{"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker",
    "index": 0}, "rpc_layer": "grpc"}'``; arguments given here override it. As in TF, the
    "environment" key of TF_CONFIG is not read: ``environment`` is what was passed.
    """

    def __init__(self, task_type: str | None = None, task_id: int | None = None,
                 rpc_layer: str | None = None, environment: str | None = None) -> None:
        self._task_type, self._task_id = task_type, task_id
        self._rpc_layer, self._environment = rpc_layer, environment

    @property
    def task_type(self) -> str | None:
        if self._task_type is not None:
            return str(self._task_type)
        return tf_config_task(tf_config_from_env().get("task"))[0]

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        if self._task_id is not None:
            return int(self._task_id)
        return tf_config_task(tf_config_from_env().get("task"))[1]

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def environment(self) -> str | None:
        return self._environment

    @property
    def rpc_layer(self) -> str | None:
        if self._rpc_layer is not None:
            return self._rpc_layer
        return tf_config_from_env().get(_RPC_LAYER_KEY)

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        """TF_CONFIG's "cluster" (an empty ClusterSpec when it has none)."""
        return ClusterSpec(tf_config_from_env().get("cluster") or {})

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """TF_CONFIG's "session_master" if set; "" for a one-task (or no) cluster; else the
        address of the task (this one unless named), as "grpc://host:port" with an rpc layer."""
        config = tf_config_from_env()
        if config.get(_SESSION_MASTER_KEY) is not None:
            return config[_SESSION_MASTER_KEY]
        cluster = self.cluster_spec()
        jobs = cluster.jobs
        if not jobs or (len(jobs) == 1 and cluster.num_tasks(jobs[0]) == 1):
            return ""
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        if task_type is None or task_id is None:
            raise ValueError(
                f"master(): TF_CONFIG names a cluster with jobs {jobs} but no task of this "
                f"process; set TF_CONFIG's \"task\" ({{\"type\": \"worker\", \"index\": 0}}) or "
                f"pass task_type and task_id")
        return format_master_url(cluster.task_address(task_type, task_id),
                                 self.rpc_layer if rpc_layer is None else rpc_layer)

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: ConfigProto | None = None) -> dict[str, int]:
        """The accelerators of this process's task (or the named one)."""
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        return super().num_accelerators(task_type, task_id, config_proto)


class UnionClusterResolver(ClusterResolver):
    """Several resolvers as one: their clusters merged; the rest from the first one."""

    def __init__(self, *resolvers: ClusterResolver, rpc_layer: str | None = None,
                 task_type: str | None = None, task_id: int | None = None) -> None:
        if not resolvers:
            raise ValueError("At least one ClusterResolver is required.")
        for resolver in resolvers:
            if not isinstance(resolver, ClusterResolver):
                raise TypeError("All arguments must be a sub-class of `ClusterResolver.`")
        self._resolvers = resolvers
        self._rpc_layer, self._task_type, self._task_id = rpc_layer, task_type, task_id

    def cluster_spec(self) -> ClusterSpec:
        """The union of the clusters: lists of one job concatenate, in order; once a job is
        sparse anywhere, its tasks merge by index and an index given twice is a KeyError."""
        specs = [resolver.cluster_spec().as_dict() for resolver in self._resolvers]
        sparse = {job for spec in specs for job, tasks in spec.items() if isinstance(tasks, dict)}
        merged: dict[str, Any] = {}
        for spec in specs:
            for job, tasks in spec.items():
                if job not in sparse:
                    merged.setdefault(job, []).extend(tasks)
                    continue
                by_index = tasks if isinstance(tasks, dict) else dict(enumerate(tasks))
                into = merged.setdefault(job, {})
                clash = set(by_index) & set(into)
                if clash:
                    raise KeyError(f"Duplicate keys detected when merging two ClusterSpecs: "
                                   f"{clash!r}")
                into.update(by_index)
        return ClusterSpec(merged)

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        if task_type is not None and task_id is not None:
            return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                     rpc_layer or self._rpc_layer)
        return self._resolvers[0].master(rpc_layer=rpc_layer)

    @property
    def task_type(self) -> str | None:
        return self._task_type or self._resolvers[0].task_type

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        return self._task_id or self._resolvers[0].task_id

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def environment(self) -> str | None:
        return self._resolvers[0].environment

    @property
    def rpc_layer(self) -> str | None:
        return self._rpc_layer or self._resolvers[0].rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: ConfigProto | None = None) -> dict[str, int]:
        return self._resolvers[0].num_accelerators(task_type, task_id, config_proto)


UnionResolver = UnionClusterResolver  # TF's exported name for it

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
           "UnionClusterResolver", "UnionResolver"]
