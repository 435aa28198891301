"""``Dataset.reduce``: one graph op whose value is the fold of a function over every element.

The function is traced once on placeholders for (state, element) and cut out as a subgraph,
as a map stage's is (``Dataset._traced``); the ReduceDataset op carries it with the
pipeline, takes the sources, the captures and the initial state as inputs, and runs the
whole pipeline each time it is fetched (runtime/dataset_reduce.py). As in TF, a state whose
shape the function changes is traced again with the shape both share, until it stays put.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.dataset_ops import (  # noqa: I001
    register_extension,
    Dataset, _flatten, _most_specific, _pack, _shape_list, _sparse_starts, _structure_template,
)
from zmtf.framework.tensor_shape import TensorShape


@op_def("ReduceDataset", stateful=True)
def _reduce_outputs(inputs: list, attrs: dict[str, Any]) -> list:
    return [(as_dtype(d), TensorShape(s)) for d, s in zip(attrs["output_types"], attrs["output_shapes"])]


def _types_text(structure: Any, types: list[str]) -> str:
    return repr(_pack(structure, [as_dtype(t) for t in types]))


@register_extension
def reduce(dataset: Dataset, initial_state: Any, reduce_func: Callable[..., Any]) -> Any:
    """The state after ``reduce_func(state, element)`` has been applied to every element in
    order, starting from ``initial_state`` (a structure of tensors). The new state must have
    the initial state's structure and dtypes (TypeError otherwise); its shapes may change,
    and the result's static shape is then the one they share."""
    if not callable(reduce_func):
        raise ValueError(f"Argument `func` must be a callable. Received func={reduce_func!r} "
                         f"(of type {type(reduce_func)})")
    dataset = dataset._maps_as_stages()
    if _sparse_starts(initial_state):
        raise NotImplementedError("Dataset.reduce with a SparseTensor state is not built in zmtf")
    state = [convert_to_tensor(v) for v in _flatten(initial_state)]
    if not state:
        raise ValueError("Dataset.reduce: give an initial state of at least one tensor")
    template = _pack(initial_state, state)
    types = [t.dtype.name for t in state]
    shapes = [_shape_list(t.shape) for t in state]
    while True:
        function, captures = _traced(dataset, template, types, shapes, reduce_func)
        graph = get_default_graph()
        outputs = [graph.get_tensor_by_name(name) for name in function["fetches"]]
        relaxed = [_most_specific(old, _shape_list(new.shape)) for old, new in zip(shapes, outputs)]
        if relaxed == shapes:
            break
        shapes = relaxed
    attrs = {"pipeline": dataset._stages, "num_sources": len(dataset._sources),
             "num_captures": len(captures), "reduce_func": function,
             "output_types": types, "output_shapes": shapes}
    op = apply_op("ReduceDataset", list(dataset._sources) + list(captures) + state, attrs,
                  name="ReduceDataset")
    return _pack(template, list(op.outputs))


def _traced(dataset: Dataset, template: Any, types: list[str], shapes: list[Any],
            reduce_func: Callable[..., Any]) -> tuple[dict, tuple]:
    """``reduce_func`` traced on placeholders for (state, element) of these types and
    shapes, its new state checked against the state's structure and dtypes."""
    pair = Dataset((template, dataset._structure), dataset._sources, dataset._stages,
                   shapes + dataset._shapes, (), types + dataset._types, dataset._captures)

    def body(element: Any) -> list[Any]:
        state, item = element
        new = reduce_func(state, item)
        if _structure_template(new) != _structure_template(state):
            raise TypeError(f"The new state's structure must match the initial state's. "
                            f"Expected {_structure_template(state)} but got "
                            f"{_structure_template(new)} (None marks a tensor).")
        leaves = [convert_to_tensor(v) for v in _flatten(new)]
        got = [t.dtype.name for t in leaves]
        if got != types:
            raise TypeError(f"The element types for the new state must match the initial "
                            f"state. Expected {_types_text(template, types)} but got "
                            f"{_types_text(template, got)}.")
        return leaves

    return pair._traced("reduce", body)
