"""``tf.contrib.slim``: the contrib layers, ``arg_scope`` and the variable helpers under
the one name TF-slim model code imports (``slim = tf.contrib.slim``), plus
``slim.losses`` (tf.losses) and ``slim.variables``. ``slim.learning`` and the
slim nets are not in zmtf."""

from __future__ import annotations

from typing import Any

from zmtf.ops import losses_impl as losses  # tf.losses (zmtf/tf1/losses.py re-exports it)
from zmtf.contrib import framework as variables
from zmtf.contrib.arg_scope import add_arg_scope, arg_scope, arg_scoped_arguments, current_arg_scope
from zmtf.contrib.framework import (
    add_model_variable, get_local_variables, get_model_variables, get_or_create_global_step,
    get_trainable_variables, get_unique_variable, get_variables, get_variables_by_name,
    get_variables_to_restore, model_variable, variable,
)
from zmtf.contrib.layers import (
    avg_pool2d, batch_norm, conv2d, conv2d_transpose, convolution2d, convolution2d_transpose,
    dropout, embed_sequence, flatten, fully_connected, l1_regularizer, l2_regularizer,
    layer_norm, linear, max_pool2d, one_hot_encoding, repeat, separable_conv2d,
    separable_convolution2d, stack, unit_norm, variance_scaling_initializer,
    xavier_initializer,
)

__all__ = ["add_arg_scope", "add_model_variable", "arg_scope", "arg_scoped_arguments",
           "avg_pool2d", "batch_norm", "conv2d", "conv2d_transpose", "convolution2d",
           "convolution2d_transpose", "current_arg_scope", "dropout", "embed_sequence",
           "flatten", "fully_connected", "get_local_variables", "get_model_variables",
           "get_or_create_global_step", "get_trainable_variables", "get_unique_variable",
           "get_variables", "get_variables_by_name", "get_variables_to_restore",
           "l1_regularizer", "l2_regularizer", "layer_norm", "linear", "losses",
           "max_pool2d", "model_variable", "one_hot_encoding", "repeat", "separable_conv2d",
           "separable_convolution2d", "stack", "unit_norm", "variable", "variables",
           "variance_scaling_initializer", "xavier_initializer"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tf.contrib.slim.{name} is not in zmtf (slim.learning, slim.nets, "
                         f"slim.metrics and the data providers are not built); it has "
                         f"{', '.join(__all__)}")
