"""feed_dict handling as TF1's session does it: which keys name which tensors, and which
values are refused before a step starts.

A key may be a tensor, a tensor name, a SparseTensor or IndexedSlices (fed by its parts, a
tuple of values zipped with them as TF1 does, so one without a dense_shape takes two), or a
nested tuple of those (its value a matching nest). A key that is no tensor and a value that
is a ``tf.Tensor`` are TypeErrors; so is a Python number that the tensor's dtype cannot hold
(TF1 refuses int64-max fed to an int32 placeholder rather than wrapping it around).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from zmtf.client.fetches import CONVERSIONS
from zmtf.framework import nest
from zmtf.framework.dtypes import to_string_array
from zmtf.framework.errors import FeedMismatchError
from zmtf.framework.graph import Graph, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.framework.sparse_tensor import SparseTensor, sparse_feed_parts


#: Resolved feeds: the fed tensors and their values as arrays of the tensors' dtypes.
Feeds = tuple[list[Tensor], list[np.ndarray]]
#: a fed array at least this big that must be converted (another dtype, not contiguous) is
#: converted off the event loop by AsyncSession (``heavy_feeds``): 64 MB took the loop 131 ms
OFF_LOOP_FEED_BYTES = 1 << 20
#: ... and so is a list or tuple this long (numpy reads it element by element)
OFF_LOOP_FEED_ITEMS = 1024


def feed_arrays(graph: Graph, feed_dict: dict) -> Feeds:
    """Resolve feed keys (tensors, names, variables, nests) and check each value against its tensor."""
    tensors, values = resolve_feeds(graph, feed_dict)
    return tensors, convert_feeds(tensors, values)


def resolve_feeds(graph: Graph, feed_dict: dict) -> tuple[list[Tensor], list[Any]]:
    """The fed tensors, and the values as given (cheap: no value is converted)."""
    tensors, values = [], []
    for key, value in _expanded(feed_dict):
        if type(key) is Tensor and key.graph is graph:   # the usual key: nothing to resolve
            element = key
        else:
            element = _feed_tensor(graph, key)
        if isinstance(value, Tensor):
            raise TypeError(
                f"The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                f"Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, "
                f"the tensor object was {value} which was passed to the feed with key {key}.")
        if graph._unfeedable and element in graph._unfeedable:
            raise ValueError(f"Tensor {element} may not be fed.")
        tensors.append(element)
        values.append(value)
    return tensors, values


def convert_feeds(tensors: list[Tensor], values: list[Any]) -> list[np.ndarray]:
    """Each value as an array of its tensor's dtype, checked against its static shape (work
    in proportion to the values' size: ``heavy_feeds`` says when it is worth a thread)."""
    return [_feed_value(tensor, value) for tensor, value in zip(tensors, values)]


def heavy_feeds(tensors: list[Tensor], values: list[Any]) -> bool:
    """Whether converting (and encoding) these values would hold an event loop for long: a
    big array of another dtype or not contiguous, or a long list. A big array that is already
    what the wire sends costs nothing: it is sent from its own memory."""
    for tensor, value in zip(tensors, values):
        if isinstance(value, np.ndarray):
            if value.nbytes >= OFF_LOOP_FEED_BYTES and (
                    value.dtype != tensor.dtype.np or not value.flags.c_contiguous):
                return True
        elif isinstance(value, (list, tuple)) and len(value) >= OFF_LOOP_FEED_ITEMS:
            return True
    return False


def contiguous_feeds(tensors: list[Tensor], values: list[Any]) -> list[np.ndarray]:
    """``convert_feeds``, each array contiguous too (encoding then only takes views of it):
    what AsyncSession runs on a thread for ``heavy_feeds``."""
    return [np.ascontiguousarray(array) if isinstance(array, np.ndarray) else array
            for array in convert_feeds(tensors, values)]


def feed_keys(graph: Graph, keys: Any) -> list[Tensor]:
    """The tensors a list of feed keys names (partial_run_setup's feeds): nests flattened,
    a SparseTensor or IndexedSlices by its parts."""
    tensors: list[Tensor] = []
    for key in nest.flatten(list(keys)):
        converted = _converted(key) if CONVERSIONS else None
        if converted is not None and converted[3] is not None:
            parts = list(converted[3](key))
        elif isinstance(key, SparseTensor):
            parts = [key.indices, key.values, key.dense_shape]
        elif isinstance(key, IndexedSlices):
            parts = [key.values, key.indices] + ([] if key.dense_shape is None else [key.dense_shape])
        else:
            parts = [key]
        tensors.extend(_feed_tensor(graph, part) for part in parts)
    return tensors


def _feed_tensor(graph: Graph, key: Any) -> Tensor:
    """The tensor a feed key names; anything else is TF1's TypeError."""
    try:
        element = graph.as_graph_element(key, allow_operation=False)
    except Exception as exc:  # noqa: BLE001 - TF1 turns every lookup failure into this TypeError
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {_text(exc)}") from None
    if not isinstance(element, Tensor):
        raise TypeError(
            f"Cannot interpret feed_dict key as Tensor: The name '{key}' refers to an Operation, "
            f"not a Tensor. Tensor names must be of the form \"<op_name>:<output_index>\"; feed "
            f"one of its outputs such as '{element.name}:0'.")
    return element


def _text(exc: BaseException) -> str:
    return str(exc.args[0]) if exc.args else str(exc)


