"""TensorArray kernels: a TensorArray's value is an immutable ``ListValue`` (a tuple of
element arrays, None where nothing was written) held in a 0-d object array of dtype
variant. Every op that changes it returns a new value, so a While op can carry it as a
loop variable and keep its history for the gradient at the cost of one tuple of
references per iteration, never a copy of the elements.

The semantics are TF 2.x's (TensorList-backed TensorArrays): writing an index again
replaces its element; reading an unwritten index gives zeros when the element shape is
known (from the array's static element shape or another element). The gradient of a
TensorArray is a ListValue of gradient elements; a missing element is a zero gradient.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import check_output_size, shape_str
from zmtf.kernels.registry import register


class ListValue:
    """What a variant tensor holds: ``elements`` (arrays or None), their dtype, the element
    shape known when the array was built (dims None where unknown; None if the rank is
    unknown), and whether writes past the end grow it."""

    __slots__ = ("elements", "dtype", "element_shape", "dynamic")

    def __init__(self, elements: Sequence[Any], dtype: str | None,
                 element_shape: list | None = None, dynamic: bool = False) -> None:
        self.elements = tuple(elements)
        self.dtype = dtype
        self.element_shape = element_shape
        self.dynamic = dynamic

    def replaced(self, items: dict[int, Any]) -> "ListValue":
        """A copy with ``items`` (index -> array or None) set, grown to hold them."""
        elements = list(self.elements)
        top = max(items, default=-1) + 1
        elements.extend([None] * (top - len(elements)))
        for i, value in items.items():
            elements[i] = value
        return ListValue(elements, self.dtype, self.element_shape, self.dynamic)

    def __add__(self, other: Any) -> "ListValue":
        """Gradient aggregation: elementwise sums, a missing element counting as zero."""
        other = unwrap(other)
        if other is None:
            return self
        n = max(len(self.elements), len(other.elements))
        mine = self.elements + (None,) * (n - len(self.elements))
        theirs = other.elements + (None,) * (n - len(other.elements))
        summed = [b if a is None else a if b is None else a + b for a, b in zip(mine, theirs)]
        return ListValue(summed, self.dtype or other.dtype, self.element_shape, self.dynamic)

    __radd__ = __add__

    def __repr__(self) -> str:
        written = sum(e is not None for e in self.elements)
        return f"<TensorArray value: {written} of {len(self.elements)} elements written>"


def wrap(value: ListValue) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def unwrap(value: Any) -> ListValue | None:
    """The ListValue a variant input holds; None for an empty gradient (ZerosLike, 0)."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        value = value[()]
    return value if isinstance(value, ListValue) else None


def _list(value: Any, attrs: dict) -> ListValue:
    found = unwrap(value)
    if found is None:
        raise InvalidArgumentError(f"TensorArray op '{attrs['_node_name']}' got no TensorArray "
                                   f"value (got {type(value).__name__}); pass a TensorArray's flow")
    return found


def _indices(value: Any) -> list[int]:
    return [int(i) for i in np.asarray(value).reshape(-1)]


def _element_shape(ta: ListValue, attrs: dict, gradient_like: Any = None) -> tuple[int, ...]:
    """The element shape zeros take: the static one, else any written element's."""
    static = ta.element_shape
    if static is not None and all(d is not None for d in static):
        return tuple(static)
    for element in ta.elements:
        if element is not None:
            return np.shape(element)
    if gradient_like is not None:
        return gradient_like
    raise InvalidArgumentError(f"Trying to read an uninitialized tensor but element_shape is not "
                               f"fully defined: {_shown(static)} and no list element is set (node "
                               f"'{attrs['_node_name']}'); give the TensorArray a full "
                               f"element_shape or write the element first")


def _shown(static: list | None) -> str:
    return "<unknown>" if static is None else shape_str(["?" if d is None else d for d in static])


