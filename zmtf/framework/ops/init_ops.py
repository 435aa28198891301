"""TF1 initializers: callables ``init(shape, dtype=None, partition_info=None) -> Tensor``.

What ``tf.get_variable(..., initializer=...)`` calls. The default for float variables is
Glorot-uniform, as in TF1 (integers and bools get zeros).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Tensor
from zmtf.framework.ops import array_ops, random_ops
from zmtf.framework.ops.constant_op import constant
from zmtf.framework.tensor_shape import as_shape


def _dims(shape: Any) -> list[int]:
    dims = as_shape(shape).as_list()
    if any(d is None for d in dims):
        raise ValueError(f"an initializer needs a fully defined shape, got {dims}")
    return [int(d) for d in dims]


class Initializer:
    """Base: ``dtype`` given at construction is the default for calls."""

    def __init__(self, dtype: Any = dtypes.float32) -> None:
        self.dtype = as_dtype(dtype)

    def _dtype(self, dtype: Any) -> dtypes.DType:
        return as_dtype(dtype) if dtype is not None else self.dtype


class Zeros(Initializer):
    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array_ops.zeros(_dims(shape), self._dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array_ops.ones(_dims(shape), self._dtype(dtype))


class Constant(Initializer):
    """A scalar fills the shape; a list or array must have the shape's element count."""

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims, dt = _dims(shape), self._dtype(dtype)
        value = np.asarray(self.value, dtype=dt.np)
        if value.size == 1:
            return constant(np.full(dims, value.reshape(()), dt.np), dtype=dt)
        if value.size != math.prod(dims):
            raise ValueError(f"constant_initializer: {value.size} values for shape {dims}")
        return constant(value.reshape(dims), dtype=dt)


class RandomNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return random_ops.random_normal(_dims(shape), self.mean, self.stddev, self._dtype(dtype), self.seed)


class TruncatedNormal(RandomNormal):
    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return random_ops.truncated_normal(_dims(shape), self.mean, self.stddev, self._dtype(dtype),
                                           self.seed)


class RandomUniform(Initializer):
    def __init__(self, minval: float = 0.0, maxval: float = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return random_ops.random_uniform(_dims(shape), self.minval, self.maxval, self._dtype(dtype),
                                         self.seed)


def _fans(dims: Sequence[int]) -> tuple[int, int]:
    """TF's fan_in, fan_out: [in, out] for matrices; receptive field times channels beyond."""
    if not dims:
        return 1, 1
    if len(dims) == 1:
        return dims[0], dims[0]
    if len(dims) == 2:
        return dims[0], dims[1]
    receptive = math.prod(dims[:-2])
    return dims[-2] * receptive, dims[-1] * receptive


class GlorotUniform(Initializer):
    """Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.seed = seed

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims = _dims(shape)
        fan_in, fan_out = _fans(dims)
        limit = math.sqrt(6.0 / max(1.0, fan_in + fan_out))
        return random_ops.random_uniform(dims, -limit, limit, self._dtype(dtype), self.seed)


class GlorotNormal(GlorotUniform):
    """Truncated normal, stddev sqrt(2 / (fan_in + fan_out)) corrected for the truncation."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims = _dims(shape)
        fan_in, fan_out = _fans(dims)
        stddev = math.sqrt(2.0 / max(1.0, fan_in + fan_out)) / 0.87962566103423978
        return random_ops.truncated_normal(dims, 0.0, stddev, self._dtype(dtype), self.seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
random_uniform_initializer = RandomUniform
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
