"""tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue and tf.ConditionalAccumulator:
shared state that steps meet in.

Each object is one handle op (FIFOQueueV2, RandomShuffleQueueV2, PaddingFIFOQueueV2,
ConditionalAccumulator)
plus methods that add ops consuming the handle. Those ops are colocated with the handle: the state lives on one
device (a ps task, for SyncReplicasOptimizer) and only values travel. With ``shared_name``
the graphs of different workers reach the same queue or accumulator.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes as _dtypes
from zmtf.framework.dtypes import DType, as_dtype
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape, as_shape

_HANDLE = [(_dtypes.resource, TensorShape([]))]

# queues hold strings as they hold numbers (file names, serialized records)
STRING_INPUT_OPS.update({"QueueEnqueueV2", "QueueEnqueueManyV2"})


@op_def("FIFOQueueV2", "RandomShuffleQueueV2", "PaddingFIFOQueueV2", "ConditionalAccumulator",
        stateful=True)
def _handle_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return list(_HANDLE)


@op_def("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueCloseV2", "AccumulatorApplyGradient",
        "AccumulatorSetGlobalStep", stateful=True)
def _no_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


@op_def("QueueSizeV2", "AccumulatorNumAccumulated", stateful=True)
def _count_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(_dtypes.int32, TensorShape([]))]


@op_def("QueueDequeueV2", stateful=True)
def _dequeue_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    shapes = attrs["shapes"] or [None] * len(attrs["component_types"])
    return [(as_dtype(d), TensorShape(s)) for d, s in zip(attrs["component_types"], shapes)]


@op_def("QueueDequeueUpToV2", stateful=True)
def _dequeue_up_to_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(d, TensorShape(None if s.dims is None else [None, *s.dims]))
            for d, s in _dequeue_outputs(inputs, attrs)]


@op_def("QueueDequeueManyV2", stateful=True)
def _dequeue_many_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    n = inputs[1]
    batch = int(np.asarray(n.op.get_attr("value"))) if n.op.type == "Const" else None
    return [(d, TensorShape(None if s.dims is None else [batch, *s.dims]))
            for d, s in _dequeue_outputs(inputs, attrs)]


@op_def("AccumulatorTakeGradient", stateful=True)
def _take_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(attrs["dtype"]), TensorShape(attrs["shape"]))]


def _handle_op(op_type: str, attrs: dict[str, Any], name: str) -> Tensor:
    graph = get_default_graph()
    with graph.control_dependencies(None):  # state, not part of whatever step creates it
        return apply_op(op_type, [], attrs, name=name).outputs[0]


class QueueBase:
    """What every queue offers (tf.FIFOQueue, tf.RandomShuffleQueue)."""

    def __init__(self, dtypes: Any, shapes: Any, queue_ref: Tensor) -> None:
        self._dtypes = dtypes
        self._shapes = shapes
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._name)
    dtypes = property(lambda self: list(self._dtypes))
    shapes = property(lambda self: list(self._shapes))
    names = property(lambda self: None)

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """Add one element (a tensor, or a tensor per component); waits while the queue is full."""
        return self._apply("QueueEnqueueV2", self._components(vals, many=False),
                           _op_name(self, name, "enqueue"))

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """Add the slices along dimension 0 of every component, in order."""
        return self._apply("QueueEnqueueManyV2", self._components(vals, many=True),
                           _op_name(self, name, "EnqueueMany"))

    def dequeue(self, name: str | None = None) -> Any:
        """Take one element; waits until there is one (OutOfRangeError once closed and empty)."""
        op = self._apply("QueueDequeueV2", [], _op_name(self, name, "Dequeue"),
                         self._component_attrs())
        return self._result(op)

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """Take ``n`` elements, stacked per component."""
        count = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        op = self._apply("QueueDequeueManyV2", [count], _op_name(self, name, "DequeueMany"),
                         self._component_attrs())
        return self._result(op)

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """Like dequeue_many, but once the queue is closed the last batch may be smaller
        (OutOfRangeError only when nothing is left)."""
        count = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        op = self._apply("QueueDequeueUpToV2", [count], _op_name(self, name, "DequeueUpTo"),
                         self._component_attrs())
        return self._result(op)

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        """No more enqueues; waiting dequeues that cannot be served get OutOfRangeError."""
        return self._apply("QueueCloseV2", [], _op_name(self, name, "Close"),
                           {"cancel_pending_enqueues": bool(cancel_pending_enqueues)})

    def size(self, name: str | None = None) -> Tensor:
        return self._apply("QueueSizeV2", [], _op_name(self, name, "Size")).outputs[0]

    # ---- helpers ----------------------------------------------------------------------
    def _apply(self, op_type: str, inputs: list[Tensor], name: str,
               attrs: dict[str, Any] | None = None) -> Operation:
        graph = self._queue_ref.graph
        with graph.colocate_with(self._queue_ref.op):   # named like TF's: "<queue>_Dequeue"
            return apply_op(op_type, [self._queue_ref, *inputs], attrs, name=name)

    def _component_attrs(self) -> dict[str, Any]:
        return {"component_types": [d.name for d in self._dtypes],
                "shapes": [s.dims for s in self._shapes] if self._defined_shapes() else []}

    def _defined_shapes(self) -> bool:
        return all(s.is_fully_defined() for s in self._shapes)

    def _components(self, vals: Any, many: bool) -> list[Tensor]:
        values = list(vals) if isinstance(vals, (list, tuple)) else [vals]
        if len(values) != len(self._dtypes):
            raise ValueError(f"Queue '{self._name}' has {len(self._dtypes)} components, got "
                             f"{len(values)} values to enqueue")
        tensors = []
        for i, (value, dtype, shape) in enumerate(zip(values, self._dtypes, self._shapes)):
            tensor = convert_to_tensor(value, dtype=dtype, name=f"component_{i}")
            element_shape = (TensorShape(tensor.shape.dims[1:]) if many and tensor.shape.ndims
                             else tensor.shape)
            if not shape.is_compatible_with(element_shape):
                raise ValueError(f"Shape mismatch in tuple component {i} of queue '{self._name}': "
                                 f"expected {shape}, got {element_shape}")
            tensors.append(tensor)
        return tensors

    def _result(self, op: Operation) -> Any:
        return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)


class FIFOQueue(QueueBase):
    """``tf.FIFOQueue(capacity, dtypes, shapes=None, shared_name=None)``; capacity < 0: no bound."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "fifo_queue") -> None:
        dtype_list, shape_list, attrs = _queue_attrs(capacity, dtypes, shapes, names, shared_name)
        super().__init__(dtype_list, shape_list, _handle_op("FIFOQueueV2", attrs, name))