def _element(ta: ListValue, i: int, attrs: dict, verb: str = "access") -> np.ndarray:
    if not 0 <= i < len(ta.elements):
        raise InvalidArgumentError(f"Trying to {verb} element {i} in a list with "
                                   f"{len(ta.elements)} elements. (node '{attrs['_node_name']}')")
    element = ta.elements[i]
    if element is None:
        return np.zeros(_element_shape(ta, attrs), np.dtype(ta.dtype))
    return element


def _stacked(ta: ListValue, indices: Iterable[int], attrs: dict) -> np.ndarray:
    parts = [_element(ta, i, attrs) for i in indices]
    if not parts:
        static = ta.element_shape
        if static is None or any(d is None for d in static):
            raise InvalidArgumentError(f"Tried to stack elements of an empty list with "
                                       f"non-fully-defined element_shape: "
                                       f"{_shown(static)} (node '{attrs['_node_name']}'); give "
                                       f"the TensorArray a full element_shape")
        return np.zeros((0,) + tuple(static), np.dtype(ta.dtype))
    first = np.shape(parts[0])
    for part in parts[1:]:
        if np.shape(part) != first:
            raise InvalidArgumentError(f"PartialTensorShape: Incompatible shapes during merge: "
                                       f"{shape_str(first)} vs. {shape_str(np.shape(part))} (node "
                                       f"'{attrs['_node_name']}': a TensorArray's elements must "
                                       f"share one shape to be stacked or gathered)")
    return np.stack(parts)


def _check_shape(value: np.ndarray, ta: ListValue, attrs: dict) -> None:
    static = ta.element_shape
    if static is None:
        return
    if len(static) != value.ndim or any(d is not None and d != s for d, s in zip(static, value.shape)):
        raise InvalidArgumentError(f"Tried to write an element of shape {shape_str(value.shape)} to "
                                   f"a TensorArray whose element shape is "
                                   f"{_shown(static)} (node "
                                   f"'{attrs['_node_name']}')")


def _write(ta: ListValue, indices: list[int], parts: Sequence[np.ndarray], attrs: dict) -> ListValue:
    items: dict[int, Any] = {}
    for i, part in zip(indices, parts):
        if i < 0 or (i >= len(ta.elements) and not ta.dynamic):
            raise InvalidArgumentError(f"Trying to modify element {i} in a list with "
                                       f"{len(ta.elements)} elements. (node '{attrs['_node_name']}')")
        part = np.asarray(part)
        if part.dtype == object and ta.dtype not in (None, "string"):   # a variant, or strings
            raise InvalidArgumentError(f"TensorArray dtype is {ta.dtype} but node "
                                       f"'{attrs['_node_name']}' is trying to write a value of "
                                       f"another dtype (a variant or string tensor)")
        _check_shape(part, ta, attrs)
        items[i] = part
    return ta.replaced(items)


@register("TensorArray")
def tensor_array(ctx: Any, inputs: list, attrs: dict) -> list:
    """TensorArray(size): a list of ``size`` unwritten elements."""
    size = int(inputs[0])
    if size < 0:
        raise InvalidArgumentError(f"TensorArray size must be >= 0, got {size} (node "
                                   f"'{attrs['_node_name']}')")
    check_output_size([size], object, attrs["_node_name"], "the element list")
    return [wrap(ListValue([None] * size, attrs["dtype"], attrs["element_shape"],
                           attrs["dynamic_size"]))]


@register("TensorArrayWrite")
def write(ctx: Any, inputs: list, attrs: dict) -> list:
    ta, index, value = inputs
    return [wrap(_write(_list(ta, attrs), [int(index)], [value], attrs))]


@register("TensorArrayScatter")
def scatter(ctx: Any, inputs: list, attrs: dict) -> list:
    ta, indices, value = _list(inputs[0], attrs), _indices(inputs[1]), np.asarray(inputs[2])
    if value.ndim == 0 or value.shape[0] != len(indices):
        raise InvalidArgumentError(f"TensorArray scatter (node '{attrs['_node_name']}'): "
                                   f"{len(indices)} indices for a value of shape "
                                   f"{shape_str(value.shape)}; the value's first dimension "
                                   f"must equal the number of indices")
    return [wrap(_write(ta, indices, list(value), attrs))]


