"""``tf.contrib.layers``: TF1's contrib initializers, regularizers, layers, and
``optimize_loss`` (see contrib/optimizers.py).

The regularizers return functions ``weights -> scalar Tensor`` (or None for a zero
scale), as TF's, so they plug into ``tf.get_variable(regularizer=)``,
``tf.layers.dense(kernel_regularizer=)`` and ``apply_regularization``.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Callable

from zmtf.contrib.arg_scope import add_arg_scope
from zmtf.contrib.conv_layers import (
    avg_pool2d, conv2d, conv2d_transpose, convolution2d, convolution2d_transpose, finish_layer,
    max_pool2d, separable_conv2d, separable_convolution2d,
)
from zmtf.contrib.initializers import (
    variance_scaling_initializer, xavier_initializer, xavier_initializer_conv2d,
)
from zmtf.contrib.norm_layers import batch_norm, layer_norm, unit_norm
from zmtf.contrib.optimizers import (
    OPTIMIZER_CLS_NAMES, OPTIMIZER_SUMMARIES, adaptive_clipping_fn, optimize_loss,
)
from zmtf.contrib.variables import collect_named_outputs, model_variable, named
from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.framework import dtypes
from zmtf.ops import array_ops, composite_ops, embedding_ops, math_ops, nn_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.init_ops import Zeros
from zmtf.ops.variable_scope import variable_scope
from zmtf.ops.layers import dropout as _core_dropout
from zmtf.ops.layers import flatten as _core_flatten

Regularizer = Callable[[Any], Any]


def _checked_scale(scale: Any) -> bool:
    """False for a zero scale (the regularizer is off); errors as TF's for bad scales."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        if scale == 0.0:
            return False
    return True


def _scaled(scale: Any, scope: str | None, default: str, penalty: Callable[[Any], Any]) -> Regularizer:
    if not _checked_scale(scale):
        return lambda _weights: None

    def regularize(weights: Any, name: str | None = None) -> Any:
        weights = convert_to_tensor(weights)
        with get_default_graph().name_scope(scope or default) as scope_name:
            factor = convert_to_tensor(scale, dtype=weights.dtype, name="scale")
            return math_ops.multiply(factor, penalty(weights), name=scope_name)

    return regularize


def l1_regularizer(scale: float, scope: str | None = None) -> Regularizer:
    """``scale * sum(|w|)``."""
    return _scaled(scale, scope, "l1_regularizer", lambda w: math_ops.reduce_sum(math_ops.abs(w)))


def l2_regularizer(scale: float, scope: str | None = None) -> Regularizer:
    """``scale * sum(w ** 2) / 2`` (``tf.nn.l2_loss``)."""
    return _scaled(scale, scope, "l2_regularizer", composite_ops.l2_loss)


def sum_regularizer(regularizer_list: list[Regularizer | None], scope: str | None = None) -> Regularizer | None:
    """The sum of several regularizers' penalties (those that give one)."""
    parts = [r for r in regularizer_list if r is not None]
    if not parts:
        return None

    def regularize(weights: Any) -> Any:
        with get_default_graph().name_scope(scope or "sum_regularizer") as scope_name:
            penalties = [p for p in (r(weights) for r in parts) if p is not None]
            return math_ops.add_n(penalties, name=scope_name) if penalties else None

    return regularize


def l1_l2_regularizer(scale_l1: float = 1.0, scale_l2: float = 1.0, scope: str | None = None) -> Regularizer:
    """``l1_regularizer(scale_l1) + l2_regularizer(scale_l2)``."""
    if isinstance(scale_l1, numbers.Real) and isinstance(scale_l2, numbers.Real) \
            and scale_l1 == 0 and scale_l2 == 0:
        return lambda _weights: None
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer: Regularizer, weights_list: list[Any] | None = None) -> Any:
    """The summed penalty of ``regularizer`` over ``weights_list`` (default: the WEIGHTS
    collection), also added to REGULARIZATION_LOSSES."""
    graph = get_default_graph()
    weights_list = weights_list or graph.get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with graph.name_scope("get_regularization_penalty") as scope_name:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else constant(0.0) for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a Tensor "
                                 f"with rank {p.shape.ndims}.")
        total = math_ops.add_n(penalties, name=scope_name)
    graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


@add_arg_scope
def fully_connected(inputs: Any, num_outputs: int, activation_fn: Any = nn_ops.relu,
                    normalizer_fn: Any = None, normalizer_params: dict | None = None,
                    weights_initializer: Any = None, weights_regularizer: Any = None,
                    biases_initializer: Any = Zeros(), biases_regularizer: Any = None,
                    reuse: Any = None, variables_collections: Any = None,
                    outputs_collections: Any = None, trainable: bool = True,
                    scope: Any = None) -> Any:
    """``activation_fn(inputs @ weights + biases)`` over the last dimension: variables
    "<scope>/weights" (Xavier) and "<scope>/biases" (none with a ``normalizer_fn``, which
    is applied instead), scope "fully_connected" by default; ReLU unless told otherwise."""
    x = convert_to_tensor(inputs)
    depth = x.shape.as_list()[-1] if x.shape.ndims else None
    if depth is None:
        raise ValueError(f"fully_connected: the last dimension of the inputs must be known, got "
                         f"{x.shape} ({x.name})")
    with variable_scope(scope, default_name="fully_connected", reuse=reuse) as sc:
        weights = model_variable("weights", [depth, int(num_outputs)], dtype=x.dtype,
                                 initializer=weights_initializer or xavier_initializer(),
                                 regularizer=weights_regularizer, trainable=trainable,
                                 collections=named(variables_collections, "weights"))
        flat = x if x.shape.ndims == 2 else array_ops.reshape(x, [-1, depth])
        y = math_ops.matmul(flat, weights)
        if x.shape.ndims != 2:
            y = array_ops.reshape(y, array_ops.concat([array_ops.shape(x)[:-1], [int(num_outputs)]], 0))
        y = finish_layer(y, num_outputs, normalizer_fn, normalizer_params, biases_initializer,
                         biases_regularizer, trainable, variables_collections, activation_fn)
        return collect_named_outputs(outputs_collections, sc.name, y)


