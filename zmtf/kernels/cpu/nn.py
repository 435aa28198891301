"""Neural-net kernels: Softmax, LogSoftmax, the two softmax cross-entropies, OneHot, BiasAdd.

Softmaxes run over the last axis and subtract the row maximum first, so large logits do
not overflow. float16 is computed in float32 and rounded once at the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import FLOATS, NUMERIC, check_output_size, normalize_axis, quiet_fp, quietly, shape_str
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.registry import register
from zmtf.kernels.shapes import bias_channel_axis

_Array = np.ndarray


def _compute_dtype(x: _Array) -> np.dtype:
    return np.dtype(np.float32) if x.dtype == np.float16 else x.dtype


def _shifted(x: _Array) -> _Array:
    """x - max(x, last axis), as a new array in the compute dtype."""
    x = x.astype(_compute_dtype(x), copy=False)
    return np.subtract(x, x.max(axis=-1, keepdims=True), out=...)


def _log_sum_exp(shifted: _Array) -> _Array:
    """log(sum(exp(shifted), last axis)), keepdims."""
    return np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@register("Softmax", dtypes=FLOATS)
def softmax(ctx: Any, inputs: list, attrs: dict) -> list:
    """Softmax(logits) over the last axis."""
    x = inputs[0]
    if x.size == 0:
        return [x.copy()]
    with quiet_fp():
        e = np.exp(_shifted(x), out=...)
        e /= e.sum(axis=-1, keepdims=True)
    return [e.astype(x.dtype, copy=False)]


@register("LogSoftmax", dtypes=FLOATS)
def log_softmax(ctx: Any, inputs: list, attrs: dict) -> list:
    """LogSoftmax(logits) over the last axis."""
    x = inputs[0]
    if x.size == 0:
        return [x.copy()]
    with quiet_fp():
        shifted = _shifted(x)
        shifted -= _log_sum_exp(shifted)
    return [shifted.astype(x.dtype, copy=False)]


def _check_logits(x: _Array, node_name: str) -> None:
    if x.ndim != 2:
        raise InvalidArgumentError(
            f"logits must be 2-dimensional, got shape {shape_str(x.shape)} (node '{node_name}')"
        )


@register("SoftmaxCrossEntropyWithLogits", dtypes=FLOATS)
def softmax_cross_entropy_with_logits(ctx: Any, inputs: list, attrs: dict) -> list:
    """(features [b,c], labels [b,c]) -> (loss [b], backprop [b,c] = softmax - labels)."""
    features, labels = inputs
    node_name = attrs["_node_name"]
    _check_logits(features, node_name)
    if labels.shape != features.shape:
        raise InvalidArgumentError(
            f"logits and labels must be same size: logits_size={shape_str(features.shape)} "
            f"labels_size={shape_str(labels.shape)} (node '{node_name}')"
        )
    with quiet_fp():
        log_probs = _shifted(features)
        log_probs -= _log_sum_exp(log_probs)
        labels_c = labels.astype(log_probs.dtype, copy=False)
        loss = -np.einsum("ij,ij->i", labels_c, log_probs)
        backprop = np.exp(log_probs, out=log_probs)
        backprop -= labels_c
    return [loss.astype(features.dtype, copy=False), backprop.astype(features.dtype, copy=False)]


@jit()
def _sparse_xent_rows(logits, labels, loss, backprop):  # type: ignore[no-untyped-def]
    """One pass per row: log-softmax, the label's loss, softmax - onehot. The index of the
    first label out of [0, classes), or -1 (then nothing was written past it)."""
    classes = logits.shape[1]
    for i in range(logits.shape[0]):
        label = labels[i]
        if label < 0 or label >= classes:
            return i
        top = logits[i, 0]
        for j in range(1, classes):
            if logits[i, j] > top:
                top = logits[i, j]
        total = 0.0
        for j in range(classes):
            e = np.exp(logits[i, j] - top)
            backprop[i, j] = e
            total += e
        log_total = np.log(total)
        loss[i] = log_total - (logits[i, label] - top)
        for j in range(classes):
            backprop[i, j] /= total
        backprop[i, label] -= 1.0
    return -1


_FUSED_XENT = (np.dtype(np.float32), np.dtype(np.float64))


@register("SparseSoftmaxCrossEntropyWithLogits", dtypes=FLOATS)
def sparse_softmax_cross_entropy_with_logits(ctx: Any, inputs: list, attrs: dict) -> list:
    """(features [b,c], labels int [b]) -> (loss [b], backprop [b,c] = softmax - onehot)."""
    features, labels = inputs
    node_name = attrs["_node_name"]
    _check_logits(features, node_name)
    batch, classes = features.shape
    if labels.shape != (batch,):
        raise InvalidArgumentError(
            f"labels must be 1-D with the logits' batch size {batch}, got labels shape "
            f"{shape_str(labels.shape)} and logits shape {shape_str(features.shape)} "
            f"(node '{node_name}')"
        )
    if features.dtype in _FUSED_XENT and labels.dtype.kind in "iu" and features.flags.c_contiguous:
        # one fused pass: the numpy version below costs ~70 us of overheads on a 64 x 10 batch
        loss = np.empty(batch, features.dtype)
        backprop = np.empty_like(features)
        bad_row = quietly(_sparse_xent_rows, features, labels.astype(np.int64, copy=False), loss,
                          backprop)
        if bad_row < 0:
            return [loss, backprop]
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        label = int(labels[np.argmax(bad)])
        raise InvalidArgumentError(
            f"Received a label value of {label} which is outside the valid range of "
            f"[0, {classes}).  Label values: {' '.join(str(int(v)) for v in labels[:100])} "
            f"(node '{node_name}')"
        )
    rows = np.arange(batch)
    with quiet_fp():
        log_probs = _shifted(features)
        log_probs -= _log_sum_exp(log_probs)
        loss = -log_probs[rows, labels]
        backprop = np.exp(log_probs, out=log_probs)
        backprop[rows, labels] -= 1
    return [loss.astype(features.dtype, copy=False), backprop.astype(features.dtype, copy=False)]


@register("OneHot", dtypes=["uint8", "int32", "int64"])
def one_hot(ctx: Any, inputs: list, attrs: dict) -> list:
    """OneHot(indices) with ``depth``, ``on_value``, ``off_value``, ``axis`` (-1), ``dtype``.

    TF's form, with depth/on_value/off_value as inputs 1-3, is accepted too. Indices
    outside [0, depth) give an all-off row.
    """
    indices = inputs[0]
    node_name = attrs["_node_name"]
    if len(inputs) == 4:
        depth, on_value, off_value = (np.asarray(v) for v in inputs[1:])
        dtype = np.dtype(as_dtype(attrs.get("dtype") or on_value.dtype).name)
    else:
        depth = attrs["depth"]
        on_value, off_value = attrs.get("on_value", 1), attrs.get("off_value", 0)
        dtype = np.dtype(as_dtype(attrs.get("dtype") or "float32").name)
    depth = int(depth)
    if depth < 0:
        raise InvalidArgumentError(
            f"depth must be non-negative, got: {depth} (node '{node_name}')"
        )
    check_output_size(np.shape(indices) + (depth,), dtype, node_name)
    axis = int(attrs.get("axis", -1))
    if axis != -1:
        axis = normalize_axis(axis, indices.ndim + 1, node_name)
    flat = indices.reshape(-1)
    out = np.full((flat.size, depth), off_value, dtype=dtype)
    hits = np.flatnonzero((flat >= 0) & (flat < depth))
    out[hits, flat[hits]] = on_value
    out = out.reshape(indices.shape + (depth,))
    if axis not in (-1, indices.ndim):
        out = np.ascontiguousarray(np.moveaxis(out, -1, axis))
    return [out]


@register("BiasAdd", dtypes=NUMERIC)
def bias_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """BiasAdd(value, bias): bias added over the last dim (the channel dim for NCHW)."""
    value, bias = inputs
    channel_axis = bias_channel_axis(tuple(value.shape), tuple(bias.shape), attrs)
    if bias.dtype != value.dtype:
        bias = bias.astype(value.dtype)
    if channel_axis != value.ndim - 1:
        bias = bias.reshape((-1,) + (1,) * (value.ndim - 2))
    with quiet_fp():
        return [np.add(value, bias, out=...)]
