"""``tf.contrib.framework`` / ``slim.variables`` variable creators: ``variable`` and
``model_variable`` (which also files the variable under MODEL_VARIABLES, so savers and
``get_model_variables`` see the model's weights apart from optimizer slots and counters),
and the helpers the contrib layers use to file variables and outputs in collections."""

from __future__ import annotations

from typing import Any

from zmtf.contrib.arg_scope import add_arg_scope
from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops.variable_scope import get_variable


def listed(collections: Any) -> list[str]:
    """A collection name, a list of them or None, as a list."""
    if collections is None:
        return []
    return [collections] if isinstance(collections, str) else list(collections)


def named(collections: Any, name: str) -> list[str]:
    """``variables_collections`` as TF takes it: a list for every variable, or a dict by name."""
    if isinstance(collections, dict):
        return listed(collections.get(name))
    return listed(collections)


@add_arg_scope
def variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
             regularizer: Any = None, trainable: bool = True, collections: Any = None,
             caching_device: Any = None, device: Any = None, partitioner: Any = None,
             **_unused: Any) -> Any:
    """``tf.get_variable`` in ``collections`` (default GLOBAL_VARIABLES), on ``device``."""
    keys = list(dict.fromkeys(listed(collections) or [GraphKeys.GLOBAL_VARIABLES]))
    with get_default_graph().device(device or ""):
        return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                            regularizer=regularizer, trainable=trainable, collections=keys,
                            caching_device=caching_device, partitioner=partitioner)


@add_arg_scope
def model_variable(name: str, shape: Any = None, dtype: Any = dtypes.float32,
                   initializer: Any = None, regularizer: Any = None, trainable: bool = True,
                   collections: Any = None, caching_device: Any = None, device: Any = None,
                   partitioner: Any = None, **_unused: Any) -> Any:
    """A ``variable`` also in GLOBAL_VARIABLES and MODEL_VARIABLES."""
    keys = listed(collections) + [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, trainable=trainable, collections=keys,
                    caching_device=caching_device, device=device, partitioner=partitioner)


def add_model_variable(var: Any) -> None:
    """File ``var`` under MODEL_VARIABLES (once)."""
    graph = get_default_graph()
    if var not in graph.get_collection(GraphKeys.MODEL_VARIABLES):
        graph.add_to_collection(GraphKeys.MODEL_VARIABLES, var)


def collect_named_outputs(collections: Any, alias: str, outputs: Any) -> Any:
    """Add a layer's ``outputs`` to ``collections`` and return them. TF also tags the
    tensor with ``alias``; zmtf's tensors take no attributes, so the alias is not kept."""
    for key in listed(collections):
        get_default_graph().add_to_collection(key, outputs)
    return outputs


__all__ = ["add_model_variable", "collect_named_outputs", "model_variable", "variable"]