@add_arg_scope
def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> Any:
    """[batch, ...] -> [batch, product of the rest], under the name scope "Flatten"."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims is not None and x.shape.ndims < 2:
        raise ValueError("Inputs must have a least 2 dimensions.")
    y = _core_flatten(x, name=scope or "Flatten")
    return collect_named_outputs(outputs_collections, y.op.name.rsplit("/", 1)[0], y)


@add_arg_scope
def dropout(inputs: Any, keep_prob: Any = 0.5, noise_shape: Any = None, is_training: Any = True,
            outputs_collections: Any = None, scope: Any = None, seed: int | None = None) -> Any:
    """Keep each element with probability ``keep_prob`` (scaled by 1 / keep_prob) when
    ``is_training`` (a bool or a bool tensor); otherwise identity. Name scope "Dropout"."""
    with get_default_graph().name_scope(scope or "Dropout") as sc:
        y = _core_dropout(inputs, rate=1.0 - keep_prob, noise_shape=noise_shape, seed=seed,
                          training=is_training)
        return collect_named_outputs(outputs_collections, sc.rstrip("/"), y)


@add_arg_scope
def one_hot_encoding(labels: Any, num_classes: int, on_value: float = 1.0, off_value: float = 0.0,
                     outputs_collections: Any = None, scope: Any = None) -> Any:
    """float32 one-hot rows of ``labels`` (int32 labels are widened to int64 first, as TF)."""
    with get_default_graph().name_scope(scope or "OneHotEncoding") as sc:
        labels = convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = math_ops.cast(labels, dtypes.int64)
        y = array_ops.one_hot(labels, num_classes, on_value=on_value, off_value=off_value)
        return collect_named_outputs(outputs_collections, sc.rstrip("/"), y)


@add_arg_scope
def embed_sequence(ids: Any, vocab_size: int | None = None, embed_dim: int | None = None,
                   unique: bool = False, initializer: Any = None, regularizer: Any = None,
                   trainable: bool = True, scope: Any = None, reuse: Any = None) -> Any:
    """[batch, time] ids -> [batch, time, embed_dim] rows of the model variable
    "EmbedSequence/embeddings" [vocab_size, embed_dim]."""
    if not (reuse or (vocab_size and embed_dim)):
        raise ValueError(f"Must specify vocab size and embedding dimension when not reusing. "
                         f"Got vocab_size={vocab_size} and embed_dim={embed_dim}")
    with variable_scope(scope, default_name="EmbedSequence", reuse=reuse):
        shape = [vocab_size, embed_dim] if vocab_size and embed_dim else None
        embeddings = model_variable("embeddings", shape, initializer=initializer,
                                    regularizer=regularizer, trainable=trainable)
        return embedding_ops.embedding_lookup(embeddings, ids)


def _layer_scope(layer: Any, fallback: str) -> str:
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(layer, "func"):
        return layer.func.__name__
    return fallback


def repeat(inputs: Any, repetitions: int, layer: Callable[..., Any], *args: Any,
           **kwargs: Any) -> Any:
    """``layer`` applied ``repetitions`` times, each in scope "<scope>/<scope>_<i>" (scope
    defaults to the layer's name inside "Repeat"), as slim's VGG blocks build."""
    scope = kwargs.pop("scope", None)
    with variable_scope(scope, default_name="Repeat"):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_scope(layer, "repeat")
        for i in range(repetitions):
            outputs = layer(outputs, *args, scope=f"{scope}_{i + 1}", **kwargs)
        return outputs


def stack(inputs: Any, layer: Callable[..., Any], stack_args: Any, **kwargs: Any) -> Any:
    """``layer`` applied once per entry of ``stack_args`` (that call's positional
    arguments), each in scope "<scope>/<scope>_<i>" inside "Stack" by default."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    with variable_scope(scope, default_name="Stack"):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_scope(layer, "stack")
        for i, layer_args in enumerate(stack_args):
            if not isinstance(layer_args, (list, tuple)):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, scope=f"{scope}_{i + 1}", **kwargs)
        return outputs


l2_normalize = composite_ops.l2_normalize
linear = functools.partial(fully_connected, activation_fn=None)


__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "adaptive_clipping_fn", "optimize_loss",
           "apply_regularization", "avg_pool2d", "batch_norm", "conv2d", "conv2d_transpose",
           "convolution2d", "convolution2d_transpose", "dropout", "embed_sequence", "flatten",
           "fully_connected", "l1_l2_regularizer", "l1_regularizer", "l2_normalize",
           "l2_regularizer", "layer_norm", "linear", "max_pool2d", "one_hot_encoding", "repeat",
           "separable_conv2d", "separable_convolution2d", "stack", "sum_regularizer",
           "unit_norm", "variance_scaling_initializer", "xavier_initializer",
           "xavier_initializer_conv2d"]
