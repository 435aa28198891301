"""``tf.keras.initializers``: zmtf's initializer classes under keras's names, with keras's
defaults (RandomNormal / TruncatedNormal stddev 0.05, RandomUniform in [-0.05, 0.05]), and
``get`` that turns a name ('glorot_uniform') into an initializer."""

from __future__ import annotations

from typing import Any

from zmtf.ops import init_ops as _tf1  # TF1's he_* and lecun_* (tf.initializers)
from zmtf.framework import dtypes
from zmtf.ops import init_ops
from zmtf.ops.init_ops import (
    Constant, GlorotNormal, GlorotUniform, Initializer, Ones, Orthogonal, VarianceScaling, Zeros,
)


class RandomNormal(init_ops.RandomNormal):
    """A normal, by keras's default with stddev 0.05."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


class TruncatedNormal(init_ops.TruncatedNormal):
    """A normal truncated at two stddevs, by keras's default with stddev 0.05."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


class RandomUniform(init_ops.RandomUniform):
    """A uniform, by keras's default in [-0.05, 0.05]."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(minval=minval, maxval=maxval, seed=seed, dtype=dtype)


he_normal, he_uniform = _tf1.he_normal, _tf1.he_uniform
lecun_normal, lecun_uniform = _tf1.lecun_normal, _tf1.lecun_uniform
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
glorot_normal, glorot_uniform = GlorotNormal, GlorotUniform
orthogonal, variance_scaling = Orthogonal, VarianceScaling

_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "glorot_normal": GlorotNormal, "glorot_uniform": GlorotUniform, "he_normal": he_normal,
    "he_uniform": he_uniform, "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform,
    "orthogonal": Orthogonal, "variance_scaling": VarianceScaling,
    "uniform": RandomUniform, "normal": RandomNormal,
}


def get(identifier: Any) -> Any:
    """A name ('he_normal', or the class name 'HeNormal'), an initializer (returned as is) or
    None (None)."""
    if identifier is None or isinstance(identifier, Initializer) or (
            callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, str):
        key = identifier if identifier in _BY_NAME else _snake(identifier)
        if key in _BY_NAME:
            return _BY_NAME[key]()
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}; zmtf's "
                     f"tf.keras knows {', '.join(sorted(_BY_NAME))}")


def _snake(name: str) -> str:
    from zmtf.keras.backend import to_snake_case
    return to_snake_case(name)


__all__ = ["Constant", "GlorotNormal", "GlorotUniform", "Initializer", "Ones", "Orthogonal",
           "RandomNormal", "RandomUniform", "TruncatedNormal", "VarianceScaling", "Zeros",
           "constant", "get", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "ones", "orthogonal", "random_normal",
           "random_uniform", "truncated_normal", "variance_scaling", "zeros"]
