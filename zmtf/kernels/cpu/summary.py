"""Summary kernels: a scalar summary is the serialized ``Summary{value: [Value{tag,
simple_value}]}`` as a 1-D uint8 array (zmtf has no string tensors); merging concatenates
them, which protobuf reads as one Summary with every value."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.summary_proto import scalar_summary
from zmtf.kernels.registry import register


@register("ScalarSummary")
def scalar(ctx: Any, inputs: list, attrs: dict) -> list:
    value = np.asarray(inputs[0])
    if value.size != 1:
        raise InvalidArgumentError(f"tf.summary.scalar '{attrs['tag']}' needs a scalar, got shape "
                                   f"{list(value.shape)} (node '{attrs['_node_name']}')")
    encoded = scalar_summary(attrs["tag"], float(value.reshape(())))
    return [np.frombuffer(encoded, np.uint8).copy()]


@register("MergeSummary")
def merge(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.concatenate([np.asarray(x, np.uint8).reshape(-1) for x in inputs])]