class RandomShuffleQueue(QueueBase):
    """``tf.RandomShuffleQueue(capacity, min_after_dequeue, dtypes, ...)``: dequeues a random
    element, and waits while min_after_dequeue or fewer are in (unless the queue is closed)."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None,
                 names: Any = None, seed: int | None = None, shared_name: str | None = None,
                 name: str = "random_shuffle_queue") -> None:
        dtype_list, shape_list, attrs = _queue_attrs(capacity, dtypes, shapes, names, shared_name)
        graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
        if seed is None and shared_name and (graph_seed, op_seed) != (0, 0):
            # as TF: a shared queue's seed must not depend on how many ops came before it
            digest = hashlib.md5(f"{graph_seed}{shared_name}".encode()).hexdigest()
            op_seed = int(digest[:8], 16) & 0x7FFFFFFF
        attrs.update(min_after_dequeue=int(min_after_dequeue), seed=graph_seed, seed2=op_seed)
        super().__init__(dtype_list, shape_list, _handle_op("RandomShuffleQueueV2", attrs, name))


class PaddingFIFOQueue(QueueBase):
    """``tf.PaddingFIFOQueue(capacity, dtypes, shapes)``: a FIFOQueue whose ``shapes`` may
    leave dimensions None; dequeue_many / dequeue_up_to pad each component to the batch's
    largest element with zeros (empty strings for tf.string)."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any, names: Any = None,
                 shared_name: str | None = None, name: str = "padding_fifo_queue") -> None:
        listed = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes]
        if shapes is None or any(s is None for s in (
                shapes if isinstance(shapes, (list, tuple)) else [shapes])):
            raise ValueError("When providing partial shapes, a list of shapes must be provided.")
        if len(listed) != len(shapes):
            raise ValueError(f"Shapes must be provided for all components, but received "
                             f"{len(listed)} dtypes and {len(shapes)} shapes.")
        dtype_list, shape_list, attrs = _queue_attrs(capacity, dtypes, shapes, names, shared_name)
        if any(s.ndims is None for s in shape_list):
            raise ValueError(f"PaddingFIFOQueue needs every component's rank, got shapes "
                             f"{[str(s) for s in shape_list]}")
        attrs["shapes"] = [s.dims for s in shape_list]   # None: padded in a batch
        super().__init__(dtype_list, shape_list, _handle_op("PaddingFIFOQueueV2", attrs, name))

    def _defined_shapes(self) -> bool:
        return True   # the dequeue ops carry the partial shapes


