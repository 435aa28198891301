"""TensorFlow's cluster messages (cluster.proto): ``tf.train.JobDef`` and
``tf.train.ClusterDef``, with TF's field numbers, so the bytes a TF1 script or launcher wrote
(``cluster_spec.as_cluster_def().SerializeToString()``) read back here and TF reads what zmtf
writes. ``tf.train.ServerDef`` is in server_def_proto (it holds a ConfigProto)."""

from __future__ import annotations

from zmtf.formats.proto_message import Field, Message, RepeatedMessages


class JobDef(Message):
    """One job: its name and ``tasks``, a map from task index to "host:port"."""

    FIELDS = (Field(1, "name", "string"),
              Field(2, "tasks", "map", key="int32", value="string"))


class ClusterDef(Message):
    """The jobs of a cluster; ``tf.train.ClusterSpec(cluster_def)`` reads one."""

    FIELDS = (Field(1, "job", "message", repeated=True, message=JobDef),)
    # the fields' types, for type checkers (Message.__init__ sets the attributes from FIELDS)
    job: RepeatedMessages


__all__ = ["ClusterDef", "JobDef"]
