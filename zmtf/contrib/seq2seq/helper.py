"""Decoder helpers: what a BasicDecoder feeds its cell at each step and when each batch
entry is done. ``TrainingHelper`` reads the next ground-truth input (teacher forcing);
``GreedyEmbeddingHelper`` feeds back the embedding of the argmax of the last output;
``SampleEmbeddingHelper`` of a token sampled from it. Each follows TF1's Helper protocol:
``initialize() -> (finished, inputs)``, ``sample(time, outputs, state) -> ids``,
``next_inputs(time, outputs, state, sample_ids) -> (finished, inputs, state)``."""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.nest import map_structure
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.embedding_ops import embedding_lookup
from zmtf.ops.random_distributions import categorical
from zmtf.ops.selection_ops import gather, tile
from zmtf.framework.tensor_shape import TensorShape


class Helper:
    """The interface BasicDecoder drives (TF1's abstract Helper)."""

    @property
    def batch_size(self) -> Any:
        raise NotImplementedError

    @property
    def sample_ids_shape(self) -> TensorShape:
        return TensorShape([])

    @property
    def sample_ids_dtype(self) -> Any:
        return dtypes.int32

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        raise NotImplementedError

    def sample(self, time: Any, outputs: Any, state: Any, name: str | None = None) -> Any:
        raise NotImplementedError

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any,
                    name: str | None = None) -> tuple[Any, Any, Any]:
        raise NotImplementedError


def _argmax_ids(outputs: Any) -> Tensor:
    return math_ops.cast(math_ops.argmax(outputs, axis=-1), dtypes.int32)


def _time_major(x: Tensor) -> Tensor:
    if x.shape.ndims is None or x.shape.ndims < 2:
        raise ValueError(f"TrainingHelper: inputs must be at least [batch, time], got shape "
                         f"{x.shape} ({x.name})")
    return array_ops.transpose(x, [1, 0] + list(range(2, x.shape.ndims)))


class TrainingHelper(Helper):
    """Teacher forcing: step t's input is ``inputs[:, t]`` (``inputs[t]`` when
    ``time_major``); entry b is finished once t reaches ``sequence_length[b]``. Once every
    entry is finished the inputs are zeros. The reads index the inputs directly, so their
    gradient flows back to them (and to an embedding they came from)."""

    def __init__(self, inputs: Any, sequence_length: Any, time_major: bool = False,
                 name: str | None = None) -> None:
        with get_default_graph().name_scope(name or "TrainingHelper"):
            inputs = map_structure(convert_to_tensor, inputs)
            self._inputs = inputs if time_major else map_structure(_time_major, inputs)
            self._sequence_length = convert_to_tensor(sequence_length)
            if self._sequence_length.shape.ndims != 1:
                raise ValueError(f"Expected sequence_length to be a vector, but received "
                                 f"shape: {self._sequence_length.shape}")
            self._sequence_length = math_ops.cast(self._sequence_length, dtypes.int32)
            self._zero_inputs = map_structure(lambda x: array_ops.zeros_like(gather(x, 0)),
                                              self._inputs)
            self._batch_size = array_ops.size(self._sequence_length)

    @property
    def inputs(self) -> Any:
        return self._inputs

    @property
    def sequence_length(self) -> Tensor:
        return self._sequence_length

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    def _read(self, time: Any, all_finished: Tensor) -> Any:
        """inputs[time] (the last step when time runs past it), or zeros when all are done."""
        def read(x: Tensor) -> Tensor:
            last = array_ops.shape(x)[0] - 1
            value = gather(x, math_ops.minimum(time, last))
            keep = math_ops.cast(math_ops.logical_not(all_finished), value.dtype)
            return value * keep
        return map_structure(read, self._inputs)

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        with get_default_graph().name_scope(name or "TrainingHelperInitialize"):
            finished = math_ops.equal(0, self._sequence_length)
            return finished, self._read(0, math_ops.reduce_all(finished))

    def sample(self, time: Any, outputs: Any, state: Any = None, name: str | None = None) -> Any:
        with get_default_graph().name_scope(name or "TrainingHelperSample"):
            return _argmax_ids(outputs)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any = None,
                    name: str | None = None) -> tuple[Any, Any, Any]:
        with get_default_graph().name_scope(name or "TrainingHelperNextInputs"):
            next_time = time + 1
            finished = math_ops.greater_equal(next_time, self._sequence_length)
            return finished, self._read(next_time, math_ops.reduce_all(finished)), state


class GreedyEmbeddingHelper(Helper):
    """Inference: start from ``embedding(start_tokens)``, then feed back the embedding of
    each step's argmax; an entry is finished when it emits ``end_token``. ``embedding`` is
    an embedding matrix [vocab, depth] or a callable from ids to inputs."""

    def __init__(self, embedding: Any, start_tokens: Any, end_token: Any) -> None:
        if callable(embedding):
            self._embedding_fn: Callable[[Any], Any] = embedding
        else:
            params = convert_to_tensor(embedding)
            self._embedding_fn = lambda ids: embedding_lookup(params, ids)
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32)
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32)
        if self._start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        if self._end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = array_ops.size(self._start_tokens)
        self._start_inputs = self._embedding_fn(self._start_tokens)

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        finished = tile(convert_to_tensor([False]), array_ops.reshape(self._batch_size, [1]))
        return finished, self._start_inputs

    def sample(self, time: Any, outputs: Any, state: Any = None, name: str | None = None) -> Any:
        if not isinstance(outputs, Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        return _argmax_ids(outputs)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any = None,
                    name: str | None = None) -> tuple[Any, Any, Any]:
        """Once every entry is finished the loop stops, so the inputs fed then (TF1: the
        start inputs) are never read; zmtf feeds the sampled ids' embedding throughout."""
        finished = math_ops.equal(sample_ids, self._end_token)
        return finished, self._embedding_fn(sample_ids), state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As GreedyEmbeddingHelper, but each next token is drawn from the softmax of the
    outputs (divided by ``softmax_temperature``, default 1) instead of taken as the argmax."""

    def __init__(self, embedding: Any, start_tokens: Any, end_token: Any,
                 softmax_temperature: Any = None, seed: int | None = None) -> None:
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time: Any, outputs: Any, state: Any = None, name: str | None = None) -> Any:
        if not isinstance(outputs, Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        logits = outputs if self._softmax_temperature is None else \
            outputs / self._softmax_temperature
        drawn = categorical(logits, 1, dtype=dtypes.int32, seed=self._seed)
        return array_ops.reshape(drawn, [-1])


__all__ = ["GreedyEmbeddingHelper", "Helper", "SampleEmbeddingHelper", "TrainingHelper"]
