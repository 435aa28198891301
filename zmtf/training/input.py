"""TF1's queue-based input pipelines: string_input_producer, slice_input_producer, batch,
shuffle_batch and the *_join forms that let several readers feed one batch queue.

Each function builds a queue, the op that fills it and a QueueRunner in the QUEUE_RUNNERS
collection, and returns what a training step dequeues. Nothing runs until
``tf.train.start_queue_runners(sess, coord)`` (or MonitoredTrainingSession) starts the
runners' threads::

    image, label = tf.train.slice_input_producer([images, labels], num_epochs=2)
    images, labels = tf.train.shuffle_batch([image, label], 32, capacity=256,
                                            min_after_dequeue=128)

How a pipeline ends: ``num_epochs`` counts epochs in a local variable (run
tf.local_variables_initializer()); once it is spent the producer's enqueue fails with
OutOfRangeError, its runner closes the producer's queue, the batching runner's dequeue
from it then fails the same way and closes the batch queue, and the training step's
dequeue_many raises OutOfRangeError once fewer than batch_size elements are left
(dequeue_up_to, with allow_smaller_final_batch, hands out that last partial batch first).

Files: ``string_input_producer(filenames)`` is a queue of file names that a reader
(ops/io_ops.py: ``tf.TFRecordReader().read(queue)``) takes from as it needs.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.ops.array_ops import expand_dims, fill, identity, reshape, shape, size
from zmtf.ops.check_ops import assert_
from zmtf.ops.composite_ops import range_
from zmtf.ops.math_ops import greater
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.data_flow_ops import (
    FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue,
)
from zmtf.ops.random_ops import random_shuffle
from zmtf.ops.selection_ops import gather, where
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.ops.variables import Variable
from zmtf.training.queue_runner import QueueRunner, add_queue_runner


def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """``tensor``, but its evaluation fails with OutOfRangeError after ``num_epochs`` runs."""
    tensor = convert_to_tensor(tensor)
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    graph = get_default_graph()
    with graph.name_scope(name or "limit_epochs"):
        epochs = Variable(0, dtype=dtypes.int64, name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with graph.control_dependencies([counter]):
            return identity(tensor)


def input_producer(input_tensor: Any, element_shape: Any = None, num_epochs: int | None = None,
                   shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                   shared_name: str | None = None, summary_name: str | None = None,
                   name: str | None = None, cancel_op: Any = None) -> FIFOQueue:
    """A queue fed with the rows of ``input_tensor``, epoch after epoch (shuffled per epoch)."""
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer"):   # name: maybe a scope ("a/"), reused
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        shape = input_tensor.shape
        rows = TensorShape(None) if shape.ndims is None else TensorShape(shape.dims[1:])
        if element_shape is not None:
            rows = rows.merge_with(as_shape(element_shape))
        if not rows.is_fully_defined():
            raise ValueError(f"Cannot infer the element shape of input_producer's input "
                             f"{input_tensor.name} ({shape}); pass element_shape=")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(capacity, [input_tensor.dtype], shapes=[rows], shared_name=shared_name)
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        return queue


def range_input_producer(limit: int, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> FIFOQueue:
    """A queue of the integers 0 .. limit-1, epoch after epoch (``limit``: a Python int)."""
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer") as scope:
        return input_producer(range_(int(limit)), [], num_epochs, shuffle, seed, capacity,
                              shared_name, name=scope)


def string_input_producer(string_tensor: Any, num_epochs: int | None = None,
                          shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                          shared_name: str | None = None, name: str | None = None,
                          cancel_op: Any = None) -> FIFOQueue:
    """A queue of the strings (file names) of ``string_tensor``, epoch after epoch, shuffled
    per epoch; an empty list is refused here, an empty tensor when its enqueue runs."""
    not_null = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and len(string_tensor) == 0:
        raise ValueError(not_null)
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer") as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=dtypes.string)
        check = assert_(greater(size(string_tensor), 0), [not_null])
        with graph.control_dependencies([check]):
            string_tensor = identity(string_tensor)
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, name=scope, cancel_op=cancel_op)


def slice_input_producer(tensor_list: Any, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> list[Tensor]:
    """One slice (row) of every tensor in ``tensor_list`` per run, the same row of each."""
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer"):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        rows = {t.shape.dims[0] if t.shape.ndims else None for t in tensors}
        if len(rows) != 1 or None in rows:
            raise ValueError(
                f"slice_input_producer needs tensors with one common, statically known first "
                f"dimension, got shapes {[str(t.shape) for t in tensors]}; zmtf cannot slice "
                f"a tensor whose row count is only known when the graph runs")
        queue = range_input_producer(rows.pop(), num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


def batch(tensors: Any, batch_size: Any, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: str | None = None,
          name: str | None = None) -> Any:
    """Batches of ``batch_size`` elements, in the order one thread enqueues them."""
    return _batching([tensors], num_threads, _fifo(capacity, dynamic_pad, shared_name),
                     batch_size, enqueue_many, shapes, allow_smaller_final_batch,
                     name or "batch", dynamic_pad)


def shuffle_batch(tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: int | None = None, enqueue_many: bool = False,
                  shapes: Any = None, allow_smaller_final_batch: bool = False,
                  shared_name: str | None = None, name: str | None = None) -> Any:
    """Batches of ``batch_size`` elements drawn at random from a RandomShuffleQueue that keeps
    ``min_after_dequeue`` elements in to mix (until its input runs out)."""
    return _batching([tensors], num_threads,
                     _shuffling(capacity, min_after_dequeue, seed, shared_name), batch_size,
                     enqueue_many, shapes, allow_smaller_final_batch, name or "shuffle_batch")


def batch_join(tensors_list: Any, batch_size: Any, capacity: int = 32,
               enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
               allow_smaller_final_batch: bool = False, shared_name: str | None = None,
               name: str | None = None) -> Any:
    """Batches from several sets of tensors of one structure, one runner thread enqueuing
    each set: the TF1 way for several readers to feed one batch queue."""
    return _batching(tensors_list, 1, _fifo(capacity, dynamic_pad, shared_name), batch_size,
                     enqueue_many, shapes, allow_smaller_final_batch, name or "batch_join",
                     dynamic_pad)


def shuffle_batch_join(tensors_list: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                       seed: int | None = None, enqueue_many: bool = False, shapes: Any = None,
                       allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                       name: str | None = None) -> Any:
    """shuffle_batch fed by several sets of tensors, one runner thread each (batch_join)."""
    return _batching(tensors_list, 1, _shuffling(capacity, min_after_dequeue, seed, shared_name),
                     batch_size, enqueue_many, shapes, allow_smaller_final_batch,
                     name or "shuffle_batch_join")


def maybe_batch(tensors: Any, keep_input: Any, batch_size: Any, num_threads: int = 1,
                capacity: int = 32, enqueue_many: bool = False, shapes: Any = None,
                dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                shared_name: str | None = None, name: str | None = None) -> Any:
    """batch() of only the elements whose ``keep_input`` is True (a bool scalar, or with
    enqueue_many a bool vector, one per row)."""
    return _batching([tensors], num_threads, _fifo(capacity, dynamic_pad, shared_name),
                     batch_size, enqueue_many, shapes, allow_smaller_final_batch,
                     name or "batch", dynamic_pad, keep_input)


def maybe_shuffle_batch(tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                        keep_input: Any, num_threads: int = 1, seed: int | None = None,
                        enqueue_many: bool = False, shapes: Any = None,
                        allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                        name: str | None = None) -> Any:
    """shuffle_batch() of only the elements ``keep_input`` keeps (as maybe_batch)."""
    return _batching([tensors], num_threads,
                     _shuffling(capacity, min_after_dequeue, seed, shared_name), batch_size,
                     enqueue_many, shapes, allow_smaller_final_batch, name or "shuffle_batch",
                     keep_input=keep_input)


def maybe_batch_join(tensors_list: Any, keep_input: Any, batch_size: Any, capacity: int = 32,
                     enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
                     allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                     name: str | None = None) -> Any:
    """batch_join() of only the elements ``keep_input`` keeps (one flag for every set)."""
    return _batching(tensors_list, 1, _fifo(capacity, dynamic_pad, shared_name), batch_size,
                     enqueue_many, shapes, allow_smaller_final_batch, name or "batch_join",
                     dynamic_pad, keep_input)


def maybe_shuffle_batch_join(tensors_list: Any, batch_size: Any, capacity: int,
                             min_after_dequeue: int, keep_input: Any, seed: int | None = None,
                             enqueue_many: bool = False, shapes: Any = None,
                             allow_smaller_final_batch: bool = False,
                             shared_name: str | None = None, name: str | None = None) -> Any:
    """shuffle_batch_join() of only the elements ``keep_input`` keeps."""
    return _batching(tensors_list, 1, _shuffling(capacity, min_after_dequeue, seed, shared_name),
                     batch_size, enqueue_many, shapes, allow_smaller_final_batch,
                     name or "shuffle_batch_join", keep_input=keep_input)


# ---- shared by the batch functions ----------------------------------------------------------
_MakeQueue = Callable[[list[Any], list[TensorShape]], QueueBase]


def _fifo(capacity: int, dynamic_pad: bool, shared_name: str | None) -> _MakeQueue:
    if dynamic_pad:   # elements may differ along unknown dimensions: a batch pads them
        return lambda types, shapes: PaddingFIFOQueue(capacity, types, shapes=shapes,
                                                      shared_name=shared_name)
    return lambda types, shapes: FIFOQueue(capacity, types, shapes=shapes,
                                           shared_name=shared_name)


def _shuffling(capacity: int, min_after_dequeue: int, seed: int | None,
               shared_name: str | None) -> _MakeQueue:
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue "
                         f"{min_after_dequeue}.")
    return lambda types, shapes: RandomShuffleQueue(capacity, min_after_dequeue, types,
                                                    shapes=shapes, seed=seed,
                                                    shared_name=shared_name)


def _batching(tensors_list: Any, threads_per_set: int, make_queue: _MakeQueue, batch_size: Any,
              enqueue_many: bool, shapes: Any, allow_smaller_final_batch: bool,
              scope_name: str, dynamic_pad: bool = False, keep_input: Any = None) -> Any:
    """A queue filled by ``threads_per_set`` runner threads per set of tensors; returns the
    batch, shaped as the first set (the dequeue op is named after the scope, as TF's).
    With ``keep_input`` (the maybe_* forms) only the kept elements are enqueued."""
    with get_default_graph().name_scope(scope_name) as scope:
        lists = _as_tensor_list_list(tensors_list)
        queue = make_queue(*_types_and_shapes(lists, shapes, enqueue_many, dynamic_pad))
        if keep_input is None:
            enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
            enqueues = [enqueue(tensors) for tensors in lists for _ in range(threads_per_set)]
        else:
            keep = _validate_keep_input(keep_input, enqueue_many)
            enqueues = [queue.enqueue_many(_kept(tensors, keep, enqueue_many))
                        for tensors in lists for _ in range(threads_per_set)]
        add_queue_runner(QueueRunner(queue, enqueues))
        if allow_smaller_final_batch:
            dequeued = queue.dequeue_up_to(batch_size, name=scope)
        else:
            dequeued = queue.dequeue_many(batch_size, name=scope)
    first = tensors_list[0]
    if isinstance(first, dict):
        listed = dequeued if isinstance(dequeued, list) else [dequeued]
        return {key: listed[i] for i, key in enumerate(sorted(first))}
    return dequeued  # one tensor, not a list of one, for a single component (as TF)


def _validate_keep_input(keep_input: Any, enqueue_many: bool) -> Tensor:
    """keep_input as a bool tensor: a scalar, or with enqueue_many one flag per row."""
    keep = convert_to_tensor(keep_input, dtype=dtypes.bool_)
    rank = keep.shape.ndims
    if rank is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and rank == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if rank > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep


def _kept(tensors: list[Tensor], keep: Tensor, enqueue_many: bool) -> list[Tensor]:
    """The rows (one element unless enqueue_many) of ``tensors`` that ``keep`` keeps, as a
    batch for enqueue_many: no row when a scalar keep_input is False at run time."""
    rows = tensors if enqueue_many else [expand_dims(t, 0) for t in tensors]
    if keep.shape.ndims == 0:
        keep = fill(shape(rows[0])[:1], keep)
    chosen = reshape(where(keep), [-1])
    return [gather(t, chosen) for t in rows]


def _as_tensor_list_list(tensors_list: Any) -> list[list[Tensor]]:
    """Each set of tensors as a list; the sets must agree in kind, keys and length."""
    if not isinstance(tensors_list, (list, tuple)) or not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    first = tensors_list[0]
    for other in tensors_list[1:]:
        if isinstance(first, dict) != isinstance(other, dict):
            raise ValueError("Expected every set of tensors to be a dict, or none of them")
        if isinstance(first, dict) and sorted(first) != sorted(other):
            raise ValueError(f"Keys of tensors in every dict must match: {sorted(first)} vs. "
                             f"{sorted(other)}")
        if not isinstance(first, dict) and len(first) != len(other):
            raise ValueError(f"Expected every set of tensors to hold {len(first)} tensors, "
                             f"one holds {len(other)}")
    return [_as_tensor_list(tensors) for tensors in tensors_list]


def _as_tensor_list(tensors: Any) -> list[Tensor]:
    """A list of tensors, or a dict of them (taken in sorted key order, as TF)."""
    if isinstance(tensors, dict):
        listed = [tensors[key] for key in sorted(tensors)]
    elif isinstance(tensors, (list, tuple)):
        listed = list(tensors)
    else:
        raise TypeError(f"tensors must be a list, tuple or dict of tensors, got "
                        f"{type(tensors).__name__}; wrap a single tensor as [tensor]")
    if not listed:
        raise ValueError("Expected at least one tensor in batch().")
    return [convert_to_tensor(t) for t in listed]


def _types_and_shapes(lists: list[list[Tensor]], shapes: Any, enqueue_many: bool,
                      dynamic_pad: bool = False) -> tuple[list[Any], list[TensorShape]]:
    """The component dtypes, common to every set, and each component's per-element shape
    (without the batch dimension if enqueue_many), merged over the sets; with
    ``dynamic_pad`` only the ranks need be known."""
    types = [t.dtype for t in lists[0]]
    for other in lists[1:]:
        if [t.dtype for t in other] != types:
            raise TypeError(f"Expected types to be consistent: "
                            f"{', '.join(t.name for t in types)} vs. "
                            f"{', '.join(t.dtype.name for t in other)}.")
    if shapes is not None:
        shape_list = [as_shape(s) for s in shapes]
    else:
        shape_list = [TensorShape(None)] * len(types)
        for tensors in lists:
            shape_list = [merged.merge_with(_element_shape(tensor, enqueue_many))
                          for merged, tensor in zip(shape_list, tensors)]
    if len(shape_list) != len(types):
        raise ValueError(f"shapes must give one shape per tensor: {len(types)} tensors, "
                         f"{len(shape_list)} shapes")
    if dynamic_pad:
        if any(s.ndims is None for s in shape_list):
            raise ValueError(f"dynamic_pad=True needs every tensor's rank: shapes "
                             f"{[str(s) for s in shape_list]}; pass shapes= with None for "
                             f"the dimensions to pad")
    elif not all(s.is_fully_defined() for s in shape_list):
        raise ValueError(f"All shapes must be fully defined: {[str(s) for s in shape_list]}; "
                         f"pass shapes= to say what each element's shape is")
    return types, shape_list


def _element_shape(tensor: Tensor, enqueue_many: bool) -> TensorShape:
    if enqueue_many and tensor.shape.ndims == 0:
        raise ValueError(f"enqueue_many=True needs tensors of rank >= 1, {tensor.name} is a "
                         f"scalar")
    if not enqueue_many or tensor.shape.ndims is None:
        return tensor.shape
    return TensorShape(tensor.shape.dims[1:])