def _expanded(feed_dict: dict) -> list[tuple[Any, Any]]:
    """(key, value) pairs with nested tuple keys flattened against their values and each
    SparseTensor or IndexedSlices key replaced by its parts."""
    pairs: list[tuple[Any, Any]] = []
    if not isinstance(feed_dict, Mapping):
        raise TypeError(f"input must be a dictionary: feed_dict is a {type(feed_dict).__name__}; pass "
                        f"{{tensor: value}}")
    for key, value in feed_dict.items():
        if isinstance(key, tuple):
            flat_keys, flat_values = nest.flatten(key), nest.flatten(value)
            if len(flat_keys) != len(flat_values):
                raise ValueError(
                    f"Could not flatten dictionary. Key had {len(flat_keys)} elements, but value "
                    f"had {len(flat_values)} elements. Key: {key}, value: {value}.")
            for sub_key, sub_value in zip(flat_keys, flat_values):
                _expand_one(sub_key, sub_value, pairs)
        else:
            _expand_one(key, value, pairs)
    return pairs


def _expand_one(key: Any, value: Any, pairs: list[tuple[Any, Any]]) -> None:
    if CONVERSIONS and type(key) is not Tensor:
        converted = _converted(key)
        if converted is not None and converted[2] is not None:
            pairs.extend(converted[2](key, value))
            return
    if isinstance(key, SparseTensor):
        parts = list(value) if isinstance(value, (tuple, list)) else sparse_feed_parts(value, key)
        pairs.extend(zip((key.indices, key.values, key.dense_shape), parts))
    elif isinstance(key, IndexedSlices):
        keys = [key.values, key.indices] + ([] if key.dense_shape is None else [key.dense_shape])
        pairs.extend(zip(keys, value))   # an IndexedSlicesValue is a (values, indices, dense_shape) tuple
    else:
        pairs.append((key, value))


def _converted(key: Any) -> Any:
    """The registered conversion of ``key``'s type (register_session_run_conversion_functions)."""
    for conversion in CONVERSIONS:
        if isinstance(key, conversion[0]):
            return conversion
    return None


def _fits(target: np.dtype, value: int | float) -> bool:
    """Whether a Python number survives conversion to ``target`` unchanged (TF1's check)."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return bool(target.type(value) == value)
    except (OverflowError, ValueError):
        return False


def _feed_value(tensor: Tensor, value: Any) -> np.ndarray:
    """The fed value as an array of the tensor's dtype, checked against its static shape."""
    target = tensor.dtype.np
    if tensor.dtype.is_string:
        if isinstance(value, (int, float)):
            raise TypeError(
                f"Type of feed value {value} with type {type(value)} is not compatible with Tensor "
                f"type {target.type} of '{tensor.name}' (dtype string): feed str or bytes.")
        try:
            array = to_string_array(value)
        except TypeError as exc:
            raise FeedMismatchError(
                None, None, f"Cannot feed {type(value).__name__} for Tensor '{tensor.name}', which "
                f"has dtype string: {exc}; feed str, bytes or lists/arrays of them.",
                node_name=tensor.op.name) from None
        return _checked_shape(tensor, array)
    if isinstance(value, int):
        if not _fits(target, value):
            raise TypeError(
                f"Type of feed value {value} with type {type(value)} is not compatible with Tensor "
                f"type {target.type} of '{tensor.name}'. Try explicitly setting the type of the "
                f"feed tensor to a larger type (e.g. int64).")
        return _checked_shape(tensor, np.asarray(value, dtype=target))
    array = np.asarray(value)
    if array.size == 0 and not isinstance(value, np.ndarray):
        array = array.astype(target)   # [] has no dtype of its own (numpy says float64)
    if array.dtype != target:
        if array.dtype == object or not (np.can_cast(array.dtype, target, "same_kind")
                                         or (array.dtype.kind in "iub" and target.kind in "iuf")):
            raise FeedMismatchError(
                None, None,
                f"Cannot feed value of dtype {array.dtype} for Tensor '{tensor.name}', which has "
                f"dtype {tensor.dtype.name}: convert the value with np.asarray(value, "
                f"dtype=np.{tensor.dtype.name}).", node_name=tensor.op.name)
        if (array.dtype.kind in "iu" and target.kind in "iu" and array.size
                and not np.can_cast(array.dtype, target, "safe")):
            _check_int_range(tensor, array, target)
        array = array.astype(target)
    return _checked_shape(tensor, array)


def _check_int_range(tensor: Tensor, array: np.ndarray, target: np.dtype) -> None:
    """Integers that the narrower dtype cannot hold are refused, not wrapped around."""
    info = np.iinfo(target)
    low, high = array.min(), array.max()
    if low < info.min or high > info.max:
        bad = high if high > info.max else low
        raise TypeError(
            f"Type of feed value {bad} with type {array.dtype} is not compatible with Tensor type "
            f"{target.type} of '{tensor.name}'. Try explicitly setting the type of the feed "
            f"tensor to a larger type (e.g. int64).")


def _checked_shape(tensor: Tensor, array: np.ndarray) -> np.ndarray:
    if not tensor.shape.is_compatible_with(array.shape):
        raise FeedMismatchError(
            None, None,
            f"Cannot feed value of shape {array.shape} for Tensor '{tensor.name}', which has "
            f"shape '{tensor.shape}'", node_name=tensor.op.name)
    return array
