"""Neural-net kernels on the GPU: Softmax, the two softmax cross-entropies, BiasAdd.

Softmaxes run over the last axis with one thread per row: the row maximum is subtracted
first (no overflow), sums accumulate in float64. Invalid sparse labels give NaN loss and
backprop rows, as TF's GPU kernel does (the CPU kernel raises): checking them would mean
copying the labels back to the host.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.cuda import _device
from zmtf.kernels.cuda.array import fill_with
from zmtf.kernels.cuda.elementwise import BINARY_OPS, MATH, binary
from zmtf.kernels.registry import register
from zmtf.kernels.shapes import bias_channel_axis


@cuda.jit(device=True)
def _row_max(x, base, cols):  # type: ignore[no-untyped-def]
    m = x[base]
    for j in range(1, cols):
        v = x[base + j]
        if v > m or v != v:
            m = v
    return m


@cuda.jit(device=True)
def _row_log_sum_exp(x, base, cols, m):  # type: ignore[no-untyped-def]
    """log(sum(exp(x[row] - m))) in float64."""
    total = 0.0
    for j in range(cols):
        total += math.exp(float(x[base + j]) - m)
    return math.log(total)


@cuda.jit
def softmax_kernel(x, out, rows, cols):  # type: ignore[no-untyped-def]
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        base = r * cols
        m = float(_row_max(x, base, cols))
        lse = _row_log_sum_exp(x, base, cols, m)
        for j in range(cols):
            out[base + j] = math.exp(float(x[base + j]) - m - lse)


@cuda.jit
def sparse_xent_kernel(x, labels, loss, backprop, rows, cols):  # type: ignore[no-untyped-def]
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        base = r * cols
        label = labels[r]
        if label < 0 or label >= cols:
            loss[r] = math.nan
            for j in range(cols):
                backprop[base + j] = math.nan
            continue
        m = float(_row_max(x, base, cols))
        lse = _row_log_sum_exp(x, base, cols, m)
        loss[r] = lse - (float(x[base + label]) - m)
        for j in range(cols):
            p = math.exp(float(x[base + j]) - m - lse)
            backprop[base + j] = p - 1.0 if j == label else p


@cuda.jit
def xent_kernel(x, labels, loss, backprop, rows, cols):  # type: ignore[no-untyped-def]
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        base = r * cols
        m = float(_row_max(x, base, cols))
        lse = _row_log_sum_exp(x, base, cols, m)
        total = 0.0
        for j in range(cols):
            log_p = float(x[base + j]) - m - lse
            label = float(labels[base + j])
            total -= label * log_p
            backprop[base + j] = math.exp(log_p) - label
        loss[r] = total


@register("Softmax", "GPU", MATH)
def softmax(ctx: Any, inputs: list, attrs: dict) -> list:
    """Softmax(logits) over the last axis."""
    x = inputs[0]
    out = _device.empty(ctx, x.shape, x.dtype)
    if out.size:
        cols = tuple(x.shape)[-1] if x.ndim else 1  # NOTE: device shapes reject index -1
        rows = x.size // cols
        _device.launch(ctx, softmax_kernel, rows, _device.flat(x), _device.flat(out), rows, cols)
    return [out]


def _check_logits(x: Any, node_name: str) -> tuple[int, int]:
    if x.ndim != 2:
        raise InvalidArgumentError(
            f"logits must be 2-dimensional, got shape {shape_str(x.shape)} (node '{node_name}')"
        )
    return int(x.shape[0]), int(x.shape[1])


def _xent(ctx: Any, kernel: Any, features: Any, labels: Any, no_class_loss: float) -> list:
    """Run a cross-entropy kernel; ``no_class_loss`` is the loss of rows without classes."""
    rows, cols = features.shape
    loss = _device.empty(ctx, (rows,), features.dtype)
    backprop = _device.empty(ctx, (rows, cols), features.dtype)
    if backprop.size:
        _device.launch(
            ctx, kernel, rows, _device.flat(features), _device.flat(labels),
            loss, _device.flat(backprop), rows, cols,
        )
    elif rows:
        fill_with(ctx, loss, no_class_loss)
    return [loss, backprop]


@register("SparseSoftmaxCrossEntropyWithLogits", "GPU", MATH)
def sparse_softmax_cross_entropy_with_logits(ctx: Any, inputs: list, attrs: dict) -> list:
    """(features [b,c], labels int [b]) -> (loss [b], backprop [b,c] = softmax - onehot).

    A label outside [0, c) gives NaN in its loss and backprop row (TF's GPU behaviour).
    """
    features, labels = inputs
    node_name = attrs["_node_name"]
    batch, _ = _check_logits(features, node_name)
    if tuple(labels.shape) != (batch,):
        raise InvalidArgumentError(
            f"labels must be 1-D with the logits' batch size {batch}, got labels shape "
            f"{shape_str(labels.shape)} and logits shape {shape_str(features.shape)} "
            f"(node '{node_name}')"
        )
    return _xent(ctx, sparse_xent_kernel, features, labels, math.nan)  # no valid label


@register("SoftmaxCrossEntropyWithLogits", "GPU", MATH)
def softmax_cross_entropy_with_logits(ctx: Any, inputs: list, attrs: dict) -> list:
    """(features [b,c], labels [b,c]) -> (loss [b], backprop [b,c] = softmax - labels)."""
    features, labels = inputs
    node_name = attrs["_node_name"]
    _check_logits(features, node_name)
    if tuple(labels.shape) != tuple(features.shape):
        raise InvalidArgumentError(
            f"logits and labels must be same size: logits_size={shape_str(features.shape)} "
            f"labels_size={shape_str(labels.shape)} (node '{node_name}')"
        )
    return _xent(ctx, xent_kernel, features, labels, 0.0)  # a sum of nothing


@register("BiasAdd", "GPU", MATH)
def bias_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """BiasAdd(value, bias): bias added over the last dim (the channel dim for NCHW)."""
    value, bias = inputs
    channel_axis = bias_channel_axis(tuple(value.shape), tuple(bias.shape), attrs)
    if channel_axis != value.ndim - 1:
        bias = bias.reshape((bias.shape[0],) + (1,) * (value.ndim - 2))  # a view
    return [binary(BINARY_OPS["Add"], ctx, value, bias)]
