"""The signatures and folder names of an Estimator export, as TF builds them
(``saved_model/model_utils/export_utils.py``).

Each ExportOutput becomes one SignatureDef over the receiver tensors (and one more per
receiver alternative, keyed ``"<alternative>:<output>"``). A signature TF Serving could not
serve (a Classify output fed a float tensor, an output that needs an unfed placeholder) is
left out and logged, as TF does. Exports go to ``<base>/<seconds since epoch>``.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from zmtf.estimator.export.export_output import ExportOutput, PredictOutput
from zmtf.estimator.export.serving_input import SINGLE_RECEIVER_DEFAULT_NAME
from zmtf.framework.graph import Operation, Tensor
from zmtf.formats.meta_graph_proto import SignatureDef
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.saved_model import signature_constants as sc
from zmtf.saved_model.signature_def_utils import is_valid_signature
from zmtf.saved_model.utils import get_tensor_from_tensor_info

log = logging.getLogger("tensorflow")
MAX_DIRECTORY_CREATION_ATTEMPTS = 10
_FRIENDLY_METHOD_NAMES = {sc.CLASSIFY_METHOD_NAME: "Classify", sc.REGRESS_METHOD_NAME: "Regress",
                          sc.PREDICT_METHOD_NAME: "Predict",
                          sc.SUPERVISED_TRAIN_METHOD_NAME: "Train",
                          sc.SUPERVISED_EVAL_METHOD_NAME: "Eval"}


def _plain(tensors: Any) -> list[Tensor]:
    out: list[Tensor] = []
    for t in tensors:
        out.extend([t.indices, t.values, t.dense_shape] if isinstance(t, SparseTensor) else [t])
    return out


def _path(from_op: Operation, outputs: list[Tensor], sources: list[Tensor]) -> str:
    """One path from an output back to ``from_op``, in TF's ``op (Type) <- ...`` form."""
    finals = [t.op for t in outputs]
    visited = {t.op for t in sources}
    consumer: dict[Operation, Operation] = {}
    to_visit = list(finals)
    while to_visit:
        op = to_visit.pop()
        if op in visited:
            continue
        visited.add(op)
        if op is from_op:
            path = [op]
            while path[-1] not in finals:
                path.append(consumer[path[-1]])
            return " <- ".join(f"{x.name} ({x.type})" for x in reversed(path))
        for producer in [t.op for t in op.inputs] + list(op.control_inputs):
            if producer not in visited:
                consumer[producer] = op
                to_visit.append(producer)
    return "??"


def _ensure_servable(input_tensors: Any, output_infos: Any) -> None:
    """ValueError when an output needs a placeholder that is not one of the inputs."""
    inputs = _plain(input_tensors)
    graph = inputs[0].graph
    outputs = _plain([get_tensor_from_tensor_info(info, graph=graph)
                      for info in output_infos.values()])
    fed = {id(t) for t in inputs}
    seen: set[int] = set()
    stack = [t.op for t in outputs if id(t) not in fed]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.type == "Placeholder" and not all(id(t) in fed for t in op.outputs):
            raise ValueError(
                f"The signature's input tensors {[t.name for t in inputs]} are insufficient to "
                f"compute its output keys {list(output_infos)} (respectively, tensors "
                f"{[t.name for t in outputs]}) because of the dependency on `{op.name}` which "
                f"is not given as a signature input, as illustrated by the following "
                f"dependency path: {_path(op, outputs, inputs)}")
        stack.extend(t.op for t in op.inputs if id(t) not in fed)


def _signature_or_reason(export_output: ExportOutput, receiver: dict[str, Any]
                         ) -> tuple[SignatureDef | None, str]:
    try:
        signature = export_output.as_signature_def(receiver)
        _ensure_servable(receiver.values(), signature.outputs)
        return signature, ""
    except ValueError as error:
        return None, str(error)


