"""Flatten nested fetches (tensor, op, name, list, tuple, dict, namedtuple, IndexedSlices,
SparseTensor) and rebuild results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from zmtf.framework.sparse_tensor import SparseTensor, SparseTensorValue

Rebuild = Callable[[list[Any]], Any]


def flatten(graph: Graph, fetches: Any) -> tuple[list[Tensor | Operation], Rebuild]:
    """Unique graph elements to run, and a function that rebuilds ``fetches``' structure."""
    elements: list[Tensor | Operation] = []
    position: dict[int, int] = {}

    def visit(item: Any) -> Callable[[list[Any]], Any]:
        if isinstance(item, dict):
            builders = {k: visit(v) for k, v in item.items()}
            return lambda vals: type(item)((k, b(vals)) for k, b in builders.items()) \
                if type(item) is not dict else {k: b(vals) for k, b in builders.items()}
        if isinstance(item, tuple) and hasattr(item, "_fields"):
            builders_nt = [visit(v) for v in item]
            return lambda vals: type(item)(*[b(vals) for b in builders_nt])
        if isinstance(item, (list, tuple)):
            builders_seq = [visit(v) for v in item]
            return lambda vals: type(item)(b(vals) for b in builders_seq)
        if item is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        if isinstance(item, IndexedSlices):   # TF1: an IndexedSlicesValue of its parts' values
            shape = item.dense_shape
            parts = [visit(item.values), visit(item.indices)] + ([visit(shape)] if shape is not None else [])
            return lambda vals: IndexedSlicesValue(*[b(vals) for b in parts],
                                                   *([None] if shape is None else []))
        if isinstance(item, SparseTensor):   # TF1: a SparseTensorValue of its parts' values
            sparse_parts = [visit(item.indices), visit(item.values), visit(item.dense_shape)]
            return lambda vals: SparseTensorValue(*[b(vals) for b in sparse_parts])
        if getattr(type(item), "__attrs_attrs__", None) is not None:   # an attrs class, as TF1
            fields = [visit(getattr(item, a.name)) for a in type(item).__attrs_attrs__]
            return lambda vals: type(item)(*[b(vals) for b in fields])
        if CONVERSIONS and not isinstance(item, (Tensor, Operation, str)):
            for kind, fetch_fn, _, _ in CONVERSIONS:
                if isinstance(item, kind):
                    parts, contract = fetch_fn(item)
                    builders_conv = [visit(p) for p in parts]
                    return lambda vals: contract([b(vals) for b in builders_conv]) \
                        if builders_conv else None
        element = _fetch_element(graph, item)
        key = id(element)
        if key not in position:
            position[key] = len(elements)
            elements.append(element)
        index = position[key]
        return lambda vals: vals[index]

    return elements, visit(fetches)


#: (type, fetch_fn, feed_fn, feed_fn_for_partial_run) of user types run() takes, newest first
CONVERSIONS: list[tuple[type, Callable[..., Any], Callable[..., Any] | None, Callable[..., Any] | None]] = []


def register_session_run_conversion_functions(
        tensor_type: type, fetch_function: Callable[..., Any],
        feed_function: Callable[..., Any] | None = None,
        feed_function_for_partial_run: Callable[..., Any] | None = None) -> None:
    """Let ``sess.run`` fetch and feed objects of ``tensor_type`` (TF1's function of this
    name): ``fetch_function(obj)`` gives (tensors, a function of their values giving the
    result), ``feed_function(obj, value)`` the (tensor, value) pairs to feed, and
    ``feed_function_for_partial_run(obj)`` the tensors partial_run_setup is to take."""
    for kind in [c[0] for c in CONVERSIONS] + [SparseTensor, IndexedSlices, Tensor, Operation]:
        if issubclass(kind, tensor_type):
            raise ValueError(f"{tensor_type} has already been registered so ignore it.")
    CONVERSIONS.insert(0, (tensor_type, fetch_function, feed_function, feed_function_for_partial_run))


def _fetch_element(graph: Graph, item: Any) -> Tensor | Operation:
    """The graph element a fetch names, with TF1's error classes: TypeError for a fetch of
    the wrong type, ValueError for one that is not in this graph."""
    if isinstance(item, bytes):
        item = item.decode()
    try:
        return graph.as_graph_element(item)
    except TypeError as exc:
        raise TypeError(f"Fetch argument {item!r} has invalid type {type(item)}, must be a string "
                        f"or Tensor. ({exc})") from None
    except (ValueError, KeyError) as exc:
        raise ValueError(f"Fetch argument {item!r} cannot be interpreted as a Tensor. "
                         f"({exc})") from None


@dataclass(frozen=True)
class FetchPlan:
    """What a run derives from one fetch structure: its graph elements split into the tensors
    to fetch and the operations to run, and where each element's value comes from."""

    elements: list[Tensor | Operation]
    rebuild: Rebuild
    tensors: list[Tensor]
    operations: list[Operation]
    fetch_names: list[str]
    target_names: list[str]
    picks: list[int | None]   # per element: its index among ``tensors``, or None (an op)

    @staticmethod
    def of(graph: Graph, fetches: Any) -> FetchPlan:
        elements, rebuild = flatten(graph, fetches)
        if graph._unfetchable:
            for element in elements:
                if not graph.is_fetchable(element):
                    op = element.op if isinstance(element, Tensor) else element
                    raise ValueError(f"Operation {op.name!r} has been marked as not fetchable.")
        if not elements and graph.version == 0:
            raise RuntimeError("The Session graph is empty.  Add operations to the graph before "
                               "calling run().")
        tensors = [e for e in elements if isinstance(e, Tensor)]
        operations = [e for e in elements if isinstance(e, Operation)]
        position = {id(t): i for i, t in enumerate(tensors)}
        return FetchPlan(elements, rebuild, tensors, operations, [t.name for t in tensors],
                         [op.name for op in operations], [position.get(id(e)) for e in elements])


_ELEMENT_TYPES = frozenset({Tensor, Operation})


class FetchPlans:
    """FetchPlans kept per fetch structure, for fetches that are graph elements (one, or a
    flat list or tuple of them): most programs run a few structures over and over. The key
    is the elements' ids, which the kept plan's ``elements`` keep theirs. Anything else
    (names, nests, variables) is worked out on every run."""

    KEPT = 256

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._plans: dict[Any, FetchPlan] = {}

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, fetches: Any) -> FetchPlan:
        kind = type(fetches)
        if kind in _ELEMENT_TYPES:
            key: Any = id(fetches)
        elif (kind is list or kind is tuple) and set(map(type, fetches)) <= _ELEMENT_TYPES:
            key = (kind, *map(id, fetches))
        else:
            return FetchPlan.of(self._graph, fetches)
        plan = self._plans.get(key)
        if plan is None:
            plan = FetchPlan.of(self._graph, fetches)
            if len(self._plans) >= self.KEPT:
                self._plans.clear()
            self._plans[key] = plan
        return plan
