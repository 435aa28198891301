"""tf.parse_example / tf.parse_single_example with tf.FixedLenFeature: serialized
tf.train.Example records (tf.string) -> dense tensors, one per feature.

Both build one ParseExample op whose CPU kernel (kernels/cpu/parsing.py) decodes each record
with framework/example_proto.py; outputs have the shape ``serialized.shape + feature.shape``.
Feature types are TF's three: float32 (FloatList), int64 (Int64List), string (BytesList).
VarLenFeature needs SparseTensor, which zmtf does not have.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.framework.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

STRING_INPUT_OPS.add("ParseExample")
#: the dtype a FixedLenFeature may have -> the list kind of tf.train.Feature that holds it
LIST_KINDS = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}


class FixedLenFeature(NamedTuple):
    """A feature with a fixed number of values, parsed into a tensor of ``shape``;
    ``default_value`` (of that shape) when an example lacks it, else it is required."""

    shape: Any
    dtype: Any
    default_value: Any = None


def VarLenFeature(dtype: Any) -> Any:  # noqa: N802 (TF's name)
    raise NotImplementedError("tf.VarLenFeature is not built in zmtf: it parses into a "
                              "SparseTensor, which zmtf lacks. Use tf.FixedLenFeature with a "
                              "fixed shape (pad the lists when writing the examples)")


@op_def("ParseExample")
def _parse_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    outer = inputs[0].shape
    return [(dtypes.as_dtype(t), TensorShape(None if outer.ndims is None
                                             else [*outer.as_list(), *shape]))
            for t, shape in zip(attrs["types"], attrs["shapes"])]


not_differentiable("ParseExample")


def _checked_spec(key: str, spec: Any) -> tuple[str, list[int], Any]:
    if not isinstance(spec, FixedLenFeature):
        raise TypeError(f"parse_example: feature '{key}' must be a tf.FixedLenFeature, got "
                        f"{type(spec).__name__}")
    dtype = dtypes.as_dtype(spec.dtype)
    if dtype.name not in LIST_KINDS:
        raise ValueError(f"parse_example: feature '{key}' has dtype {dtype.name}; Example "
                         f"features are float32, int64 or string")
    shape = [int(d) for d in (spec.shape if isinstance(spec.shape, (list, tuple))
                              else TensorShape(spec.shape).as_list())]
    if any(d < 0 for d in shape):
        raise ValueError(f"parse_example: feature '{key}' needs a fully defined shape, got {shape}")
    default = None
    if spec.default_value is not None:
        value = (dtypes.to_string_array(spec.default_value) if dtype == dtypes.string
                 else np.asarray(spec.default_value, dtype=dtype.np))
        if value.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"parse_example: feature '{key}': default_value has {value.size} "
                             f"values, its shape {shape} needs {int(np.prod(shape))}")
        default = value.reshape(shape)
        default.setflags(write=False)
    return dtype.name, shape, default


def _parse(serialized: Any, features: dict[str, Any], name: str | None, rank: int) -> dict:
    if not isinstance(features, dict) or not features:
        raise ValueError("parse_example: features must be a non-empty dict of name -> "
                         "tf.FixedLenFeature")
    tensor = convert_to_tensor(serialized, dtype=dtypes.string) \
        if not isinstance(serialized, Tensor) else serialized
    if tensor.dtype != dtypes.string:
        raise TypeError(f"parse_example: serialized must be a tf.string tensor, got "
                        f"{tensor.dtype.name}")
    if tensor.shape.ndims not in (None, rank):
        what = "a scalar (one record)" if rank == 0 else "a vector (a batch of records)"
        raise ValueError(f"parse_example: serialized must be {what}, got shape {tensor.shape}")
    keys = sorted(features)
    specs = [_checked_spec(k, features[k]) for k in keys]
    op = apply_op("ParseExample", [tensor], {
        "keys": keys, "types": [s[0] for s in specs], "shapes": [s[1] for s in specs],
        "defaults": [s[2] for s in specs]}, name=name or "ParseExample")
    return dict(zip(keys, op.outputs))


def parse_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                  example_names: Any = None) -> dict[str, Tensor]:
    """A batch of serialized Examples (a string vector) -> {feature: [batch, *shape] tensor}."""
    return _parse(serialized, features, name, rank=1)


def parse_single_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                         example_names: Any = None) -> dict[str, Tensor]:
    """One serialized Example (a string scalar) -> {feature: tensor of its shape}."""
    return _parse(serialized, features, name, rank=0)


__all__ = ["FixedLenFeature", "LIST_KINDS", "VarLenFeature", "parse_example",
           "parse_single_example"]
