"""What a model receives when it is served: ``ServingInputReceiver`` and the two stock
``serving_input_receiver_fn`` builders (raw feature placeholders; serialized tf.Examples).

``Estimator.export_saved_model`` calls the receiver fn in the export graph: its ``features``
go to the model_fn and its ``receiver_tensors`` become the serving signatures' inputs.
Checks and messages are TF 1.15's (``estimator/export/export.py``).
"""

from __future__ import annotations

import collections
from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.ops.array_ops import placeholder
from zmtf.ops.parsing_ops import parse_example
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.framework.tensor_shape import TensorShape

SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
_SINGLE_TENSOR_DEFAULT_NAMES = {"feature": SINGLE_FEATURE_DEFAULT_NAME,
                                "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
                                "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME}


def _check_tensor(tensor: Any, name: str | None, error_label: str = "feature") -> None:
    if not isinstance(tensor, (Tensor, SparseTensor)):
        label = f" {name}" if name else ""
        raise ValueError(f"{error_label}{label} must be a Tensor or SparseTensor.")


def _wrap_and_check_input_tensors(tensors: Any, field_name: str) -> dict[str, Any]:
    """``tensors`` as a dict of string -> Tensor (one tensor goes under TF's default name)."""
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_SINGLE_TENSOR_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"{field_name} keys must be strings: {name}.")
        _check_tensor(tensor, name, error_label=field_name)
    return tensors


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """``features`` for the model_fn (always a dict), ``receiver_tensors`` fed by a client,
    and optional named alternatives, each one more serving signature."""

    def __new__(cls, features: Any, receiver_tensors: Any,
                receiver_tensors_alternatives: dict | None = None) -> ServingInputReceiver:
        features = _wrap_and_check_input_tensors(features, "feature")
        receiver_tensors = _wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError(f"receiver_tensors_alternatives must be a dict: "
                                 f"{receiver_tensors_alternatives}.")
            for name, alternative in receiver_tensors_alternatives.items():
                receiver_tensors_alternatives[name] = _wrap_and_check_input_tensors(
                    alternative, "receiver_tensors_alternative")
        return super().__new__(cls, features=features, receiver_tensors=receiver_tensors,
                               receiver_tensors_alternatives=receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """As ServingInputReceiver, for a model_fn whose ``features`` is one Tensor, not a dict."""

    def __new__(cls, features: Any, receiver_tensors: Any,
                receiver_tensors_alternatives: dict | None = None) -> TensorServingInputReceiver:
        if features is None:
            raise ValueError("features must be defined.")
        _check_tensor(features, None)
        receiver = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(cls, features=receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
                               receiver_tensors=receiver.receiver_tensors,
                               receiver_tensors_alternatives=receiver.receiver_tensors_alternatives)


def build_parsing_serving_input_receiver_fn(feature_spec: dict[str, Any],
                                            default_batch_size: int | None = None
                                            ) -> Callable[[], ServingInputReceiver]:
    """A receiver fn fed serialized tf.Examples (the string placeholder
    "input_example_tensor", signature input "examples"), parsed with ``feature_spec``."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        serialized = placeholder(dtypes.string, shape=[default_batch_size],
                                 name="input_example_tensor")
        return ServingInputReceiver(parse_example(serialized, feature_spec),
                                    {"examples": serialized})

    return serving_input_receiver_fn


def _placeholder_from_tensor(tensor: Any, default_batch_size: int | None) -> Tensor:
    """A placeholder of ``tensor``'s dtype and shape (batch size replaced), under its op name."""
    if isinstance(tensor, SparseTensor):
        raise NotImplementedError("build_raw_serving_input_receiver_fn: a SparseTensor feature "
                                  "is not built in zmtf; pass dense Tensors, or parse "
                                  "tf.Examples with build_parsing_serving_input_receiver_fn")
    shape = TensorShape([default_batch_size]).concatenate(tensor.get_shape()[1:])
    return placeholder(tensor.dtype, shape=shape, name=getattr(tensor.op, "name", None))


def build_raw_serving_input_receiver_fn(features: dict[str, Any],
                                        default_batch_size: int | None = None
                                        ) -> Callable[[], ServingInputReceiver]:
    """A receiver fn that feeds each feature directly: one placeholder per entry of
    ``features`` (a dict of string to Tensor: their dtypes, shapes and op names)."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        receiver_tensors = {name: _placeholder_from_tensor(t, default_batch_size)
                            for name, t in features.items()}
        return ServingInputReceiver(receiver_tensors, receiver_tensors)

    return serving_input_receiver_fn


__all__ = ["ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]
