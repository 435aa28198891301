"""``tf.random``: TF 1.13+'s namespace for the random ops (the same functions as tf.random_*)."""

from zmtf.ops.random_distributions import (
    categorical, multinomial, random_gamma as gamma, random_poisson as poisson,
)
from zmtf.ops.random_ops import (
    random_normal as normal, random_shuffle as shuffle, random_uniform as uniform,
    set_random_seed, truncated_normal,
)

__all__ = ["categorical", "gamma", "multinomial", "normal", "poisson", "set_random_seed",
           "shuffle", "truncated_normal", "uniform"]
