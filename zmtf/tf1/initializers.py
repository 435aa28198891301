"""``tf.initializers``: TF 1.x's namespace of the initializer classes (``tf.initializers.
glorot_uniform()`` is ``tf.glorot_uniform_initializer()``), plus the variable initializers
``global_variables``, ``local_variables``, ``variables`` and ``tables_initializer``."""

from zmtf.ops.init_ops import (
    Constant as constant, GlorotNormal as glorot_normal, GlorotUniform as glorot_uniform,
    Ones as ones, Orthogonal as orthogonal, RandomNormal as random_normal,
    RandomUniform as random_uniform, TruncatedNormal as truncated_normal,
    UniformUnitScaling as uniform_unit_scaling, VarianceScaling as variance_scaling,
    Zeros as zeros, he_normal, he_uniform, lecun_normal, lecun_uniform,
)
from zmtf.ops.variables import (
    global_variables_initializer as global_variables, local_variables_initializer as local_variables,
    tables_initializer, variables_initializer as variables,
)

__all__ = ["constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
           "he_uniform", "lecun_normal", "lecun_uniform", "local_variables", "ones", "orthogonal",
           "random_normal", "random_uniform", "tables_initializer", "truncated_normal",
           "uniform_unit_scaling", "variance_scaling", "variables", "zeros"]
