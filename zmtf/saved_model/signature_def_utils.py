"""``tf.saved_model.signature_def_utils``: build and check the SignatureDefs TF Serving serves.

    sig = tf.saved_model.signature_def_utils.predict_signature_def(
        inputs={"x": x}, outputs={"y": y})             # method "tensorflow/serving/predict"
    tf.saved_model.signature_def_utils.is_valid_signature(sig)   # True

Messages and error classes follow TF's (ValueError for arguments TF Serving cannot serve).
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Tensor
from zmtf.formats.graph_def_proto import DATA_TYPES, make_tensor_proto
from zmtf.formats.meta_graph_proto import SignatureDef, TensorInfo
from zmtf.saved_model import signature_constants as sc
from zmtf.saved_model.utils import build_tensor_info, build_tensor_info_from_op, \
    get_element_from_tensor_info

_DT_STRING, _DT_FLOAT = DATA_TYPES["string"], DATA_TYPES["float32"]


def build_signature_def(inputs: dict[str, TensorInfo] | None = None,
                        outputs: dict[str, TensorInfo] | None = None,
                        method_name: str | None = None, defaults: dict[str, Any] | None = None
                        ) -> SignatureDef:
    """A SignatureDef of TensorInfos (``build_tensor_info``) and a method name; ``defaults``
    maps input names to Const tensors whose values become the signature's defaults."""
    signature_def = SignatureDef()
    for key, info in (inputs or {}).items():
        signature_def.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        signature_def.outputs[key].CopyFrom(info)
    if method_name is not None:
        signature_def.method_name = method_name
    for key, default in (defaults or {}).items():
        if not isinstance(default, Tensor) or default.op.type != "Const":
            raise ValueError(f"Unable to convert object {default} of type {type(default)} to "
                             f"TensorProto.")
        signature_def.defaults[key].CopyFrom(make_tensor_proto(default.op.attrs["value"]))
    return signature_def


def predict_signature_def(inputs: dict[str, Any], outputs: dict[str, Any]) -> SignatureDef:
    """A Predict signature: any named input and output tensors."""
    if inputs is None or not inputs:
        raise ValueError("Prediction `inputs` cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction `outputs` cannot be None or empty.")
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()},
                               {k: build_tensor_info(t) for k, t in outputs.items()},
                               sc.PREDICT_METHOD_NAME)


def _check_examples(examples: Any, kind: str, wording: str) -> None:
    if examples is None:
        raise ValueError(f"{kind} `examples` cannot be None.")
    if not isinstance(examples, Tensor):
        raise ValueError(f"{wording} Found `examples` of type {type(examples)}.")


def _string_input(examples: Tensor, kind: str, found: str) -> TensorInfo:
    info = build_tensor_info(examples)
    if info.dtype != _DT_STRING:
        raise ValueError(f"{kind} input tensors must be of type string. Found tensors {found} "
                         f"{info.dtype}")
    return info


def regression_signature_def(examples: Tensor, predictions: Tensor) -> SignatureDef:
    """A Regress signature: serialized tf.Examples (string) in, float predictions out."""
    _check_examples(examples, "Regression", "Expected regression `examples` to be of type "
                                            "Tensor.")
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    info = _string_input(examples, "Regression", "with type")
    output = build_tensor_info(predictions)
    if output.dtype != _DT_FLOAT:
        raise ValueError(f"Regression output tensors must be of type float. Found tensors with "
                         f"type {output.dtype}.")
    return build_signature_def({sc.REGRESS_INPUTS: info}, {sc.REGRESS_OUTPUTS: output},
                               sc.REGRESS_METHOD_NAME)