@register("TensorArrayUnstack")
def unstack(ctx: Any, inputs: list, attrs: dict) -> list:
    """The elements of value's first axis become the array (TF's TensorListFromTensor)."""
    ta, value = _list(inputs[0], attrs), np.asarray(inputs[1])
    if value.ndim == 0:
        raise InvalidArgumentError(f"TensorArray unstack (node '{attrs['_node_name']}') needs a "
                                   f"value with a first axis, got a scalar")
    if not ta.dynamic and value.shape[0] != len(ta.elements):
        raise InvalidArgumentError(f"Operation expected a list with {len(ta.elements)} elements "
                                   f"but got a list with {value.shape[0]} elements. (node "
                                   f"'{attrs['_node_name']}': unstack into a fixed-size "
                                   f"TensorArray needs exactly its size of elements)")
    fresh = ListValue([None] * value.shape[0], ta.dtype, ta.element_shape, ta.dynamic)
    return [wrap(_write(fresh, list(range(value.shape[0])), list(value), attrs))]


@register("TensorArraySplit")
def split(ctx: Any, inputs: list, attrs: dict) -> list:
    ta, value, lengths = _list(inputs[0], attrs), np.asarray(inputs[1]), _indices(inputs[2])
    node = attrs["_node_name"]
    if value.ndim == 0:
        raise InvalidArgumentError(f"TensorArray split (node '{node}') needs a value with a first "
                                   f"axis, got a scalar")
    if any(n < 0 for n in lengths) or sum(lengths) != value.shape[0]:
        raise InvalidArgumentError(f"Unused values in tensor. Length of tensor: {value.shape[0]} "
                                   f"Values used: {sum(lengths)} (node '{node}': lengths must be "
                                   f">= 0 and sum to the value's first dimension)")
    if not ta.dynamic and len(lengths) > len(ta.elements):
        raise InvalidArgumentError(f"Trying to modify element {len(lengths) - 1} in a list with "
                                   f"{len(ta.elements)} elements. (node '{node}')")
    bounds = np.cumsum([0] + lengths)
    parts = [value[bounds[i]:bounds[i + 1]] for i in range(len(lengths))]
    fresh = ListValue([None] * max(len(ta.elements), len(lengths)), ta.dtype,
                      ta.element_shape, ta.dynamic)
    return [wrap(_write(fresh, list(range(len(lengths))), parts, attrs))]


@register("TensorArrayRead")
def read(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.asarray(_element(_list(inputs[0], attrs), int(inputs[1]), attrs))]


@register("TensorArrayGather")
def gather(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_stacked(_list(inputs[0], attrs), _indices(inputs[1]), attrs)]


@register("TensorArrayConcat")
def concat(ctx: Any, inputs: list, attrs: dict) -> list:
    """All elements joined on their first axis, and each element's length."""
    ta = _list(inputs[0], attrs)
    parts = [np.asarray(_element(ta, i, attrs)) for i in range(len(ta.elements))]
    if any(p.ndim == 0 for p in parts):
        raise InvalidArgumentError(f"Concat saw a scalar shape at index 0 but requires at least "
                                   f"vectors (node '{attrs['_node_name']}')")
    lengths = np.asarray([p.shape[0] for p in parts], np.int64)
    if not parts:
        return [np.zeros((0,) + tuple(_element_shape(ta, attrs))[1:], np.dtype(ta.dtype)), lengths]
    for p in parts[1:]:
        if p.shape[1:] != parts[0].shape[1:]:
            raise InvalidArgumentError(f"Concat: the elements of a TensorArray must agree past "
                                       f"their first dimension: {shape_str(parts[0].shape)} vs. "
                                       f"{shape_str(p.shape)} (node '{attrs['_node_name']}')")
    return [np.concatenate(parts), lengths]


@register("TensorArraySize")
def size(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.int32(len(_list(inputs[0], attrs).elements))]


# ---- gradients: a TensorArray's gradient is a ListValue of element gradients -------------

