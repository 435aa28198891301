"""Random ops: seedable like TF1 (graph seed from tf.set_random_seed + op seed); random_shuffle."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.array_ops import _shape_tensor, _shape_value
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.math_ops import add, multiply
from zmtf.framework.tensor_shape import TensorShape

RANDOM_OPS = ("RandomStandardNormal", "RandomUniform", "TruncatedNormal")
STRING_INPUT_OPS.add("RandomShuffle")   # string_input_producer shuffles file names


@op_def(*RANDOM_OPS, stateful=True)
def _random_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    target = _shape_value(inputs[0])
    return [(as_dtype(attrs["dtype"]), TensorShape(target) if target is not None else TensorShape(None))]


def _random(op_type: str, shape: Any, dtype: Any, seed: int | None, name: str | None) -> Tensor:
    graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
    attrs = {"dtype": as_dtype(dtype).name, "seed": graph_seed, "seed2": op_seed}
    return apply_op(op_type, [_shape_tensor(shape)], attrs, name=name).outputs[0]


def random_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                  seed: int | None = None, name: str | None = None) -> Tensor:
    sample = _random("RandomStandardNormal", shape, dtype, seed, name or "random_normal")
    return _affine(sample, stddev, mean)


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    sample = _random("TruncatedNormal", shape, dtype, seed, name or "truncated_normal")
    return _affine(sample, stddev, mean)


@op_def("RandomUniformInt", stateful=True)
def _random_int_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    for bound, what in ((inputs[1], "minval"), (inputs[2], "maxval")):
        if bound.shape.ndims not in (None, 0):
            raise ValueError(f"random_uniform: {what} must be a scalar, got shape {bound.shape}")
    target = _shape_value(inputs[0])
    return [(inputs[1].dtype, TensorShape(target) if target is not None else TensorShape(None))]


def random_uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = dtypes.float32,
                   seed: int | None = None, name: str | None = None) -> Tensor:
    """Floats from [minval, maxval) (default [0, 1)); for int32/int64, integers from
    [minval, maxval) (TF's RandomUniformInt), where maxval is required."""
    dtype = as_dtype(dtype)
    if dtype not in (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64):
        raise ValueError(f"Invalid dtype {dtype!r}")
    if dtype.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        graph = get_default_graph()
        graph_seed, op_seed = graph.seeds_for_op(seed)
        with graph.name_scope(name or "random_uniform") as scope:
            bounds = [convert_to_tensor(minval, dtype=dtype, name="min"),
                      convert_to_tensor(maxval, dtype=dtype, name="max")]
            attrs = {"seed": graph_seed, "seed2": op_seed}
            return apply_op("RandomUniformInt", [_shape_tensor(shape), *bounds], attrs, name=scope).outputs[0]
    maxval = 1 if maxval is None else maxval
    sample = _random("RandomUniform", shape, dtype, seed, name or "random_uniform")
    if isinstance(maxval, (int, float)) and isinstance(minval, (int, float)):
        return _affine(sample, maxval - minval, minval)
    return add(multiply(sample, maxval - minval), minval)


def _affine(sample: Tensor, scale: Any, shift: Any) -> Tensor:
    if not (isinstance(scale, (int, float)) and scale == 1):
        sample = multiply(sample, scale)
    if not (isinstance(shift, (int, float)) and shift == 0):
        sample = add(sample, shift)
    return sample


@op_def("RandomShuffle", stateful=True)
def _shuffle_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its first dimension randomly permuted (a fresh permutation each run)."""
    value = convert_to_tensor(value, name="value")
    graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
    attrs = {"seed": graph_seed, "seed2": op_seed}
    return apply_op("RandomShuffle", [value], attrs, name=name or "RandomShuffle").outputs[0]


def set_random_seed(seed: int) -> None:
    """Set the default graph's seed so random ops are reproducible across runs of the program."""
    get_default_graph().seed = int(seed)
