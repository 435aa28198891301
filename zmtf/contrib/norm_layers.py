"""``tf.contrib.layers`` normalization: ``batch_norm`` (TF 1.15's variables and update
rules), ``layer_norm`` and ``unit_norm``.

batch_norm follows TF's two computations: where TF fuses (the default, for rank 2 or 4
inputs) the moving variance tracks the batch variance with Bessel's correction
(n / (n - 1)), as TF's FusedBatchNorm reports it; otherwise the plain batch variance. zmtf computes
both with ``moments`` (no FusedBatchNorm op in the graph); the output always normalizes
with the plain batch variance.
"""

from __future__ import annotations

from typing import Any

from zmtf.contrib.arg_scope import add_arg_scope
from zmtf.contrib.variables import collect_named_outputs, model_variable, named
from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops import array_ops, composite_ops, cond_ops, math_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.init_ops import Ones, Zeros
from zmtf.ops.variable_scope import variable_scope
from zmtf.training.moving_averages import assign_moving_average


def _statistics(x: Any, fused: bool) -> tuple[Any, Any, Any]:
    """(batch mean, plain batch variance, the variance the moving average tracks: with
    Bessel's correction where TF would fuse)."""
    mean, var = composite_ops.moments(x, list(range(x.shape.ndims - 1)))
    if not fused:
        return mean, var, var
    count = math_ops.cast(array_ops.size(x), x.dtype) / float(x.shape.as_list()[-1])
    return mean, var, var * count / math_ops.maximum(count - 1.0, 1.0)


