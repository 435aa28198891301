"""The ``tf.contrib`` modules TF1 scripts lean on most: ``tf.contrib.layers`` (initializers,
regularizers, fully_connected, conv2d, pooling, batch_norm, layer_norm, dropout,
repeat/stack, ...), ``tf.contrib.rnn`` (the core RNN cells under their contrib names),
``tf.contrib.framework`` (arg_scope, global step and variable getters),
``tf.contrib.lookup`` (lookup tables and vocabulary helpers), ``tf.contrib.slim`` (those
layers with ``arg_scope``), ``tf.contrib.opt`` (LazyAdam, AdamW, MomentumW, the averaging
and staleness wrappers), ``tf.contrib.mixed_precision`` (LossScaleOptimizer and its managers),
``tf.contrib.seq2seq`` (decoders, attention, sequence_loss), ``tf.contrib.training``
(HParams), ``tf.contrib.cluster_resolver`` (TF_CONFIG, simple and union resolvers) and
``tf.contrib.data`` (make_batched_features_dataset, ignore_errors, fused transformations).
Any other contrib module is an AttributeError that says so.
"""

from __future__ import annotations

from typing import Any

from zmtf.contrib import (
    cluster_resolver, data, framework, layers, lookup, mixed_precision, opt, rnn, seq2seq, slim,
    training,
)

__all__ = ["cluster_resolver", "data", "framework", "layers", "lookup", "mixed_precision", "opt",
           "rnn", "seq2seq", "slim", "training"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tf.contrib.{name} is not in zmtf: of tf.contrib, zmtf has only "
                         f"{', '.join(__all__)} (docs/supported.md lists what is built)")
