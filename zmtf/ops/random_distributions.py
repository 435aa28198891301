"""TF1's other random ops: tf.multinomial / tf.random.categorical (class samples from
logits), tf.random_gamma and tf.random_poisson, seeded as the other random ops are."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import math_ops
from zmtf.ops.array_ops import _shape_tensor, _shape_value
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.sparse_tensor import constant_value
from zmtf.framework.tensor_shape import TensorShape


def _seeds(seed: int | None) -> dict[str, int]:
    graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
    return {"seed": graph_seed, "seed2": op_seed}


@op_def("Multinomial", stateful=True)
def _multinomial_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    logits, num_samples = inputs
    if logits.shape.ndims not in (None, 2):
        raise ValueError(f"logits should be a matrix [batch_size, num_classes], got shape "
                         f"{logits.shape}")
    known = constant_value(num_samples)
    batch = logits.shape[0] if logits.shape.ndims == 2 else None
    return [(dtypes.as_dtype(attrs["output_dtype"]),
             TensorShape([batch, None if known is None else int(known)]))]


def multinomial(logits: Any, num_samples: Any, seed: int | None = None, name: str | None = None,
                output_dtype: Any = dtypes.int64) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` [batch, classes] (unnormalized
    log-probabilities), an [batch, num_samples] int64 (or output_dtype) tensor."""
    x = convert_to_tensor(logits, name="logits")
    if not x.dtype.is_floating:
        raise TypeError(f"logits must be floats, got {x.dtype.name}")
    out = dtypes.as_dtype(output_dtype)
    if out not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"output_dtype must be int32 or int64, got {out.name}")
    count = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
    attrs = {"output_dtype": out.name, **_seeds(seed)}   # by name: attrs must serialize
    return apply_op("Multinomial", [x, count], attrs, name=name or "multinomial").outputs[0]


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """tf.random.categorical: tf.multinomial with ``dtype`` for the output."""
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical",
                       output_dtype=dtype or dtypes.int64)


@op_def("RandomGamma", "RandomPoissonV2", stateful=True)
def _shaped_by_parameter(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    shape, parameter = inputs
    target = _shape_value(shape)
    front = TensorShape(target) if target is not None else TensorShape(None)
    return [(dtypes.as_dtype(attrs["dtype"]), front.concatenate(parameter.shape))]


not_differentiable("Multinomial", "RandomGamma", "RandomPoissonV2")


def random_gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = dtypes.float32,
                 seed: int | None = None, name: str | None = None) -> Tensor:
    """Gamma(alpha, beta) samples of shape ``shape + broadcast(alpha, beta).shape``; beta is
    the rate (the samples are divided by it). Not differentiable in zmtf (TF's implicit
    reparameterization gradient for alpha is not built)."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"random_gamma: dtype must be a float type, got {dtype.name}")
    with get_default_graph().name_scope(name or "random_gamma"):
        a = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        b = None if beta is None else convert_to_tensor(beta, dtype=dtype, name="beta")
        both = a if b is None else a + math_ops.multiply(b, 0)  # broadcast alpha with beta
        sample = apply_op("RandomGamma", [_shape_tensor(shape), both],
                          {"dtype": dtype.name, **_seeds(seed)}).outputs[0]
        return sample if b is None else sample / b


def random_poisson(lam: Any, shape: Any, dtype: Any = dtypes.float32, seed: int | None = None,
                   name: str | None = None) -> Tensor:
    """Poisson(lam) samples of shape ``shape + lam.shape``, in ``dtype``."""
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype in (dtypes.int32, dtypes.int64)):
        raise TypeError(f"random_poisson: dtype must be a float, int32 or int64, got {dtype.name}")
    rate = convert_to_tensor(lam, name="lam")
    if not rate.dtype.is_floating:
        rate = math_ops.cast(rate, dtypes.float32)
    return apply_op("RandomPoissonV2", [_shape_tensor(shape), rate],
                    {"dtype": dtype.name, **_seeds(seed)}, name=name or "random_poisson").outputs[0]
