"""Attention mechanisms over an encoder's memory [batch, max_time, depth]: Bahdanau's
additive score ``v . tanh(W1 keys + W2 query)`` and Luong's multiplicative ``query . keys``.
The memory past each entry's ``memory_sequence_length`` is zeroed and its scores set to
``score_mask_value`` (-inf: zero weight after the softmax), as TF1 does. Variable names
are TF1's: "memory_layer/kernel", ".../bahdanau_attention/query_layer/kernel",
".../bahdanau_attention/attention_v", ".../luong_attention/attention_g"."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.ops import array_ops, math_ops, nn_ops
from zmtf.ops.check_ops import assert_positive
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.init_ops import Constant, Ones, Zeros
from zmtf.ops.selection_ops import where
from zmtf.ops.sequence_ops import sequence_mask
from zmtf.ops.variable_scope import get_variable, variable_scope
from zmtf.ops.layers import Dense


def _prepare_memory(memory: Any, memory_sequence_length: Any) -> Any:
    """The memory with the steps past each entry's length zeroed."""
    memory = convert_to_tensor(memory)
    if memory.shape.ndims != 3 or memory.shape.as_list()[-1] is None:
        raise ValueError(f"memory must be [batch_size, max_time, depth] with a known depth, "
                         f"got shape {memory.shape} ({memory.name})")
    if memory_sequence_length is None:
        return memory
    mask = sequence_mask(memory_sequence_length, maxlen=array_ops.shape(memory)[1],
                         dtype=memory.dtype)
    masked = memory * array_ops.expand_dims(mask, 2)
    masked.set_shape(memory.shape)
    return masked


def _maybe_mask_score(score: Any, memory_sequence_length: Any, score_mask_value: Any) -> Any:
    if memory_sequence_length is None:
        return score
    check = assert_positive(memory_sequence_length,
                            message="All values in memory_sequence_length must greater than zero.")
    with get_default_graph().control_dependencies([check]):
        mask = sequence_mask(memory_sequence_length, maxlen=array_ops.shape(score)[1])
    masked = where(mask, score, score_mask_value * array_ops.ones_like(score))
    masked.set_shape(score.shape)
    return masked