@add_arg_scope
def batch_norm(inputs: Any, decay: float = 0.999, center: bool = True, scale: bool = False,
               epsilon: float = 0.001, activation_fn: Any = None,
               param_initializers: dict | None = None, param_regularizers: dict | None = None,
               updates_collections: Any = GraphKeys.UPDATE_OPS, is_training: Any = True,
               reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True,
               batch_weights: Any = None, fused: Any = None, data_format: str = "NHWC",
               zero_debias_moving_mean: bool = False, scope: Any = None,
               renorm: bool = False, **_unused: Any) -> Any:
    """Normalize over every axis but the last: in training with the batch's statistics
    (moving averages ``moving -= (moving - batch) * (1 - decay)`` added to
    ``updates_collections``, or run before the output when it is None), otherwise with
    "moving_mean"/"moving_variance". Variables in scope "BatchNorm": "beta" (``center``),
    "gamma" (``scale``), "moving_mean", "moving_variance" (not trainable), all model
    variables."""
    if data_format != "NHWC":
        raise ValueError(f"tf.contrib.layers.batch_norm in zmtf supports data_format='NHWC' "
                         f"only, got {data_format!r}")
    if batch_weights is not None or renorm:
        raise NotImplementedError("tf.contrib.layers.batch_norm in zmtf has no batch_weights "
                                  "or renorm; leave them at their defaults")
    with variable_scope(scope, default_name="BatchNorm", reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {x.name} has undefined rank.")
        channels = x.shape.as_list()[-1]
        if channels is None:
            raise ValueError(f"Inputs {x.name} has undefined channels dimension {x.shape[-1:]}.")
        fuse = fused is not False and rank in (2, 4)
        inits, regs = param_initializers or {}, param_regularizers or {}

        def param(name: str, default: Any, train: bool) -> Any:
            return model_variable(name, [channels], dtype=x.dtype,
                                  initializer=inits.get(name, default),
                                  regularizer=regs.get(name), trainable=train,
                                  collections=named(variables_collections, name))

        # TF's Keras-layer path (rank 4, UPDATE_OPS, no zero-debias) makes gamma first
        layer_path = (rank != 2 and updates_collections == GraphKeys.UPDATE_OPS
                      and not zero_debias_moving_mean)
        gamma = param("gamma", Ones(), trainable) if scale and layer_path else None
        beta = param("beta", Zeros(), trainable) if center else None
        if scale and not layer_path:
            gamma = param("gamma", Ones(), trainable)
        moving_mean = param("moving_mean", Zeros(), False)
        moving_var = param("moving_variance", Ones(), False)

        def normalize(mean: Any, var: Any) -> Any:
            return composite_ops.batch_normalization(x, mean, var, beta, gamma, epsilon)

        if is_training is False:
            y = normalize(moving_mean, moving_var)
        else:
            y = _training_output(x, is_training, fuse, decay, zero_debias_moving_mean,
                                 updates_collections, moving_mean, moving_var, normalize)
        y.set_shape(x.shape)
        if activation_fn is not None:
            y = activation_fn(y)
        return collect_named_outputs(outputs_collections, sc.name, y)


def _training_output(x: Any, is_training: Any, fuse: bool, decay: float, zero_debias: bool,
                     updates_collections: Any, moving_mean: Any, moving_var: Any,
                     normalize: Any) -> Any:
    """Batch statistics and moving-average updates; with a tensor ``is_training`` a false
    value normalizes with the moving statistics and leaves them unchanged (decay 1)."""
    mean, var, tracked = _statistics(x, fuse)
    if is_training is not True:
        flag = convert_to_tensor(is_training)
        decay = cond_ops.cond(flag, lambda: constant(decay, x.dtype),
                              lambda: constant(1.0, x.dtype))
    update_mean = assign_moving_average(moving_mean, mean, decay, zero_debias=zero_debias)
    update_var = assign_moving_average(moving_var, tracked, decay, zero_debias=False)
    graph = get_default_graph()
    if updates_collections is None:
        with graph.control_dependencies([update_mean, update_var]):
            mean, var = array_ops.identity(mean), array_ops.identity(var)
    else:
        for key in [updates_collections] if isinstance(updates_collections, str) \
                else list(updates_collections):
            graph.add_to_collection(key, update_mean)
            graph.add_to_collection(key, update_var)
    if is_training is True:
        return normalize(mean, var)
    return cond_ops.cond(convert_to_tensor(is_training), lambda: normalize(mean, var),
                         lambda: normalize(moving_mean, moving_var))


@add_arg_scope
def layer_norm(inputs: Any, center: bool = True, scale: bool = True, activation_fn: Any = None,
               reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True,
               begin_norm_axis: int = 1, begin_params_axis: int = -1,
               scope: Any = None) -> Any:
    """Normalize each example over axes ``begin_norm_axis..`` (variance epsilon 1e-12), then
    scale by "gamma" and shift by "beta" of shape ``inputs.shape[begin_params_axis:]``, in
    scope "LayerNorm"."""
    with variable_scope(scope, default_name="LayerNorm", reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {x.name} has undefined rank.")
        norm_axis = begin_norm_axis % rank if begin_norm_axis < 0 else begin_norm_axis
        params_axis = begin_params_axis % rank if begin_params_axis < 0 else begin_params_axis
        if norm_axis >= rank or params_axis >= rank:
            raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                             f"({begin_norm_axis}) must be < rank(inputs) ({rank})")
        params_shape = x.shape.as_list()[params_axis:]
        if None in params_shape:
            raise ValueError(f"Inputs {x.name}: parameters shape {x.shape[params_axis:]} must "
                             f"be fully defined.")

        def param(name: str, init: Any) -> Any:
            return model_variable(name, params_shape, dtype=x.dtype, initializer=init,
                                  trainable=trainable,
                                  collections=named(variables_collections, name))

        beta = param("beta", Zeros()) if center else None
        gamma = param("gamma", Ones()) if scale else None
        mean, var = composite_ops.moments(x, list(range(norm_axis, rank)), keep_dims=True)
        y = composite_ops.batch_normalization(x, mean, var, beta, gamma, 1e-12)
        if activation_fn is not None:
            y = activation_fn(y)
        return collect_named_outputs(outputs_collections, sc.name, y)


@add_arg_scope
def unit_norm(inputs: Any, dim: int, epsilon: float = 1e-7, scope: Any = None) -> Any:
    """``inputs / sqrt(sum(inputs ** 2, dim) + epsilon)``, under the name scope "UnitNorm"."""
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("The input rank must be known.")
    if not 0 <= dim < rank:
        raise ValueError(f"dim must be positive but smaller than the input rank: {dim}, rank "
                         f"{rank}")
    with get_default_graph().name_scope(scope or "UnitNorm"):
        squares = math_ops.reduce_sum(math_ops.square(x), [dim], keepdims=True)
        return x / math_ops.sqrt(squares + epsilon)


__all__ = ["batch_norm", "layer_norm", "unit_norm"]
