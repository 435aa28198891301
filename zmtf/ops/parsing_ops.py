"""tf.parse_example / tf.parse_single_example: serialized tf.train.Example records (tf.string)
-> a dense tensor per tf.FixedLenFeature and a SparseTensor per tf.VarLenFeature.

Both build one ParseExample op whose CPU kernel (kernels/cpu/parsing.py) decodes each record
with formats/example_proto.py; dense outputs have the shape ``serialized.shape +
feature.shape``, then come (indices, values, dense_shape) per VarLenFeature: indices [record,
position] and dense_shape [records, longest list] for a batch, [position] and [length] for
one record, as in TF1. Feature types are TF's three: float32 (FloatList), int64 (Int64List),
string (BytesList).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.sparse_tensor import SparseTensor
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


class VarLenFeature(NamedTuple):
    """A feature with any number of values per example, parsed into a SparseTensor."""

    dtype: Any


@op_def("ParseExample")
def _parse_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    outer = inputs[0].shape
    dense = [(dtypes.as_dtype(t), TensorShape(None if outer.ndims is None
                                              else [*outer.as_list(), *shape]))
             for t, shape in zip(attrs["types"], attrs["shapes"])]
    rank = None if outer.ndims is None else outer.ndims + 1
    sparse = []
    for name in attrs.get("sparse_types", []):   # indices, values, dense_shape
        sparse += [(dtypes.int64, TensorShape([None, rank])),
                   (dtypes.as_dtype(name), TensorShape([None])), (dtypes.int64, TensorShape([rank]))]
    return dense + sparse


not_differentiable("ParseExample")


def _checked_dtype(key: str, spec: Any) -> dtypes.DType:
    if not isinstance(spec, (FixedLenFeature, VarLenFeature)):
        raise TypeError(f"parse_example: feature '{key}' must be a tf.FixedLenFeature or "
                        f"tf.VarLenFeature, got {type(spec).__name__}")
    dtype = dtypes.as_dtype(spec.dtype)
    if dtype.name not in LIST_KINDS:
        raise ValueError(f"parse_example: feature '{key}' has dtype {dtype.name}; Example "
                         f"features are float32, int64 or string")
    return dtype


def _checked_spec(key: str, spec: Any) -> tuple[str, list[int], Any]:
    dtype = _checked_dtype(key, spec)
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
                         "tf.FixedLenFeature or tf.VarLenFeature")
    tensor = convert_to_tensor(serialized, dtype=dtypes.string) \
        if not isinstance(serialized, Tensor) else serialized
    if tensor.dtype != dtypes.string:
        raise TypeError(f"parse_example: serialized must be a tf.string tensor, got "
                        f"{tensor.dtype.name}")
    if tensor.shape.ndims not in (None, rank):
        what = "a scalar (one record)" if rank == 0 else "a vector (a batch of records)"
        raise ValueError(f"parse_example: serialized must be {what}, got shape {tensor.shape}")
    keys = sorted(k for k, spec in features.items() if not isinstance(spec, VarLenFeature))
    sparse_keys = sorted(k for k, spec in features.items() if isinstance(spec, VarLenFeature))
    specs = [_checked_spec(k, features[k]) for k in keys]
    op = apply_op("ParseExample", [tensor], {
        "keys": keys, "types": [s[0] for s in specs], "shapes": [s[1] for s in specs],
        "defaults": [s[2] for s in specs], "sparse_keys": sparse_keys,
        "sparse_types": [_checked_dtype(k, features[k]).name for k in sparse_keys]},
        name=name or "ParseExample")
    parsed: dict[str, Any] = dict(zip(keys, op.outputs))
    sparse_parts = op.outputs[len(keys):]
    for n, key in enumerate(sparse_keys):
        parsed[key] = SparseTensor(*sparse_parts[3 * n:3 * n + 3])
    return parsed


def parse_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                  example_names: Any = None) -> dict[str, Tensor]:
    """A batch of serialized Examples (a string vector) -> {feature: [batch, *shape] tensor, or a
    SparseTensor [batch, longest list] for a VarLenFeature}."""
    return _parse(serialized, features, name, rank=1)


def parse_single_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                         example_names: Any = None) -> dict[str, Tensor]:
    """One serialized Example (a string scalar) -> {feature: tensor of its shape}."""
    return _parse(serialized, features, name, rank=0)


__all__ = ["FixedLenFeature", "LIST_KINDS", "VarLenFeature", "parse_example",
           "parse_single_example"]
