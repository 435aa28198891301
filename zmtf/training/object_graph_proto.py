"""TF's TrackableObjectGraph proto (trackable_object_graph.proto, same field numbers) as a
protobuf message (formats/proto_message.py), and zmtf's plain view of it.

An object-based checkpoint stores it, serialized, as the scalar string tensor
``_CHECKPOINTABLE_OBJECT_GRAPH``: one node per object, node 0 the root Checkpoint, each
node listing its named children (by node id), the variables it saves (``attributes``) and,
for an optimizer, which node holds which slot of which variable. Fields are written in
field-number order and proto3 defaults (0, "") are left out by the library, so the bytes
equal TensorFlow's for the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zmtf.framework.errors import DataLossError, InvalidArgumentError
from zmtf.formats.proto_message import Field, Message

#: the checkpoint key holding the serialized TrackableObjectGraph
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


@dataclass(frozen=True, slots=True)
class SerializedTensor:
    """One saved value of a node: ``name`` ("VARIABLE_VALUE"), the variable's graph name, its key."""

    name: str
    full_name: str
    checkpoint_key: str


@dataclass(frozen=True, slots=True)
class SlotReference:
    """Node ``slot_variable_node_id`` is the ``slot_name`` slot of node ``original_variable_node_id``."""

    original_variable_node_id: int
    slot_name: str
    slot_variable_node_id: int


@dataclass(slots=True)
class ObjectNode:
    children: list[tuple[int, str]] = field(default_factory=list)   # (node id, local name)
    attributes: list[SerializedTensor] = field(default_factory=list)
    slot_variables: list[SlotReference] = field(default_factory=list)
    has_checkpoint_values: bool = False


class BoolValue(Message):
    """google.protobuf.BoolValue (wrappers.proto): a bool with presence."""

    FIELDS = (Field(1, "value", "bool"),)


class TrackableObjectGraph(Message):
    class TrackableObject(Message):
        class ObjectReference(Message):
            FIELDS = (Field(1, "node_id", "int32"), Field(2, "local_name", "string"))

        class SerializedTensor(Message):
            FIELDS = (Field(1, "name", "string"), Field(2, "full_name", "string"),
                      Field(3, "checkpoint_key", "string"))

        class SlotVariableReference(Message):
            FIELDS = (Field(1, "original_variable_node_id", "int32"),
                      Field(2, "slot_name", "string"), Field(3, "slot_variable_node_id", "int32"))

        FIELDS = (
            Field(1, "children", "message", repeated=True, message=ObjectReference),
            Field(2, "attributes", "message", repeated=True, message=SerializedTensor),
            Field(3, "slot_variables", "message", repeated=True, message=SlotVariableReference),
            Field(5, "has_checkpoint_values", "message", message=BoolValue),
        )

    FIELDS = (Field(1, "nodes", "message", repeated=True, message=TrackableObject),)


def encode_object_graph(nodes: list[ObjectNode]) -> bytes:
    proto = TrackableObjectGraph()
    for node in nodes:
        item = proto.nodes.add()
        for node_id, name in node.children:
            item.children.add(node_id=node_id, local_name=name)
        for a in node.attributes:
            item.attributes.add(name=a.name, full_name=a.full_name, checkpoint_key=a.checkpoint_key)
        for s in node.slot_variables:
            item.slot_variables.add(original_variable_node_id=s.original_variable_node_id,
                                    slot_name=s.slot_name,
                                    slot_variable_node_id=s.slot_variable_node_id)
        item.has_checkpoint_values.value = node.has_checkpoint_values
        item.has_checkpoint_values.SetInParent()   # written even when false, as TF writes it
    return proto.SerializeToString()


def _node(item: Any) -> ObjectNode:
    return ObjectNode(
        children=[(ref.node_id, ref.local_name) for ref in item.children],
        attributes=[SerializedTensor(a.name, a.full_name, a.checkpoint_key)
                    for a in item.attributes],
        slot_variables=[SlotReference(s.original_variable_node_id, s.slot_name,
                                      s.slot_variable_node_id) for s in item.slot_variables],
        has_checkpoint_values=item.has_checkpoint_values.value)


def decode_object_graph(data: bytes, where: str) -> list[ObjectNode]:
    """The nodes of a serialized TrackableObjectGraph; DataLossError (naming ``where``) if
    the bytes are not one, or name nodes that do not exist."""
    try:
        nodes = [_node(item) for item in TrackableObjectGraph.FromString(data).nodes]
    except InvalidArgumentError as error:
        raise DataLossError(None, None, f"{where}: the object graph is corrupt: "
                                        f"{error.message}") from None
    ids = [i for node in nodes for i, _ in node.children]
    ids += [i for node in nodes for s in node.slot_variables
            for i in (s.original_variable_node_id, s.slot_variable_node_id)]
    if not nodes or any(not 0 <= i < len(nodes) for i in ids):
        raise DataLossError(None, None, f"{where}: the object graph has no root or names a node "
                                        f"it does not hold ({len(nodes)} nodes)")
    return nodes


__all__ = ["OBJECT_GRAPH_KEY", "ObjectNode", "TrackableObjectGraph", "SerializedTensor", "SlotReference",
           "decode_object_graph", "encode_object_graph"]