def _queue_attrs(capacity: int, dtypes: Any, shapes: Any, names: Any,
                 shared_name: str | None) -> tuple[list[DType], list[TensorShape], dict]:
    """The component dtypes and shapes, and the attrs every queue kind's handle op takes."""
    if names is not None:
        raise ValueError("named queue components are not supported by zmtf; pass names=None "
                         "and use positional components")
    listed = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes]
    dtype_list = [as_dtype(d) for d in listed]
    shape_list = _shapes(shapes, len(dtype_list))
    defined = all(s.is_fully_defined() for s in shape_list)
    attrs = {"component_types": [d.name for d in dtype_list],
             "shapes": [s.dims for s in shape_list] if defined else [],
             "capacity": int(capacity), "shared_name": shared_name or "", "container": ""}
    return dtype_list, shape_list, attrs


def _op_name(owner: Any, name: str | None, kind: str) -> str:
    """The given name, else TF's default: the queue's or accumulator's name + "_" + kind."""
    return name or f"{owner.name}_{kind}"


def _shapes(shapes: Any, count: int) -> list[TensorShape]:
    if shapes is None:
        return [TensorShape(None)] * count
    listed = list(shapes) if isinstance(shapes, (list, tuple)) else [shapes]
    if count == 1 and listed and not isinstance(listed[0], (list, tuple, TensorShape)):
        listed = [listed]  # shapes=[2]: one component of shape [2]
    if count == 1 and listed == []:
        listed = [[]]
    if len(listed) != count:
        raise ValueError(f"shapes must give one shape per component: {count} dtypes, "
                         f"{len(listed)} shapes")
    return [as_shape(s) for s in listed]


def _as_int64(value: Any, name: str) -> Tensor:
    """A step as int64, cast from any integer tensor (TF's to_int64 of the accumulator API)."""
    from zmtf.ops.math_ops import cast

    step = convert_to_tensor(value, name=name) if hasattr(value, "dtype") or hasattr(value, "_as_graph_element") \
        else convert_to_tensor(value, dtype=_dtypes.int64, name=name)
    if not step.dtype.is_integer:
        raise TypeError(f"{name} must be an integer tensor, got {step.dtype.name} ({step.name})")
    return step if step.dtype == _dtypes.int64 else cast(step, _dtypes.int64)


class ConditionalAccumulator:
    """Averages gradients computed at its current global step; stale ones are dropped.

    ``take_grad(n)`` waits until ``n`` fresh gradients are in, returns their average and
    advances the accumulator's global step (SyncReplicasOptimizer's building block).
    """

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN") -> None:
        if reduction_type != "MEAN":
            raise ValueError(f"reduction_type {reduction_type!r} is not supported; zmtf "
                             f"accumulators average (reduction_type='MEAN')")
        self._dtype: DType = as_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else TensorShape(None)
        attrs = {"dtype": self._dtype.name, "shape": self._shape.dims,
                 "shared_name": shared_name or "", "container": ""}
        self._accumulator_ref = _handle_op("ConditionalAccumulator", attrs, name)
        self._name = self._accumulator_ref.op.name

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Operation:
        """Add ``grad`` if ``local_step`` >= the accumulator's global step (else drop it)."""
        grad = convert_to_tensor(grad, dtype=self._dtype, name="grad")
        if not self._shape.is_compatible_with(grad.shape):
            raise ValueError(f"Shape mismatch: accumulator '{self._name}' holds gradients of "
                             f"shape {self._shape}, got {grad.shape}")
        step = _as_int64(local_step, "local_step")   # TF casts: an int32 global step is common
        return self._apply("AccumulatorApplyGradient", [step, grad],
                           _op_name(self, name, "ApplyGradient"))

    def take_grad(self, num_required: Any, name: str | None = None) -> Tensor:
        """The average of ``num_required`` fresh gradients; waits until they are in."""
        count = convert_to_tensor(num_required, dtype=_dtypes.int32, name="num_required")
        attrs = {"shape": self._shape.dims}
        take = self._apply("AccumulatorTakeGradient", [count],
                           _op_name(self, name, "TakeGradient"), attrs)
        return take.outputs[0]

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Operation:
        """Gradients with an older local_step are stale from now on."""
        step = _as_int64(new_global_step, "new_global_step")
        return self._apply("AccumulatorSetGlobalStep", [step],
                           _op_name(self, name, "SetGlobalStep"))

    def num_accumulated(self, name: str | None = None) -> Tensor:
        count = self._apply("AccumulatorNumAccumulated", [], _op_name(self, name, "NumAccumulated"))
        return count.outputs[0]

    def _apply(self, op_type: str, inputs: Sequence[Tensor], name: str,
               attrs: dict[str, Any] | None = None) -> Operation:
        graph = self._accumulator_ref.graph
        attrs = {"dtype": self._dtype.name, **(attrs or {})}
        with graph.colocate_with(self._accumulator_ref.op):
            return apply_op(op_type, [self._accumulator_ref, *inputs], attrs,
                            name=name)
