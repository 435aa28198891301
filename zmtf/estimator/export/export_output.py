"""``tf.estimator.export.PredictOutput`` & co.: what a model_fn serves, as a SignatureDef.

A model_fn puts them in ``EstimatorSpec(export_outputs={key: output})``; at export each
becomes the signature ``key`` over the serving input receiver's tensors. Checks and messages
are TF's (``saved_model/model_utils/export_output.py``).
"""

from __future__ import annotations

import abc
from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.formats.meta_graph_proto import SignatureDef
from zmtf.saved_model import signature_def_utils

_SINGLE_STRING_INPUT = (
    "{} signatures can only accept a single tensor input of type tf.string. Please check to "
    "make sure that you have structured the serving_input_receiver_fn so that it creates a "
    "single string placeholder. If your model function expects multiple inputs, then use "
    "`tf.io.parse_example()` to parse the string into multiple tensors.\n Received: {}")


class ExportOutput(abc.ABC):
    """One output of a servable model (typically one head)."""

    _SEPARATOR_CHAR = "/"

    @abc.abstractmethod
    def as_signature_def(self, receiver_tensors: dict[str, Any]) -> SignatureDef:
        """The SignatureDef of these outputs fed from ``receiver_tensors``."""

    def _check_output_key(self, key: Any, error_label: str) -> str:
        if isinstance(key, tuple):   # a multi-head model's key
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key}.")
        return key

    def _wrap_and_check_outputs(self, outputs: Any, single_output_default_name: str,
                                error_label: str | None = None) -> dict[str, Tensor]:
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        error_name = error_label or single_output_default_name
        checked = {}
        for key, value in outputs.items():
            key = self._check_output_key(key, error_name)
            if not isinstance(value, Tensor):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


def _single_string_input(kind: str, receiver_tensors: dict[str, Any]) -> Any:
    if len(receiver_tensors) != 1:
        raise ValueError(_SINGLE_STRING_INPUT.format(kind, receiver_tensors))
    (_, examples), = receiver_tensors.items()
    if dtypes.as_dtype(examples.dtype) != dtypes.string:
        raise ValueError(_SINGLE_STRING_INPUT.format(kind, receiver_tensors))
    return examples


class ClassificationOutput(ExportOutput):
    """Float ``scores`` and/or string ``classes`` of serialized tf.Examples (Classify API)."""

    def __init__(self, scores: Tensor | None = None, classes: Tensor | None = None) -> None:
        if scores is not None and not (isinstance(scores, Tensor) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (isinstance(classes, Tensor)
                                        and dtypes.as_dtype(classes.dtype) == dtypes.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("Cannot create a ClassificationOutput with empty arguments. At "
                             "least one of `scores` and `classes` must be defined.")
        self._scores, self._classes = scores, classes

    @property
    def scores(self) -> Tensor | None:
        return self._scores

    @property
    def classes(self) -> Tensor | None:
        return self._classes

    def as_signature_def(self, receiver_tensors: dict[str, Any]) -> SignatureDef:
        examples = _single_string_input("Classification", receiver_tensors)
        return signature_def_utils.classification_signature_def(examples, self.classes,
                                                                self.scores)


class RegressionOutput(ExportOutput):
    """One float prediction per serialized tf.Example (Regress API)."""

    def __init__(self, value: Tensor) -> None:
        if not (isinstance(value, Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    @property
    def value(self) -> Tensor:
        return self._value

    def as_signature_def(self, receiver_tensors: dict[str, Any]) -> SignatureDef:
        examples = _single_string_input("Regression", receiver_tensors)
        return signature_def_utils.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """Any named output tensors, fed from any receiver tensors (Predict API)."""

    _SINGLE_OUTPUT_DEFAULT_NAME = "output"

    def __init__(self, outputs: Any) -> None:
        self._outputs = self._wrap_and_check_outputs(outputs, self._SINGLE_OUTPUT_DEFAULT_NAME,
                                                     error_label="Prediction")

    @property
    def outputs(self) -> dict[str, Tensor]:
        return self._outputs

    def as_signature_def(self, receiver_tensors: dict[str, Any]) -> SignatureDef:
        return signature_def_utils.predict_signature_def(receiver_tensors, self.outputs)


__all__ = ["ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput"]
