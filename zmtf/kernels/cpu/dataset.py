"""tf.data's iterator ops: the pipeline state lives in the device's resources (see
runtime/dataset_iterator.py), found by the iterator's shared name; these kernels start it
and pull elements from it."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.registry import register


def _iterator(ctx: Any, attrs: dict) -> Any:
    return ctx.resources.iterator(attrs["shared_name"], attrs["_node_name"])


@register("IteratorInit")
def iterator_init(ctx: Any, inputs: list, attrs: dict) -> list:
    """(Re)start the pipeline over the source components ``inputs``."""
    _start(ctx, inputs, attrs)
    return []


def _start(ctx: Any, inputs: list, attrs: dict) -> None:
    _iterator(ctx, attrs).start(attrs["pipeline"], inputs, attrs["_node_name"],
                                attrs.get("num_sources"), ctx, attrs.get("_device", ""))


@register("IteratorGetNext")
def iterator_get_next(ctx: Any, inputs: list, attrs: dict) -> list:
    """The next element; a one-shot iterator (sources as inputs) starts itself on first use.
    OutOfRangeError at the end, InvalidArgumentError if an element's dtype is not the graph's."""
    node = attrs["_node_name"]
    iterator = _iterator(ctx, attrs)
    if inputs and not iterator.started:
        _start(ctx, inputs, attrs)
    element = iterator.next_element(node)
    out = []
    for k, (value, dtype) in enumerate(zip(element, attrs["output_types"])):
        value = np.asarray(value)
        if value.dtype != as_dtype(dtype).np:
            raise InvalidArgumentError(f"iterator '{node}': component {k} is {value.dtype}, the "
                                       f"graph expects {dtype}; initialize it with {dtype} data")
        out.append(value)
    return out
