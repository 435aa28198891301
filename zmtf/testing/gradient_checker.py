"""``tf.test.compute_gradient`` / ``compute_gradient_error``: TF1's gradient checker.

The theoretical Jacobian comes from ``tf.gradients`` with a fed one-hot ``grad_ys`` per
output element; the numerical one from central differences of ``y`` while ``x`` is fed
perturbed values. Both are ``[x_size, y_size]``, as TF lays them out. Runs in the
default session (``with tf.Session():`` or a TestCase's ``test_session()``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework.graph import Tensor
from zmtf.ops import array_ops
from zmtf.ops.constant_op import constant
from zmtf.client.session import get_default_session


def _session() -> Any:
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: call it inside "
                         "`with tf.Session():` or a TestCase's `with self.test_session():`")
    return sess


def _initial(x: Tensor, x_shape: Sequence[int], init: Any) -> np.ndarray:
    dtype = x.dtype.as_numpy_dtype
    if init is not None:
        value = np.asarray(init, dtype=dtype)
        if value.shape != tuple(x_shape):
            raise ValueError(f"x_init_value has shape {value.shape}, but x_shape is {tuple(x_shape)}")
        return value
    return np.random.random_sample(tuple(x_shape)).astype(dtype)


def _jacobians(x: Tensor, x_shape: Sequence[int], y: Tensor, y_shape: Sequence[int],
               x_value: np.ndarray, delta: float, feed: dict) -> tuple[np.ndarray, np.ndarray]:
    from zmtf.training.gradients import gradients

    sess = _session()
    x_size, y_size = int(np.prod(x_shape, dtype=np.int64)), int(np.prod(y_shape, dtype=np.int64))
    with x.graph.as_default():
        dy_fed = constant(1.0, shape=list(y_shape), dtype=y.dtype)
        dx = gradients(y, x, array_ops.identity(dy_fed))[0]
    theoretical = np.zeros((x_size, y_size), dtype=np.float64)
    if dx is not None:
        one_hot = np.zeros(tuple(y_shape), dtype=y.dtype.as_numpy_dtype)
        for col in range(y_size):
            one_hot.flat[col] = 1
            grad = sess.run(dx, {**feed, x: x_value, dy_fed: one_hot})
            if hasattr(grad, "indices"):   # an IndexedSlicesValue (a gather's gradient)
                grad = _densify(grad, x_shape)
            theoretical[:, col] = np.asarray(grad, dtype=np.float64).reshape(-1)
            one_hot.flat[col] = 0
    numerical = np.zeros((x_size, y_size), dtype=np.float64)
    for row in range(x_size):
        moved = x_value.copy()
        moved.flat[row] = x_value.flat[row] + delta
        y_plus = np.asarray(sess.run(y, {**feed, x: moved}), dtype=np.float64)
        moved.flat[row] = x_value.flat[row] - delta
        y_minus = np.asarray(sess.run(y, {**feed, x: moved}), dtype=np.float64)
        numerical[row, :] = ((y_plus - y_minus) / (2 * delta)).reshape(-1)
    return theoretical, numerical


def _densify(slices: Any, x_shape: Sequence[int]) -> np.ndarray:
    dense = np.zeros(tuple(x_shape), dtype=np.float64)
    np.add.at(dense, np.asarray(slices.indices), np.asarray(slices.values, dtype=np.float64))
    return dense


def compute_gradient(x: Any, x_shape: Any, y: Tensor, y_shape: Sequence[int], x_init_value: Any = None,
                     delta: float = 1e-3, init_targets: Any = None,
                     extra_feed_dict: dict | None = None) -> Any:
    """``(theoretical, numerical)`` Jacobians of ``y`` by ``x``; for a list ``x`` (with a
    list of shapes and initial values), a list of such pairs."""
    feed = dict(extra_feed_dict or {})
    for init in init_targets or ():
        _session().run(init)
    if isinstance(x, (list, tuple)):
        inits = x_init_value if x_init_value is not None else [None] * len(x)
        values = [_initial(xi, shape, init) for xi, shape, init in zip(x, x_shape, inits)]
        pairs = []
        for i, (xi, shape) in enumerate(zip(x, x_shape)):
            others = {xj: values[j] for j, xj in enumerate(x) if j != i}
            pairs.append(_jacobians(xi, shape, y, y_shape, values[i], delta, {**feed, **others}))
        return pairs
    return _jacobians(x, x_shape, y, y_shape, _initial(x, x_shape, x_init_value), delta, feed)


def compute_gradient_error(x: Any, x_shape: Any, y: Tensor, y_shape: Sequence[int],
                           x_init_value: Any = None, delta: float = 1e-3, init_targets: Any = None,
                           extra_feed_dict: dict | None = None) -> float:
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    found = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict)
    pairs = found if isinstance(x, (list, tuple)) else [found]
    return max((float(np.max(np.abs(t - n))) if t.size else 0.0) for t, n in pairs)