@register("ZerosLike", dtypes=["variant"])
def zeros_like(ctx: Any, inputs: list, attrs: dict) -> list:
    """No gradient yet: an empty list (adds as zero) in the input's shape."""
    out = np.empty(np.shape(inputs[0]), dtype=object)
    for i in np.ndindex(out.shape):
        out[i] = ListValue((), None)
    return [out]


@register("AddN", dtypes=["variant"])
def add_n(ctx: Any, inputs: list, attrs: dict) -> list:
    total = ListValue((), None)
    for value in inputs:
        total = total + value
    return [wrap(total)]


def _pick(grad: ListValue | None, indices: list[int], element_shape: tuple,
          dtype: np.dtype) -> list[np.ndarray]:
    """The gradient elements at ``indices``; zeros where none flowed back."""
    out = []
    for i in indices:
        found = None if grad is None or i >= len(grad.elements) else grad.elements[i]
        out.append(np.zeros(element_shape, dtype) if found is None else np.asarray(found, dtype))
    return out


def _cleared(grad: ListValue | None, indices: Iterable[int]) -> np.ndarray:
    """The gradient left for the array before a write: the written elements' taken out."""
    if grad is None:
        return wrap(ListValue((), None))
    return wrap(grad.replaced({i: None for i in indices if i < len(grad.elements)}))


@register("TensorArrayWriteGrad")
def write_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """(grad of the written array, indices, the written value) -> (grad of the array before the
    write, grad of the value). Index is a scalar (write) or a vector (scatter)."""
    grad, indices, value = unwrap(inputs[0]), inputs[1], np.asarray(inputs[2])
    scalar = np.ndim(indices) == 0
    flat = _indices(indices)
    element = value.shape if scalar else value.shape[1:]
    parts = _pick(grad, flat, element, value.dtype)
    picked = parts[0] if scalar else np.stack(parts) if parts else np.zeros(value.shape, value.dtype)
    return [_cleared(grad, flat), picked]


@register("TensorArraySplitGrad")
def split_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """(grad of the array after split, lengths, the split value) -> (grad before, grad of value)."""
    grad, lengths, value = unwrap(inputs[0]), _indices(inputs[1]), np.asarray(inputs[2])
    parts = [_pick(grad, [i], (n,) + value.shape[1:], value.dtype)[0] for i, n in enumerate(lengths)]
    joined = np.concatenate(parts) if parts else np.zeros(value.shape, value.dtype)
    return [_cleared(grad, range(len(lengths))), joined]


@register("TensorArrayUnstackGrad")
def unstack_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """(grad of the array after unstack, the unstacked value) -> grad of the value."""
    grad, value = unwrap(inputs[0]), np.asarray(inputs[1])
    parts = _pick(grad, list(range(value.shape[0])), value.shape[1:], value.dtype)
    return [np.stack(parts) if parts else np.zeros(value.shape, value.dtype)]


@register("TensorArrayReadGrad")
def read_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """(the array read, indices, grad of what was read) -> the array's gradient: a list of the
    array's length holding the read gradients (summed where an index was read twice)."""
    ta, indices, grad = _list(inputs[0], attrs), inputs[1], np.asarray(inputs[2])
    flat = _indices(indices)
    parts = [grad] if np.ndim(indices) == 0 else list(grad)
    out = ListValue([None] * len(ta.elements), grad.dtype.name)
    for i, part in zip(flat, parts):
        out = out + ListValue([None] * i + [part], grad.dtype.name)
    return [wrap(out)]


@register("TensorArrayConcatGrad")
def concat_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """(the array concatenated, its lengths, grad of the concatenation) -> the array's gradient."""
    ta, lengths, grad = _list(inputs[0], attrs), _indices(inputs[1]), np.asarray(inputs[2])
    bounds = np.cumsum([0] + lengths)
    parts = [grad[bounds[i]:bounds[i + 1]] for i in range(len(lengths))]
    return [wrap(ListValue(parts + [None] * (len(ta.elements) - len(parts)), grad.dtype.name))]