def classification_signature_def(examples: Tensor, classes: Tensor | None,
                                 scores: Tensor | None) -> SignatureDef:
    """A Classify signature: serialized tf.Examples in; string classes and/or float scores."""
    _check_examples(examples, "Classification", "Classification `examples` must be a string "
                                                "Tensor.")
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    info = _string_input(examples, "Classification", "of type")
    outputs = {}
    if classes is not None:
        outputs[sc.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
        if outputs[sc.CLASSIFY_OUTPUT_CLASSES].dtype != _DT_STRING:
            raise ValueError(f"Classification classes must be of type string Tensor. Found "
                             f"tensors of type {outputs[sc.CLASSIFY_OUTPUT_CLASSES].dtype}.`")
    if scores is not None:
        outputs[sc.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
        if outputs[sc.CLASSIFY_OUTPUT_SCORES].dtype != _DT_FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
    return build_signature_def({sc.CLASSIFY_INPUTS: info}, outputs, sc.CLASSIFY_METHOD_NAME)


def _supervised(method_name: str, inputs: Any, loss: Any, predictions: Any, metrics: Any
                ) -> SignatureDef:
    if inputs is None or not inputs:
        raise ValueError(f"{method_name} `inputs` cannot be None or empty.")
    outputs = {}
    for output_set in (loss, predictions, metrics):
        outputs.update({k: build_tensor_info(t) for k, t in (output_set or {}).items()})
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()}, outputs,
                               method_name)


def supervised_train_signature_def(inputs: Any, loss: Any, predictions: Any = None,
                                   metrics: Any = None) -> SignatureDef:
    return _supervised(sc.SUPERVISED_TRAIN_METHOD_NAME, inputs, loss, predictions, metrics)


def supervised_eval_signature_def(inputs: Any, loss: Any, predictions: Any = None,
                                  metrics: Any = None) -> SignatureDef:
    return _supervised(sc.SUPERVISED_EVAL_METHOD_NAME, inputs, loss, predictions, metrics)


def _is_valid_predict(sig: SignatureDef) -> bool:
    return sig.method_name == sc.PREDICT_METHOD_NAME and bool(sig.inputs) and bool(sig.outputs)


def _is_valid_regression(sig: SignatureDef) -> bool:
    return (sig.method_name == sc.REGRESS_METHOD_NAME
            and set(sig.inputs) == {sc.REGRESS_INPUTS}
            and sig.inputs[sc.REGRESS_INPUTS].dtype == _DT_STRING
            and set(sig.outputs) == {sc.REGRESS_OUTPUTS}
            and sig.outputs[sc.REGRESS_OUTPUTS].dtype == _DT_FLOAT)


def _is_valid_classification(sig: SignatureDef) -> bool:
    wanted = {sc.CLASSIFY_OUTPUT_CLASSES: _DT_STRING, sc.CLASSIFY_OUTPUT_SCORES: _DT_FLOAT}
    return (sig.method_name == sc.CLASSIFY_METHOD_NAME
            and set(sig.inputs) == {sc.CLASSIFY_INPUTS}
            and sig.inputs[sc.CLASSIFY_INPUTS].dtype == _DT_STRING
            and bool(sig.outputs) and not set(sig.outputs) - set(wanted)
            and all(sig.outputs[k].dtype == dtype for k, dtype in wanted.items()
                    if k in sig.outputs))


def is_valid_signature(signature_def: SignatureDef | None) -> bool:
    """True when TF Serving can serve ``signature_def`` (Classify, Regress or Predict)."""
    if signature_def is None:
        return False
    return (_is_valid_classification(signature_def) or _is_valid_regression(signature_def)
            or _is_valid_predict(signature_def))


def op_signature_def(op: Any, key: str) -> SignatureDef:
    """A signature whose one output names an op (how TF2's builder stores its init op)."""
    return build_signature_def(outputs={key: build_tensor_info_from_op(op)})


def load_op_from_signature_def(signature_def: SignatureDef, key: str,
                               import_scope: str | None = None) -> Any:
    """The op that ``op_signature_def(op, key)`` names, in the default graph."""
    from zmtf.framework.errors import NotFoundError

    try:
        return get_element_from_tensor_info(signature_def.outputs[key],
                                            import_scope=import_scope)
    except (KeyError, ValueError) as error:
        raise NotFoundError(None, None, f'The key "{key}" could not be found in the graph: '
                                        f'{error}') from None


__all__ = ["build_signature_def", "classification_signature_def", "is_valid_signature",
           "load_op_from_signature_def", "op_signature_def", "predict_signature_def",
           "regression_signature_def", "supervised_eval_signature_def",
           "supervised_train_signature_def"]
