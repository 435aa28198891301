"""TF's ``tf.train.ServerDef`` (tensorflow_server.proto) and its device filters
(device_filters.proto), with TF's field numbers: what a server is (its ``cluster``, own
``job_name`` and ``task_index``, ``protocol``) and the ``default_session_config`` its sessions
start from, all in the bytes, so a ServerDef TF1 wrote reads back here and TF reads zmtf's."""

from __future__ import annotations

from zmtf.formats.cluster_def_proto import ClusterDef
from zmtf.formats.config_proto import ConfigProto
from zmtf.formats.proto_message import Field, Message


class TaskDeviceFilters(Message):
    FIELDS = (Field(1, "device_filters", "string", repeated=True),)


class JobDeviceFilters(Message):
    FIELDS = (Field(1, "name", "string"),
              Field(2, "tasks", "map", key="int32", message=TaskDeviceFilters))


class ClusterDeviceFilters(Message):
    """Which devices each task of a cluster may see (accepted; zmtf filters devices by a
    session's ``ConfigProto.device_filters``)."""

    FIELDS = (Field(1, "jobs", "message", repeated=True, message=JobDeviceFilters),)


class ServerDef(Message):
    """What a server is. ``port`` is refused by ``tf.train.Server`` (a zmtf server binds the
    address its task has in the cluster)."""

    FIELDS = (Field(1, "cluster", "message", message=ClusterDef),
              Field(2, "job_name", "string"),
              Field(3, "task_index", "int32"),
              Field(4, "default_session_config", "message", message=ConfigProto),
              Field(5, "protocol", "string"),
              Field(6, "port", "int32"),
              Field(7, "cluster_device_filters", "message", message=ClusterDeviceFilters),
              Field(8, "replica", "int32"))


__all__ = ["ClusterDeviceFilters", "JobDeviceFilters", "ServerDef", "TaskDeviceFilters"]
