"""Where a tf.metrics metric keeps its state, and how it publishes its value and update op:
shared by metrics.py and ranking_metrics.py."""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops import array_ops
from zmtf.ops.variables import Variable


def metric_variable(shape: list[int], dtype: Any, name: str) -> Variable:
    """A zero-initialized, non-trainable local variable holding a metric's state."""
    return Variable(lambda: array_ops.zeros(shape, dtype), trainable=False, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def collect(collections: Any, value: Any) -> None:
    """Add ``value`` to the ``metrics_collections`` or ``updates_collections`` given."""
    if collections:
        get_default_graph().add_to_collections(collections, value)
