"""tf.TensorArray as a value: a list of tensors that every write returns anew.

TF1 backs a TensorArray with a mutable resource on a device and threads a float "flow"
tensor through its ops to order them. TF 2.x (what TF 2.21 builds, even in graph mode)
backs it with an immutable TensorList held in a variant tensor; zmtf does the same: the
``flow`` is a scalar of dtype variant whose value (see ``kernels/cpu/tensor_array.py``)
is a tuple of element arrays. ``write``, ``scatter``, ``unstack`` and ``split`` return a
new TensorArray on a new flow; reads never change it. So a TensorArray is an ordinary
loop variable of tf.while_loop (the loop flattens it to its flow) and a branch value of
tf.cond, and its gradient is an ordinary gradient: a variant holding the elements'
gradients, summed with AddN and carried backwards through a While op like any other.

The Python object keeps what is known at graph-build time: the dtype, whether the size
is dynamic, and the element shape. That shape is shared by every TensorArray derived
from one another (TF does the same), so a write inside a loop body teaches the stacked
result after the loop its element shape.

Limits: a variant never crosses a process (fetching a flow gives the value object; the
wire refuses it), so a TensorArray lives on one device; reads never clear an element
(``clear_after_read`` is accepted and ignored, as in TF 2.x).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, control_flow_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape, as_shape

_FLOW = [(dtypes.variant, TensorShape([]))]
_NEW_FLOW_OPS = ("TensorArray", "TensorArrayWrite", "TensorArrayScatter", "TensorArrayUnstack",
                 "TensorArraySplit", "TensorArrayReadGrad", "TensorArrayConcatGrad")


@op_def(*_NEW_FLOW_OPS)
def _flow_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return list(_FLOW)


@op_def("TensorArrayRead")
def _read_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(attrs["dtype"]), TensorShape(attrs["element_shape"]))]


@op_def("TensorArrayGather")
def _gather_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    count = inputs[1].shape[0] if inputs[1].shape.ndims == 1 else None
    return [(dtypes.as_dtype(attrs["dtype"]), _prepend(count, TensorShape(attrs["element_shape"])))]


@op_def("TensorArrayConcat")
def _concat_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    element = TensorShape(attrs["element_shape"])
    rest = TensorShape(None) if element.ndims is None else _prepend(None, element[1:])
    return [(dtypes.as_dtype(attrs["dtype"]), rest), (dtypes.int64, TensorShape([None]))]


@op_def("TensorArraySize")
def _size_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int32, TensorShape([]))]


@op_def("TensorArrayWriteGrad", "TensorArraySplitGrad")
def _write_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    value = inputs[2]
    return _FLOW + [(value.dtype, value.shape)]


@op_def("TensorArrayUnstackGrad")
def _unstack_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[1].dtype, inputs[1].shape)]


def _prepend(dim: int | None, shape: TensorShape) -> TensorShape:
    return TensorShape(None) if shape.ndims is None else TensorShape([dim] + shape.dims)


class _ElementShape:
    """The element shape known so far, shared by a TensorArray and those made from it."""

    __slots__ = ("shape",)

    def __init__(self, shape: TensorShape) -> None:
        self.shape = shape


class TensorArray:
    """A list of same-dtype tensors, written and read by index (TF1's tf.TensorArray).

    Every method that changes the array returns a new TensorArray; use the one returned.
    ``size`` is required unless ``flow`` (another TensorArray's) is given. With
    ``dynamic_size`` writes past the end grow the array. ``element_shape`` (or, with
    ``infer_shape``, the first write) fixes the static shape of what ``read`` and ``stack``
    return; reading an index never written gives zeros of that shape.
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: Any = None,
                 clear_after_read: Any = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None) -> None:
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element = _ElementShape(as_shape(element_shape))
        if flow is not None:
            self._flow, self._static_size = _as_flow(flow), None
            return
        if size is None:
            raise ValueError("Argument `size` must be provided if argument `flow` is not provided.")
        with get_default_graph().name_scope(name or tensor_array_name or "TensorArrayV2"):
            size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
            attrs = {"dtype": self._dtype.name, "element_shape": self._element.shape.dims,
                     "dynamic_size": self._dynamic_size}
            self._flow = apply_op("TensorArray", [size_t], attrs, name="TensorArrayV2").outputs[0]
        self._static_size = _constant(size_t)

    # ---- what the graph knows ----------------------------------------------------------
    @property
    def flow(self) -> Tensor:
        """The variant tensor holding the array's value."""
        return self._flow

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def handle(self) -> None:
        """None: a value-backed TensorArray has no resource handle (as in TF 2.x)."""
        return None

    @property
    def element_shape(self) -> TensorShape:
        return self._element.shape

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def _with_flow(self, flow: Tensor, static_size: Any = "same") -> TensorArray:
        """The same array on a new flow (what write returns, what a loop rebuilds)."""
        out = TensorArray.__new__(TensorArray)
        out._dtype, out._dynamic_size, out._infer_shape = self._dtype, self._dynamic_size, self._infer_shape
        out._element, out._flow = self._element, flow
        out._static_size = getattr(self, "_static_size", None) if static_size == "same" else static_size
        return out

    _rebuild_with_flow = _with_flow   # how cond_ops._flatten puts a loop's flow back

    def _merge_shape(self, shape: TensorShape) -> None:
        if not self._infer_shape:
            return
        if not self._element.shape.is_compatible_with(shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self._element.shape} ")
        self._element.shape = self._element.shape.merge_with(shape)

    def _value(self, value: Any, caller: str) -> Tensor:
        try:
            t = convert_to_tensor(value, dtype=self._dtype, name="value")
        except (TypeError, ValueError):
            t = convert_to_tensor(value, name="value")
        if t.dtype != self._dtype:
            raise InvalidArgumentError(None, None, f"TensorArray dtype is {self._dtype.name} but "
                                       f"Op is trying to write dtype {t.dtype.name} ({caller})")
        return t

    def _attrs(self) -> dict[str, Any]:
        return {"dtype": self._dtype.name, "element_shape": self._element.shape.dims}

    def _scope(self, name: str | None, default: str) -> Any:
        return get_default_graph().name_scope(name or default)

    # ---- writes: each returns a new TensorArray ----------------------------------------
    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """The array with ``value`` at ``index`` (replacing what was there)."""
        with self._scope(name, "TensorArrayV2Write"):
            value_t = self._value(value, "write")
            self._merge_shape(value_t.shape)
            index_t = convert_to_tensor(index, dtype=dtypes.int32, name="index")
            flow = apply_op("TensorArrayWrite", [self._flow, index_t, value_t],
                            name="TensorListSetItem").outputs[0]
        return self._with_flow(flow)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """The array with ``value[i]`` at ``indices[i]``."""
        with self._scope(name, "TensorArrayScatter"):
            value_t = self._value(value, "scatter")
            if value_t.shape.ndims is not None:
                self._merge_shape(value_t.shape[1:])
            indices_t = convert_to_tensor(indices, dtype=dtypes.int32, name="indices")
            flow = apply_op("TensorArrayScatter", [self._flow, indices_t, value_t],
                            name="TensorListScatter").outputs[0]
        return self._with_flow(flow)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """The array of ``value``'s slices along its first axis."""
        with self._scope(name, "TensorArrayUnstack"):
            value_t = self._value(value, "unstack")
            if value_t.shape.ndims is not None:
                self._merge_shape(value_t.shape[1:])
            flow = apply_op("TensorArrayUnstack", [self._flow, value_t],
                            name="TensorListFromTensor").outputs[0]
        return self._with_flow(flow, value_t.shape[0] if value_t.shape.ndims else None)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """The array of consecutive pieces of ``value``'s first axis, ``lengths[i]`` long."""
        with self._scope(name, "TensorArraySplit"):
            value_t = self._value(value, "split")
            lengths_t = convert_to_tensor(lengths, dtype=dtypes.int64, name="lengths")
            equal = _equal_lengths(lengths_t)
            if value_t.shape.ndims is not None and equal is not None:   # as TF: only then
                self._merge_shape(_prepend(equal, value_t.shape[1:]))
            flow = apply_op("TensorArraySplit", [self._flow, value_t, lengths_t],
                            name="TensorListSplit").outputs[0]
        return self._with_flow(flow)

    # ---- reads -------------------------------------------------------------------------
    def read(self, index: Any, name: str | None = None) -> Tensor:
        """The element at ``index``: zeros if it was never written and its shape is known."""
        with self._scope(name, "TensorArrayV2Read"):
            index_t = convert_to_tensor(index, dtype=dtypes.int32, name="index")
            return apply_op("TensorArrayRead", [self._flow, index_t], self._attrs(),
                            name="TensorListGetItem").outputs[0]

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at ``indices``, stacked."""
        with self._scope(name, "TensorArrayV2Gather"):
            indices_t = convert_to_tensor(indices, dtype=dtypes.int32, name="indices")
            return apply_op("TensorArrayGather", [self._flow, indices_t], self._attrs(),
                            name="TensorListGather").outputs[0]

    def stack(self, name: str | None = None) -> Tensor:
        """Every element, stacked on a new first axis."""
        with self._scope(name, "TensorArrayV2Stack"):
            out = self.gather(range_(0, self.size()), name="gather")
            size = self._static_size if not self._dynamic_size else None
            if size is not None and out.shape.ndims is not None:
                out.set_shape([size] + out.shape.dims[1:])
            return out

    def concat(self, name: str | None = None) -> Tensor:
        """Every element joined along its first axis."""
        with self._scope(name, "TensorArrayConcat"):
            return apply_op("TensorArrayConcat", [self._flow], self._attrs(),
                            name="TensorListConcat").outputs[0]

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (int32 scalar)."""
        with self._scope(name, "TensorArrayV2Size"):
            return apply_op("TensorArraySize", [self._flow], name="TensorListLength").outputs[0]

    def identity(self) -> TensorArray:
        """The same array on a new flow (an Identity op): control dependencies can wait on it."""
        return self._with_flow(array_ops.identity(self._flow))

    def close(self, name: str | None = None) -> Operation:
        """A no-op, as in TF 2.x: a value needs no closing."""
        return control_flow_ops.no_op(name=name or "TensorArrayClose")

    def __repr__(self) -> str:
        return f"<zmtf TensorArray dtype={self._dtype.name} element_shape={self.element_shape}>"


def _as_flow(flow: Any) -> Tensor:
    flow = convert_to_tensor(flow)
    if flow.dtype != dtypes.variant:
        raise TypeError(f"TensorArray: flow must be a TensorArray's flow (a variant tensor), got "
                        f"{flow.dtype.name} ({flow.name})")
    return flow


def _equal_lengths(lengths: Tensor) -> int | None:
    """The one length of a constant ``lengths`` whose entries are all equal, else None."""
    if lengths.op.type != "Const":
        return None
    values = set(np.asarray(lengths.op.attrs["value"]).reshape(-1).tolist())
    return int(values.pop()) if len(values) == 1 else None


def _constant(t: Tensor) -> int | None:
    return int(t.op.attrs["value"]) if t.op.type == "Const" else None


# ---- gradients ------------------------------------------------------------------------
# The gradient of a flow is a variant holding the elements' gradients. A write replaces an
# element, so the gradient reaching the array before the write lacks that element's.

@gradient("TensorArrayWrite", "TensorArrayScatter")
def _write_grad(op: Operation, grad: Any) -> list[Any]:
    flow, indices, value = op.inputs
    before, value_grad = apply_op("TensorArrayWriteGrad", [grad, indices, value]).outputs
    return [before, None, value_grad]


@gradient("TensorArraySplit")
def _split_grad(op: Operation, grad: Any) -> list[Any]:
    flow, value, lengths = op.inputs
    before, value_grad = apply_op("TensorArraySplitGrad", [grad, lengths, value]).outputs
    return [before, value_grad, None]


@gradient("TensorArrayUnstack")
def _unstack_grad(op: Operation, grad: Any) -> list[Any]:
    value = op.inputs[1]
    return [None, apply_op("TensorArrayUnstackGrad", [grad, value]).outputs[0]]


@gradient("TensorArrayRead", "TensorArrayGather")
def _read_grad(op: Operation, grad: Any) -> list[Any]:
    flow, indices = op.inputs
    return [apply_op("TensorArrayReadGrad", [flow, indices, convert_to_tensor(grad)]).outputs[0], None]


@gradient("TensorArrayConcat")
def _concat_grad(op: Operation, grad: Any, _lengths_grad: Any) -> list[Any]:
    return [apply_op("TensorArrayConcatGrad", [op.inputs[0], op.outputs[1],
                                               convert_to_tensor(grad)]).outputs[0]]


not_differentiable("TensorArray", "TensorArraySize", "TensorArrayWriteGrad", "TensorArraySplitGrad",
                   "TensorArrayUnstackGrad", "TensorArrayReadGrad", "TensorArrayConcatGrad")


__all__ = ["TensorArray"]
