"""``Estimator.export_saved_model``: the PREDICT graph of a model_fn, fed by a serving input
receiver, with a checkpoint's variables, written as a TF1 SavedModel for TF Serving.

As TF 1.15: the receiver fn runs in a fresh graph (global step and random seed as in
training), the model_fn gets its features in PREDICT mode, the spec's ``export_outputs``
(default: a PredictOutput of the predictions) become the signatures, the checkpoint is
restored into a session with the spec's Saver (or a new sharded one) and the SavedModel is
written under the "serve" tag to ``<base>/temp-<timestamp>``, then renamed to
``<base>/<timestamp>``; the path is returned as bytes.
"""

from __future__ import annotations

import logging
import os
import shutil
from typing import Any, Callable

from zmtf.client.monitored_session import Scaffold
from zmtf.client.session import Session
from zmtf.estimator.export.export_utils import build_all_signature_defs, get_export_outputs, \
    get_temp_export_dir, get_timestamped_export_dir
from zmtf.estimator.mode_keys import ModeKeys
from zmtf.framework.errors import NotFoundError
from zmtf.framework.graph import Graph
from zmtf.saved_model.builder import SavedModelBuilder
from zmtf.saved_model.tag_constants import SERVING
from zmtf.training.saver import Saver

log = logging.getLogger("tensorflow")


def _copy_assets_extra(export_dir: bytes, assets_extra: dict[str, str]) -> None:
    """Copy each source file to ``assets.extra/<relative destination>``."""
    base = os.path.join(export_dir, b"assets.extra")
    for destination, source in assets_extra.items():
        target = os.path.join(base, os.fsencode(destination))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.fsencode(source), target)


def _restore(session: Session, saver: Any, checkpoint_path: str) -> None:
    try:
        saver.restore(session, checkpoint_path)
    except NotFoundError as error:
        raise ValueError(
            "Could not load all requested variables from checkpoint. Please make sure your "
            "model_fn does not expect variables that were not saved in the checkpoint.\n\n"
            f"Encountered error with mode `{ModeKeys.PREDICT}` while restoring checkpoint "
            f"from: `{checkpoint_path}`. Full Traceback:\n\n{error}") from None


def _add_predict_meta_graph(estimator: Any, builder: SavedModelBuilder,
                            serving_input_receiver_fn: Callable[[], Any],
                            checkpoint_path: str) -> None:
    with Graph().as_default() as graph:
        estimator._start_graph(graph)
        receiver = serving_input_receiver_fn()
        spec = estimator._call_model_fn(receiver.features, getattr(receiver, "labels", None),
                                        ModeKeys.PREDICT)
        export_outputs = get_export_outputs(spec.export_outputs, spec.predictions)
        signature_def_map = build_all_signature_defs(
            receiver.receiver_tensors, export_outputs,
            getattr(receiver, "receiver_tensors_alternatives", None), serving_only=True)
        with Session(graph=graph, config=estimator._config.session_config) as session:
            local_init_op = spec.scaffold.local_init_op
            if local_init_op is None:
                local_init_op = Scaffold.default_local_init_op()
            saver = spec.scaffold.saver or Saver(sharded=True)
            _restore(session, saver, checkpoint_path)
            builder.add_meta_graph_and_variables(
                session, [SERVING], signature_def_map=signature_def_map,
                assets_collection=graph.get_collection("asset_filepaths"),
                main_op=local_init_op, saver=saver, strip_default_attrs=True)


def export_saved_model(estimator: Any, export_dir_base: Any,
                       serving_input_receiver_fn: Callable[[], Any],
                       assets_extra: dict[str, str] | None = None, as_text: bool = False,
                       checkpoint_path: str | None = None) -> bytes:
    """Write the SavedModel (see the module docstring); its folder's path, as bytes."""
    if not serving_input_receiver_fn:
        raise ValueError("An input_receiver_fn must be defined.")
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    if not checkpoint_path:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    export_dir = get_timestamped_export_dir(export_dir_base)
    temp_export_dir = get_temp_export_dir(export_dir)
    builder = SavedModelBuilder(os.fsdecode(temp_export_dir))
    _add_predict_meta_graph(estimator, builder, serving_input_receiver_fn, checkpoint_path)
    builder.save(as_text)
    try:
        if assets_extra:
            _copy_assets_extra(temp_export_dir, assets_extra)
        os.rename(temp_export_dir, export_dir)
    except BaseException:
        shutil.rmtree(temp_export_dir, ignore_errors=True)
        raise
    return export_dir


__all__ = ["export_saved_model"]
