"""``tf.nn.fused_batch_norm`` (the FusedBatchNormV3 op and its gradient) and
``tf.nn.batch_norm_with_global_normalization``.

FusedBatchNormV3 has TF's six outputs: y, the batch mean and the Bessel-corrected batch
variance (blended into the running ``mean``/``variance`` inputs when
``exponential_avg_factor`` != 1), then three reserve spaces: the batch mean, the
uncorrected batch variance, and an empty tensor. The gradient op reads the reserve spaces
in training and the population statistics at inference, as TF's does.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.composite_ops import batch_normalization
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

#: TF's floor on epsilon (cuDNN's), applied by the Python wrapper on every device
_MIN_EPSILON = 1.001e-5
_X_DTYPES = (dtypes.float16, dtypes.float32)


def _channel_axis(data_format: str) -> int:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"tf.nn.fused_batch_norm: data_format must be 'NHWC' or 'NCHW', got "
                         f"{data_format!r}")
    return 3 if data_format == "NHWC" else 1


def _channels(x: Tensor, attrs: dict[str, Any]) -> int | None:
    if x.shape.ndims is None:
        return None
    if x.shape.ndims != 4:
        raise ValueError(f"FusedBatchNormV3: x must be 4-dimensional, got {x.name} of shape "
                         f"{x.shape}")
    return x.shape.as_list()[_channel_axis(attrs["data_format"])]


@op_def("FusedBatchNormV3")
def _fused_batch_norm_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, scale = inputs[0], inputs[1]
    if x.dtype not in _X_DTYPES:
        raise TypeError(f"Value passed to parameter 'x' has DataType {x.dtype.name} not in list "
                        f"of allowed values: float16, bfloat16, float32")
    for arg, tensor in zip(("scale", "offset", "mean", "variance"), inputs[1:]):
        if tensor.dtype != dtypes.float32:
            raise TypeError(f"FusedBatchNormV3: {arg} must be float32, got {tensor.dtype.name}")
    depth = _channels(x, attrs)
    if depth is None and scale.shape.ndims == 1:
        depth = scale.shape.as_list()[0]
    vector = TensorShape([depth])
    stats = (dtypes.float32, vector)
    return [(x.dtype, x.shape), stats, stats, stats, stats, (dtypes.float32, TensorShape(None))]


@op_def("FusedBatchNormGradV3")
def _fused_batch_norm_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _, x, scale = inputs[:3]
    vector = (dtypes.float32, TensorShape([_channels(x, attrs)]))
    empty = (dtypes.float32, TensorShape([0]))
    return [(x.dtype, x.shape), vector, vector, empty, empty]


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: str | None = None, exponential_avg_factor: float = 1.0) -> tuple:
    """Batch normalization of a 4-D ``x`` over all but its channel axis, in one op; returns
    ``(y, batch_mean, batch_variance)`` (the running statistics at inference)."""
    _channel_axis(data_format)
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError(f"Both `mean` and `variance` must be a 1D tensor when `is_training` is "
                         f"False or `exponential_avg_factor` != 1.0. Received: `mean` {mean} and "
                         f"`variance` {variance}")
    x_t = convert_to_tensor(x, name="input")
    scale_t = convert_to_tensor(scale, name="scale")
    offset_t = convert_to_tensor(offset, name="offset")
    mean_t = constant([], dtype=dtypes.float32) if mean is None else convert_to_tensor(mean)
    var_t = constant([], dtype=dtypes.float32) if variance is None else convert_to_tensor(variance)
    attrs = {"epsilon": float(max(epsilon, _MIN_EPSILON)), "data_format": data_format,
             "is_training": bool(is_training),
             "exponential_avg_factor": float(exponential_avg_factor)}
    op = apply_op("FusedBatchNormV3", [x_t, scale_t, offset_t, mean_t, var_t], attrs,
                  name=name or "FusedBatchNormV3")
    return op.outputs[0], op.outputs[1], op.outputs[2]


@gradient("FusedBatchNormV3")
def _fused_batch_norm_grad(op: Operation, grad_y: Tensor, *unused: Tensor) -> list:
    x, scale = op.inputs[0], op.inputs[1]
    attrs = {key: op.get_attr(key) for key in ("epsilon", "data_format", "is_training")}
    if attrs["is_training"]:
        saved = [op.outputs[3], op.outputs[4], op.outputs[5]]
    else:
        saved = [op.inputs[3], op.inputs[4], op.inputs[4]]
    grads = apply_op("FusedBatchNormGradV3", [grad_y, x, scale, *saved], attrs).outputs
    return [grads[0], grads[1], grads[2], None, None]


def batch_norm_with_global_normalization(t: Any = None, m: Any = None, v: Any = None,
                                         beta: Any = None, gamma: Any = None,
                                         variance_epsilon: Any = None,
                                         scale_after_normalization: Any = None,
                                         name: str | None = None, input: Any = None,  # noqa: A002
                                         mean: Any = None, variance: Any = None) -> Tensor:
    """TF1's deprecated batch norm: tf.nn.batch_normalization with ``gamma`` applied only
    when ``scale_after_normalization``."""
    t = input if input is not None else t
    m = mean if mean is not None else m
    v = variance if variance is not None else v
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name)
