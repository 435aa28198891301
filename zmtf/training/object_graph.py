"""The object graph of a ``tf.train.Checkpoint``: which objects it reaches, by which names.

TF saves objects, not variable names: starting at the root Checkpoint, a breadth-first walk
gives every reachable object one node id and one path (the names along the first way it was
reached, e.g. ``model/layers/0``); a variable's value is stored under
``<path>/.ATTRIBUTES/VARIABLE_VALUE``, an optimizer slot under
``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>/.ATTRIBUTES/VARIABLE_VALUE``.
Renaming a graph variable changes nothing; renaming an attribute changes the key.

What is tracked: variables (leaves), dicts (string keys) and lists/tuples of trackables,
Checkpoints, and zmtf's TF1 optimizers (their non-slot variables such as Adam's
``beta1_power`` by name, and their slot variables). Non-trackable values inside a dict or
list are skipped, as TF's wrappers skip them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zmtf.framework.graph import Graph
from zmtf.ops.variables import Variable
from zmtf.training.object_graph_proto import ObjectNode, SerializedTensor, SlotReference
from zmtf.training.optimizers import Optimizer

VARIABLE_VALUE = "VARIABLE_VALUE"


def escape_local_name(name: str) -> str:
    """TF's escaping of one path element: "." doubles, "/" becomes ".S"."""
    return name.replace(".", "..").replace("/", ".S")


def variable_key(path: str) -> str:
    return f"{path}/.ATTRIBUTES/{VARIABLE_VALUE}"


def slot_path(variable_path: str, optimizer_path: str, slot_name: str) -> str:
    return f"{variable_path}/.OPTIMIZER_SLOT/{optimizer_path}/{slot_name}"


def is_keras_object(value: Any) -> bool:
    return any(cls.__module__.startswith("zmtf.keras") for cls in type(value).__mro__)


def is_trackable(value: Any) -> bool:
    """What a Checkpoint accepts as a dependency."""
    return (isinstance(value, (Variable, Optimizer, dict, list, tuple))
            or hasattr(value, "_checkpoint_children"))


def trackable_children(value: Any, graph: Graph | None) -> list[tuple[str, Any]]:
    """(local name, child) of one object, in TF's order."""
    if hasattr(value, "_checkpoint_children"):
        return value._checkpoint_children()
    if isinstance(value, Optimizer):
        return [(name, v) for (name, g), v in value._non_slots.items() if g is graph]
    if isinstance(value, dict):
        children = []
        for key, child in value.items():
            if not is_trackable(child):
                continue
            if not isinstance(key, str):
                raise ValueError(f"Unable to save a dictionary with the non-string key {key!r} "
                                 f"mapping to a trackable object; use string keys.")
            children.append((key, child))
        return children
    if isinstance(value, (list, tuple)):
        return [(str(i), child) for i, child in enumerate(value) if is_trackable(child)]
    if is_keras_object(value):
        raise NotImplementedError(
            f"tf.train.Checkpoint does not track zmtf keras Layers/Models yet ({value!r}); "
            f"checkpoint their variables instead, e.g. Checkpoint(model=dict(zip(names, "
            f"model.weights))), or use tf.train.Saver / model.save_weights.")
    return []


@dataclass
class ObjectGraph:
    """Every object reached from a root: ``objects[i]`` is node i, ``paths[i]`` its path."""

    objects: list[Any]
    paths: list[str]
    nodes: list[ObjectNode]

    def variables(self) -> dict[str, Variable]:
        """Checkpoint key -> variable, in node order."""
        return {node.attributes[0].checkpoint_key: obj
                for obj, node in zip(self.objects, self.nodes) if node.attributes}


def _add(graph: ObjectGraph, ids: dict[int, int], obj: Any, path: str) -> int:
    ids[id(obj)] = len(graph.objects)
    graph.objects.append(obj)
    graph.paths.append(path)
    node = ObjectNode()
    if isinstance(obj, Variable):
        node.attributes.append(SerializedTensor(VARIABLE_VALUE, obj.op.name, variable_key(path)))
    graph.nodes.append(node)
    return ids[id(obj)]


def _add_slots(graph: ObjectGraph, ids: dict[int, int]) -> None:
    """Slot variables become extra nodes after every other one, as TF numbers them."""
    non_slot = list(graph.objects)
    for optimizer_id, optimizer in enumerate(non_slot):
        if not isinstance(optimizer, Optimizer):
            continue
        for slot_name in optimizer.get_slot_names():
            for original_id, original in enumerate(non_slot):
                if not isinstance(original, Variable):
                    continue
                slot = optimizer.get_slot(original, slot_name)
                if slot is None:
                    continue
                if id(slot) in ids:
                    raise NotImplementedError(
                        f"The slot variable {slot.name} is also a dependency of the checkpoint "
                        f"itself; a slot variable cannot be saved twice.")
                path = slot_path(graph.paths[original_id], graph.paths[optimizer_id], slot_name)
                slot_id = _add(graph, ids, slot, path)
                graph.nodes[optimizer_id].slot_variables.append(
                    SlotReference(original_id, slot_name, slot_id))


def _mark_values(nodes: list[ObjectNode]) -> None:
    """has_checkpoint_values: a node saves something itself or some descendant does."""
    marked = {i for i, n in enumerate(nodes) if n.attributes or n.slot_variables}
    changed = True
    while changed:
        changed = False
        for i, node in enumerate(nodes):
            if i not in marked and any(child in marked for child, _ in node.children):
                marked.add(i)
                changed = True
    for i, node in enumerate(nodes):
        node.has_checkpoint_values = i in marked


def build_object_graph(root: Any, graph: Graph | None) -> ObjectGraph:
    """Walk ``root`` breadth-first (``graph``: the graph whose optimizer variables count)."""
    result = ObjectGraph([], [], [])
    ids: dict[int, int] = {}
    _add(result, ids, root, "")
    position = 0
    while position < len(result.objects):
        obj, path = result.objects[position], result.paths[position]
        for name, child in trackable_children(obj, graph):
            if id(child) not in ids:
                escaped = escape_local_name(name)
                _add(result, ids, child, f"{path}/{escaped}" if path else escaped)
            result.nodes[position].children.append((ids[id(child)], name))
        position += 1
    _add_slots(result, ids)
    _mark_values(result.nodes)
    return result


__all__ = ["ObjectGraph", "build_object_graph", "escape_local_name", "is_trackable",
           "trackable_children", "variable_key"]
