"""``tf.estimator.inputs.numpy_input_fn``: an input_fn over numpy arrays.

TF1 feeds the arrays through a queue filled by threads; zmtf builds the same stream as a
``tf.data`` pipeline (slices, shuffle, repeat for ``num_epochs``, batch), which the
Estimator reads through an iterator. The batches are the same: ``batch_size`` rows, the
last one smaller when the epochs end, in order unless ``shuffle``. ``queue_capacity`` is
the shuffle buffer; ``num_threads`` is accepted (the pipeline runs in the session).
"""

from __future__ import annotations

import collections
from typing import Any, Callable

import numpy as np

from zmtf.ops.dataset_ops import Dataset

_TARGET_KEY = "__target_key__"
_DIRECT_KEY = "__direct_np_input__"


def _unique_target_key(features: dict) -> str:
    key = _TARGET_KEY
    while key in features:
        key += "_n"
    return key


def _features(x: Any) -> collections.OrderedDict:
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items(), key=lambda item: item[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({_DIRECT_KEY: x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def _columns(x: Any, y: Any) -> tuple[collections.OrderedDict, list[str], Any]:
    """Every array by key, the feature keys, and the target key(s) (None without y)."""
    columns = _features(x)
    feature_keys = list(columns)
    if y is None:
        target_keys: Any = None
    elif isinstance(y, dict):
        if not y:
            raise ValueError("y cannot be empty dict, use None instead.")
        targets = collections.OrderedDict(sorted(y.items(), key=lambda item: item[0]))
        duplicates = set(feature_keys) & set(targets)
        if duplicates:
            raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: {duplicates}")
        target_keys = list(targets)
        columns.update(targets)
    else:
        target_keys = _unique_target_key(columns)
        columns[target_keys] = y
    if len({np.shape(v)[0] for v in columns.values()}) != 1:
        y_shapes = None if target_keys is None else (
            np.shape(y) if isinstance(target_keys, str) else {k: columns[k].shape for k in target_keys})
        raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y must have "
                         f"the same length.\nShapes in x: { {k: columns[k].shape for k in feature_keys} }\n"
                         f"Shapes in y: {y_shapes}\n")
    return columns, feature_keys, target_keys


def numpy_input_fn(x: Any, y: Any = None, batch_size: int = 128, num_epochs: int | None = 1,
                   shuffle: Any = None, queue_capacity: int = 1000,
                   num_threads: int = 1) -> Callable[[], Any]:
    """An input_fn yielding ``(features, target)`` batches of x (a dict or array) and y."""
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is recommended to "
                         f"set it as True for training); got {shuffle}")

    def input_fn() -> Any:
        columns, feature_keys, target_keys = _columns(x, y)
        dataset = Dataset.from_tensor_slices({k: np.asarray(v) for k, v in columns.items()})
        if shuffle:
            dataset = dataset.shuffle(queue_capacity)
        dataset = dataset.repeat(num_epochs).batch(batch_size)
        batch = dataset.make_one_shot_iterator().get_next()
        features = batch[_DIRECT_KEY] if isinstance(x, np.ndarray) else {k: batch[k] for k in feature_keys}
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[target_keys]
        return features, {k: batch[k] for k in target_keys}

    return input_fn