def build_all_signature_defs(receiver_tensors: Any, export_outputs: dict[str, ExportOutput],
                             receiver_tensors_alternatives: dict | None = None,
                             serving_only: bool = True) -> dict[str, SignatureDef]:
    """A SignatureDef per export output and receiver (see the module docstring)."""
    if not isinstance(receiver_tensors, dict):
        receiver_tensors = {SINGLE_RECEIVER_DEFAULT_NAME: receiver_tensors}
    if export_outputs is None or not isinstance(export_outputs, dict):
        raise ValueError(f"`export_outputs` must be a dict. Received {export_outputs} with type "
                         f"{type(export_outputs).__name__}.")
    receivers = [("", receiver_tensors)] + [
        (f"{name or 'None'}:", alt if isinstance(alt, dict) else {SINGLE_RECEIVER_DEFAULT_NAME: alt})
        for name, alt in (receiver_tensors_alternatives or {}).items()]
    signatures: dict[str, SignatureDef] = {}
    excluded: dict[str, str] = {}
    for prefix, receiver in receivers:
        for output_key, export_output in export_outputs.items():
            name = f"{prefix}{output_key or 'None'}"
            signature, reason = _signature_or_reason(export_output, receiver)
            if signature is None:
                excluded[name] = reason
            else:
                signatures[name] = signature
    _log_signature_report(signatures, excluded)
    if serving_only:
        signatures = {k: v for k, v in signatures.items() if is_valid_signature(v)}
    return signatures


def _log_signature_report(signatures: dict[str, SignatureDef], excluded: dict[str, str]) -> None:
    by_method: dict[str, list[str]] = {method: [] for method in _FRIENDLY_METHOD_NAMES}
    for name, signature in signatures.items():
        by_method.setdefault(signature.method_name, []).append(name)
    for method, names in by_method.items():
        log.info("Signatures INCLUDED in export for %s: %s",
                 _FRIENDLY_METHOD_NAMES.get(method, method), names or "None")
    if excluded:
        log.info("Signatures EXCLUDED from export because they cannot be be served via "
                 "TensorFlow Serving APIs:")
        for name, reason in excluded.items():
            log.info("'%s' : %s", name, reason)
    if not signatures:
        log.warning("Export includes no signatures!")
    elif sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in signatures:
        log.warning("Export includes no default signature!")


def get_export_outputs(export_outputs: Any, predictions: Any) -> dict[str, ExportOutput]:
    """The spec's export_outputs, checked; by default a PredictOutput of the predictions.
    A single output is also served as "serving_default"; several need one under that key."""
    if export_outputs is None:
        export_outputs = {sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, received: {export_outputs}.")
    if not all(isinstance(v, ExportOutput) for v in export_outputs.values()):
        raise TypeError(f"Values in `export_outputs` must be ExportOutput objects, received: "
                        f"{export_outputs}.")
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        (value,) = export_outputs.values()
        export_outputs.setdefault(sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY, value)
    elif sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in export_outputs:
        raise ValueError("Multiple `export_outputs` were provided, but none of them are specified "
                         "as the default. Use`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` "
                         "to specify a default.")
    return export_outputs


def get_timestamped_export_dir(export_dir_base: Any) -> bytes:
    """``<base>/<seconds since epoch>`` that does not exist yet (waits a second and retries
    when it does, as TF); not created here."""
    base = os.fsencode(export_dir_base)
    for attempt in range(1, MAX_DIRECTORY_CREATION_ATTEMPTS + 1):
        result = os.path.join(base, str(int(time.time())).encode())
        if not os.path.exists(result):
            return result
        time.sleep(1)
        log.warning("Directory %s already exists; retrying (attempt %d/%d)", os.fsdecode(result),
                    attempt, MAX_DIRECTORY_CREATION_ATTEMPTS)
    raise RuntimeError(f"Failed to obtain a unique export directory name after "
                       f"{MAX_DIRECTORY_CREATION_ATTEMPTS} attempts.")


def get_temp_export_dir(timestamped_export_dir: Any) -> bytes:
    """The sibling ``temp-<timestamp>`` an export is written to before its rename (TF
    Serving ignores folders whose names are not integers)."""
    dirname, basename = os.path.split(os.fsencode(timestamped_export_dir))
    return os.path.join(dirname, b"temp-" + basename)


__all__ = ["build_all_signature_defs", "get_export_outputs", "get_temp_export_dir",
           "get_timestamped_export_dir"]
