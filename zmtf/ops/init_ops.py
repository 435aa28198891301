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
from zmtf.ops import array_ops, diag_ops, linalg_solve_ops, math_ops, random_ops
from zmtf.ops.constant_op import constant
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


class VarianceScaling(Initializer):
    """Variance ``scale / n`` with n the fan_in, fan_out or their mean (``mode``): a truncated
    normal (TF1's "normal" too), an untruncated normal, or a uniform in [-sqrt(3 scale / n), +]."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        if scale <= 0.0:
            raise ValueError(f"`scale` must be a positive float, got {scale}")
        if mode not in self._MODES:
            raise ValueError(f"Invalid `mode` argument {mode!r}: use one of {self._MODES}")
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"Invalid `distribution` argument {distribution!r}: use one of "
                             f"{self._DISTRIBUTIONS}")
        super().__init__(dtype)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims, dt = _dims(shape), self._dtype(dtype)
        fan_in, fan_out = _fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            # 0.8796...: the stddev of a unit normal truncated to [-2, 2]
            stddev = math.sqrt(scale) / 0.87962566103423978
            return random_ops.truncated_normal(dims, 0.0, stddev, dt, self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(dims, 0.0, math.sqrt(scale), dt, self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(dims, -limit, limit, dt, self.seed)


class GlorotUniform(VarianceScaling):
    """Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class GlorotNormal(VarianceScaling):
    """Truncated normal, stddev sqrt(2 / (fan_in + fan_out)) corrected for the truncation."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


class UniformUnitScaling(Initializer):
    """Uniform in [-m, m], m = factor * sqrt(3 / input_size), input_size being the product of
    all dims but the last: keeps a matmul's or conv's output scale (deprecated in TF1 for
    variance_scaling_initializer)."""

    def __init__(self, factor: float = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.factor, self.seed = factor, seed

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims = _dims(shape)
        input_size = max(1.0, float(math.prod(dims[:-1])))
        limit = math.sqrt(3.0 / input_size) * self.factor
        return random_ops.random_uniform(dims, -limit, limit, self._dtype(dtype), self.seed)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``: the Q of the QR of a normal matrix, signs
    fixed so that it is uniform over orthogonal matrices; higher ranks are reshaped from
    [prod(dims[:-1]), dims[-1]]."""

    def __init__(self, gain: float = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.gain, self.seed = gain, seed

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims, dt = _dims(shape), self._dtype(dtype)
        if len(dims) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional, got "
                             f"shape {dims}")
        rows, cols = math.prod(dims[:-1]), dims[-1]
        normal = random_ops.random_normal([max(rows, cols), min(rows, cols)], 0.0, 1.0, dt,
                                          self.seed)
        q, r = linalg_solve_ops.qr(normal)
        q = q * math_ops.sign(diag_ops.diag_part(r))
        if rows < cols:
            q = array_ops.transpose(q)
        return array_ops.reshape(self.gain * q, dims)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
random_uniform_initializer = RandomUniform
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
variance_scaling_initializer = VarianceScaling
uniform_unit_scaling_initializer = UniformUnitScaling
orthogonal_initializer = Orthogonal


def he_normal(seed: int | None = None) -> VarianceScaling:
    """Truncated normal with variance 2 / fan_in (for ReLU layers)."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    """Uniform with variance 2 / fan_in."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    """Truncated normal with variance 1 / fan_in (for SELU layers)."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    """Uniform with variance 1 / fan_in."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)