class AttentionMechanism:
    """What AttentionWrapper needs of a mechanism: ``values`` (the masked memory), ``keys``,
    ``alignments_size``, ``initial_alignments``, ``initial_state`` and
    ``__call__(query, state) -> (alignments, next_state)``."""

    _scope_name = "attention"

    def __init__(self, query_layer: Any, memory: Any, probability_fn: Callable[[Any], Any],
                 memory_sequence_length: Any, memory_layer: Any, score_mask_value: Any,
                 name: str) -> None:
        self.query_layer, self.memory_layer = query_layer, memory_layer
        with get_default_graph().name_scope(name):
            lengths = None if memory_sequence_length is None else \
                math_ops.cast(convert_to_tensor(memory_sequence_length), dtypes.int32)
            self._memory_sequence_length = lengths
            self._values = _prepare_memory(memory, lengths)
            self._keys = memory_layer(self._values) if memory_layer is not None else self._values
        if score_mask_value is None:
            score_mask_value = self._values.dtype.as_numpy_dtype(-np.inf)
        self._mask_value = score_mask_value
        self.dtype = self._values.dtype
        self._probability_fn = probability_fn or nn_ops.softmax
        static = self._keys.shape.as_list()
        self._batch_size = static[0] if static[0] is not None else array_ops.shape(self._keys)[0]
        self._alignments_size = static[1] if static[1] is not None else \
            array_ops.shape(self._keys)[1]

    @property
    def values(self) -> Any:
        return self._values

    @property
    def keys(self) -> Any:
        return self._keys

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def alignments_size(self) -> Any:
        return self._alignments_size

    @property
    def state_size(self) -> Any:
        return self._alignments_size

    def initial_alignments(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros [batch_size, max_time]."""
        size = self._alignments_size
        if isinstance(batch_size, int) and isinstance(size, int):
            return array_ops.zeros([batch_size, size], dtype)
        return array_ops.zeros(array_ops.stack([batch_size, size]), dtype)

    def initial_state(self, batch_size: Any, dtype: Any) -> Any:
        return self.initial_alignments(batch_size, dtype)

    def _score(self, query: Any) -> Any:
        raise NotImplementedError

    def __call__(self, query: Any, state: Any) -> tuple[Any, Any]:
        """(alignments, next_state): the softmax of the masked scores, [batch, max_time]."""
        # the first call finds a unique "bahdanau_attention"-like scope in the caller's (the
        # wrapper's); later calls (a second decoder over the same cell) re-enter that one
        scope = getattr(self, "_call_scope", None)
        with variable_scope(scope if scope is not None else None,
                            default_name=self._scope_name) as entered:
            self._call_scope = entered
            score = self._score(convert_to_tensor(query))
        masked = _maybe_mask_score(score, self._memory_sequence_length, self._mask_value)
        alignments = self._probability_fn(masked)
        return alignments, alignments


class BahdanauAttention(AttentionMechanism):
    """Additive attention: score ``v . tanh(keys + query_layer(query))`` (with
    ``normalize``, weight-normalized ``g * v / |v|`` and a bias ``b``)."""

    _scope_name = "bahdanau_attention"

    def __init__(self, num_units: int, memory: Any, memory_sequence_length: Any = None,
                 normalize: bool = False, probability_fn: Callable[[Any], Any] | None = None,
                 score_mask_value: Any = None, dtype: Any = None,
                 name: str = "BahdanauAttention") -> None:
        self._num_units, self._normalize = int(num_units), normalize
        super().__init__(Dense(num_units, name="query_layer", use_bias=False),
                         memory, probability_fn, memory_sequence_length,
                         Dense(num_units, name="memory_layer", use_bias=False),
                         score_mask_value, name)

    def _score(self, query: Any) -> Any:
        keys = self._keys
        processed = array_ops.expand_dims(self.query_layer(query), 1)
        units = keys.shape.as_list()[2]
        v = get_variable("attention_v", [units], dtype=keys.dtype)
        if not self._normalize:
            return math_ops.reduce_sum(v * math_ops.tanh(keys + processed), [2])
        g = get_variable("attention_g", [], dtype=keys.dtype,
                         initializer=Constant(float(np.sqrt(1.0 / units))))
        b = get_variable("attention_b", [units], dtype=keys.dtype, initializer=Zeros())
        normed_v = g * v * math_ops.rsqrt(math_ops.reduce_sum(math_ops.square(v)))
        return math_ops.reduce_sum(normed_v * math_ops.tanh(keys + processed + b), [2])


class LuongAttention(AttentionMechanism):
    """Multiplicative attention: score ``query . keys`` (times a learned scalar ``g`` with
    ``scale``); the query's depth must equal ``num_units``."""

    _scope_name = "luong_attention"

    def __init__(self, num_units: int, memory: Any, memory_sequence_length: Any = None,
                 scale: bool = False, probability_fn: Callable[[Any], Any] | None = None,
                 score_mask_value: Any = None, dtype: Any = None,
                 name: str = "LuongAttention") -> None:
        self._num_units, self._scale = int(num_units), scale
        super().__init__(None, memory, probability_fn, memory_sequence_length,
                         Dense(num_units, name="memory_layer", use_bias=False),
                         score_mask_value, name)

    def _score(self, query: Any) -> Any:
        keys = self._keys
        depth, key_units = query.shape.as_list()[-1], keys.shape.as_list()[-1]
        if depth != key_units:
            raise ValueError(
                f"Incompatible or unknown inner dimensions between query and keys.  Query "
                f"({query.name}) has units: {depth}.  Keys ({keys.name}) have units: "
                f"{key_units}.  Perhaps you need to set num_units to the keys' dimension "
                f"({key_units})?")
        score = array_ops.squeeze(
            math_ops.matmul(array_ops.expand_dims(query, 1), keys, transpose_b=True), [1])
        if self._scale:
            g = get_variable("attention_g", [], dtype=keys.dtype, initializer=Ones())
            score = g * score
        return score


__all__ = ["AttentionMechanism", "BahdanauAttention", "LuongAttention"]
