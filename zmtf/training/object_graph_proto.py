"""TF's TrackableObjectGraph proto (trackable_object_graph.proto), encoded and decoded by hand.

An object-based checkpoint stores it, serialized, as the scalar string tensor
``_CHECKPOINTABLE_OBJECT_GRAPH``: one node per object, node 0 the root Checkpoint, each
node listing its named children (by node id), the variables it saves (``attributes``) and,
for an optimizer, which node holds which slot of which variable. Fields are written in
field-number order and proto3 defaults (0, "") are left out, as protobuf does, so the bytes
equal TensorFlow's for the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zmtf.framework.errors import DataLossError, InvalidArgumentError
from zmtf.formats.proto_wire import VARINT, fields, length_delimited, varint
from zmtf.formats.proto_wire import field as proto_field

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


def _int(number: int, value: int) -> bytes:
    return proto_field(number, VARINT, varint(value)) if value else b""


def _str(number: int, value: str) -> bytes:
    return length_delimited(number, value.encode("utf-8")) if value else b""


def _encode_node(node: ObjectNode) -> bytes:
    out = [length_delimited(1, _int(1, node_id) + _str(2, name)) for node_id, name in node.children]
    out += [length_delimited(2, _str(1, a.name) + _str(2, a.full_name) + _str(3, a.checkpoint_key))
            for a in node.attributes]
    out += [length_delimited(3, _int(1, s.original_variable_node_id) + _str(2, s.slot_name)
                             + _int(3, s.slot_variable_node_id)) for s in node.slot_variables]
    out.append(length_delimited(5, _int(1, int(node.has_checkpoint_values))))
    return b"".join(out)


def encode_object_graph(nodes: list[ObjectNode]) -> bytes:
    return b"".join(length_delimited(1, _encode_node(node)) for node in nodes)


def _message(data: bytes, where: str, kinds: dict[int, int]) -> dict[int, int | str]:
    """The fields of a small message; strings decoded; a field of the wrong type is refused."""
    out: dict[int, int | str] = {}
    for number, wire_type, value in fields(data, where):
        if number not in kinds:
            continue
        if wire_type != kinds[number]:
            raise InvalidArgumentError(f"{where}: field {number} has wire type {wire_type}")
        out[number] = value.decode("utf-8") if isinstance(value, bytes) else value
    return out


def _decode_node(data: bytes, where: str) -> ObjectNode:
    node = ObjectNode()
    for number, wire_type, value in fields(data, where):
        if wire_type != 2:
            continue   # every known field of a node is a message
        if number == 1:
            ref = _message(value, where + ".children", {1: VARINT, 2: 2})
            node.children.append((int(ref.get(1, 0)), str(ref.get(2, ""))))
        elif number == 2:
            tensor = _message(value, where + ".attributes", {1: 2, 2: 2, 3: 2})
            node.attributes.append(SerializedTensor(*(str(tensor.get(i, "")) for i in (1, 2, 3))))
        elif number == 3:
            slot = _message(value, where + ".slot_variables", {1: VARINT, 2: 2, 3: VARINT})
            node.slot_variables.append(SlotReference(int(slot.get(1, 0)), str(slot.get(2, "")),
                                                     int(slot.get(3, 0))))
        elif number == 5:
            node.has_checkpoint_values = bool(_message(value, where, {1: VARINT}).get(1, 0))
    return node


def decode_object_graph(data: bytes, where: str) -> list[ObjectNode]:
    """The nodes of a serialized TrackableObjectGraph; DataLossError (naming ``where``) if
    the bytes are not one, or name nodes that do not exist."""
    try:
        nodes = [_decode_node(value, f"{where} node {i}")
                 for i, (number, wire_type, value) in enumerate(fields(data, where))
                 if number == 1 and wire_type == 2]
    except (InvalidArgumentError, UnicodeDecodeError) as error:
        raise DataLossError(None, None, f"{where}: the object graph is corrupt: {error}") from None
    ids = [i for node in nodes for i, _ in node.children]
    ids += [i for node in nodes for s in node.slot_variables
            for i in (s.original_variable_node_id, s.slot_variable_node_id)]
    if not nodes or any(not 0 <= i < len(nodes) for i in ids):
        raise DataLossError(None, None, f"{where}: the object graph has no root or names a node "
                                        f"it does not hold ({len(nodes)} nodes)")
    return nodes


__all__ = ["OBJECT_GRAPH_KEY", "ObjectNode", "SerializedTensor", "SlotReference",
           "decode_object_graph", "encode_object_graph"]
