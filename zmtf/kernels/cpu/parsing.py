"""ParseExample on CPU: serialized tf.train.Example records -> one dense array per feature.

Every record is decoded and checked (formats/example_proto.py); a malformed record, a
missing required feature, a list of the wrong kind or length is an InvalidArgumentError that
names the feature and the record's index, as TF's messages do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.example_proto import parse_example
from zmtf.kernels.registry import register

_KINDS = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}
_TF_NAMES = {"float32": "float", "int64": "int64", "string": "string",
             "float_list": "float", "int64_list": "int64", "bytes_list": "string"}


@register("ParseExample", dtypes=["string"])
def parse_example_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    records = np.asarray(inputs[0], dtype=object)
    node = attrs.get("_node_name", "?")
    keys, types, shapes, defaults = attrs["keys"], attrs["types"], attrs["shapes"], attrs["defaults"]
    outputs = [np.empty((records.size, *shape), dtype=object if t == "string" else t)
               for t, shape in zip(types, shapes)]
    sparse_keys, sparse_types = attrs.get("sparse_keys", []), attrs.get("sparse_types", [])
    lists: list[list[Any]] = [[] for _ in sparse_keys]
    for index, record in enumerate(records.flat):
        try:
            features = parse_example(record, f"record {index}")
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(
                f"Could not parse example input, value: '{record[:40]!r}' ({exc.message}; "
                f"node '{node}')") from None
        for out, key, dtype, shape, default in zip(outputs, keys, types, shapes, defaults):
            out[index, ...] = _dense(features.get(key), key, dtype, shape, default, index, node)
        for found, key, dtype in zip(lists, sparse_keys, sparse_types):
            found.append(_var_len(features.get(key), key, dtype, index, node))
    dense = [out.reshape(records.shape + out.shape[1:]) for out in outputs]
    return dense + [part for found, dtype in zip(lists, sparse_types)
                    for part in _sparse(found, dtype, batched=records.ndim > 0)]


def _var_len(feature: tuple[str, Any] | None, key: str, dtype: str, index: int, node: str) -> Any:
    """One record's values of a VarLenFeature (none when it lacks the feature)."""
    if feature is None or not feature[0]:
        return []
    kind, values = feature
    if kind != _KINDS[dtype]:
        raise InvalidArgumentError(
            f"Key: {key}.  Data types don't match. Expected type: {_TF_NAMES[dtype]}, Actual "
            f"type: {_TF_NAMES[kind]} (record {index}, node '{node}')")
    return values


def _sparse(found: list[Any], dtype: str, batched: bool) -> list[np.ndarray]:
    """(indices, values, dense_shape) of the lists: [record, position] entries for a batch."""
    lengths = np.array([len(v) for v in found], np.int64)
    longest = int(lengths.max()) if lengths.size else 0
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    positions = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths]) if lengths.size \
        else np.zeros(0, np.int64)
    values = np.empty(int(lengths.sum()), dtype=object if dtype == "string" else dtype)
    values[:] = [v for one in found for v in one]
    if batched:
        return [np.stack([rows, positions], axis=1), values, np.array([lengths.size, longest], np.int64)]
    return [positions.reshape(-1, 1), values, np.array([longest], np.int64)]


def _dense(feature: tuple[str, Any] | None, key: str, dtype: str, shape: list[int], default: Any,
           index: int, node: str) -> Any:
    if feature is None:
        if default is None:
            raise InvalidArgumentError(
                f"Name: <unknown>, Feature: {key} (data type: {_TF_NAMES[dtype]}) is required "
                f"but could not be found (record {index}, node '{node}')")
        return default
    kind, values = feature
    if kind and kind != _KINDS[dtype]:
        raise InvalidArgumentError(
            f"Name: <unknown>, Key: {key}, Index: {index}.  Data types don't match. Data type: "
            f"{_TF_NAMES[kind]} but expected type: {_TF_NAMES[dtype]} (node '{node}')")
    count = 0 if not kind else len(values)
    expected = int(np.prod(shape, dtype=np.int64))
    if count != expected:
        raise InvalidArgumentError(
            f"Name: <unknown>, Key: {key}, Index: {index}.  Number of {_TF_NAMES[dtype]} values "
            f"!= expected.  Values size: {count} but output shape: [{','.join(map(str, shape))}]"
            f" (node '{node}')")
    if dtype == "string":
        out = np.empty(expected, dtype=object)
        out[:] = values if kind else []
        return out.reshape(shape)
    return np.asarray(values if kind else [], dtype=dtype).reshape(shape)
