"""TensorFlow's cluster messages (cluster.proto, tensorflow_server.proto): ``tf.train.JobDef``,
``tf.train.ClusterDef`` and ``tf.train.ServerDef``, with TF's field numbers, so the bytes a
TF1 script or launcher wrote (``cluster_spec.as_cluster_def().SerializeToString()``) read
back here and TF reads what zmtf writes.

ServerDef's ``default_session_config`` (a ConfigProto message) and ``cluster_device_filters``
are not carried in the bytes: zmtf's ConfigProto is not a protobuf message, so those fields
are skipped when parsing, as unknown fields are. ``default_session_config`` is a plain
attribute instead (a ``tf.train.Server`` reports its config there, and takes it from there).
"""

from __future__ import annotations

from typing import Any, Callable

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


def _server_def_message() -> Any:
    """The wire fields of a ServerDef, as protobuf's message ``tensorflow.ServerDef``."""

    class ServerDef(Message):
        FIELDS = (Field(1, "cluster", "message", message=ClusterDef), Field(2, "job_name", "string"),
                  Field(3, "task_index", "int32"), Field(5, "protocol", "string"),
                  Field(6, "port", "int32"))

    return ServerDef


_SERVER_DEF = _server_def_message()


class ServerDef:
    """What a server is: its ``cluster``, own ``job_name`` and ``task_index``, ``protocol``
    and ``port`` (protobuf's message, which every other attribute reaches), and
    ``default_session_config`` beside them, not in the bytes (see the module's docstring)."""

    __slots__ = ("_message", "default_session_config")

    def __init__(self, default_session_config: Any = None, **fields: Any) -> None:
        object.__setattr__(self, "_message", _SERVER_DEF(**fields))
        if default_session_config is None and _session_configs:
            default_session_config = _session_configs[0]()
        object.__setattr__(self, "default_session_config", default_session_config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._message, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "default_session_config":
            object.__setattr__(self, name, value)
        else:
            setattr(self._message, name, value)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ServerDef) and self._message == other._message
                and self.default_session_config == other.default_session_config)

    __hash__ = None  # type: ignore[assignment]  (mutable, as protobuf's messages)

    def __repr__(self) -> str:
        return repr(self._message)

    @classmethod
    def FromString(cls, data: bytes) -> ServerDef:  # noqa: N802 (protobuf's name)
        server_def = cls()
        server_def._message.ParseFromString(data)
        return server_def


#: what makes the empty ConfigProto of a ServerDef given none: config_proto registers it when
#: imported (it imports this module, so it cannot be imported from here)
_session_configs: list[Callable[[], Any]] = []


def register_session_config(factory: Callable[[], Any]) -> None:
    """Called by config_proto with ConfigProto."""
    _session_configs[:] = [factory]


__all__ = ["ClusterDef", "JobDef", "ServerDef"]
