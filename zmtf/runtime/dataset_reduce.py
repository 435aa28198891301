"""The ReduceDataset kernel (see ops/dataset_reduce.py): the whole pipeline, built
fresh on each run, folded into the state by the traced function, element by element on the
calling thread (as a map stage runs its function)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.registry import register
from zmtf.runtime.dataset_iterator import _pipeline
from zmtf.runtime.dataset_stages import check, is_int
from zmtf.runtime.functional import run_now


@register("ReduceDataset")
def reduce_dataset(ctx: Any, inputs: list, attrs: dict) -> list:
    """The state after every element: inputs are the sources, the captures, then the
    initial state."""
    node = attrs["_node_name"]
    # graph attrs from the wire: any type (or missing) until the check below has seen them
    sources: Any = attrs.get("num_sources")
    captures: Any = attrs.get("num_captures")
    fn: Any = attrs.get("reduce_func")
    types: Any = attrs.get("output_types")
    check(is_int(sources) and is_int(captures) and 0 <= sources and 0 <= captures
          and isinstance(types, list) and sources + captures + len(types) == len(inputs)
          and isinstance(fn, dict) and isinstance(fn.get("captures"), list)
          and all(is_int(i) and 0 <= i < captures for i in fn["captures"]), node,
          "ReduceDataset's inputs and function")
    arrays = [np.asarray(v) for v in inputs]
    found = arrays[sources:sources + captures]
    device = attrs.get("_device", "")
    make = _pipeline(attrs["pipeline"], arrays[:sources], node, found,
                     lambda f, values: run_now(ctx, f, values), device, ctx.resources.files)
    fn = {**fn, "_device": device}
    extra = [found[i] for i in fn["captures"]]
    state = arrays[sources + captures:]
    for element in make():
        state = [np.asarray(v) for v in run_now(ctx, fn, state + list(element) + extra)]
    for k, (value, dtype) in enumerate(zip(state, types)):
        if value.dtype != as_dtype(dtype).np:
            raise InvalidArgumentError(f"ReduceDataset '{node}': state component {k} is "
                                       f"{value.dtype}, the graph expects {dtype}")
    return state
