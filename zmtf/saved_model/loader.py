"""``tf.saved_model.loader.load``: load a TF1 SavedModel (TensorFlow's or zmtf's) into a session.

    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], path)
        sig = meta.signature_def["serving_default"]
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: batch})

Loading picks the MetaGraphDef whose tags equal ``tags``, imports its GraphDef, rebuilds the
collections (Variables from VariableDefs), restores the variables from
``variables/variables`` (TF's V2 checkpoint), runs the main op (or legacy init op) feeding
the asset paths, and returns the MetaGraphDef.

zmtf has no SaveV2/RestoreV2 kernels, so the Savers' nodes (everything in the scope of
``saver_def.restore_op_name``, "save/", and in any other scope holding checkpoint ops, like
the "save_1/" of a second MetaGraphDef) are not imported: their restore plan is read from
the GraphDef (which checkpoint key, and slice, each Assign restores) and the values are
assigned through ops zmtf builds in that same scope, ending in an op named as the saver_def's
restore op. Errors are TF's: OSError for a missing or unparsable saved_model.pb, RuntimeError
for a tag set that is not there; ValueError/NotFoundError (op not registered) from the
import; NotFoundError/DataLossError/InvalidArgumentError from the checkpoint.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, NotFoundError
from zmtf.framework.graph import Graph, Operation
from zmtf.interop.graph_def_io import import_graph_def
from zmtf.formats.meta_graph_proto import AssetFileDef, MetaGraphDef, SavedModel
from zmtf.ops.array_ops import placeholder
from zmtf.ops.control_flow_ops import group
from zmtf.formats.proto_message import merge_text
from zmtf.interop.saver_graph_def import RestoreStep, restore_plan, saver_scope, \
    saver_scopes, without_scopes
from zmtf.ops.variables import Variable
from zmtf.saved_model import constants
from zmtf.saved_model.collection_def import restore_collections
from zmtf.saved_model.signature_def_utils import load_op_from_signature_def
from zmtf.training.saver import checked_value
from zmtf.training.tensor_bundle import BundleReader

_logger = logging.getLogger(__name__)


def _saved_model_paths(export_dir: str) -> tuple[str, str]:
    return (os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB),
            os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT))


def maybe_saved_model_directory(export_dir: str | bytes | os.PathLike) -> bool:
    """True when ``export_dir`` holds a saved_model.pb or .pbtxt (not that it loads)."""
    return any(os.path.isfile(p) for p in _saved_model_paths(os.fsdecode(export_dir)))


contains_saved_model = maybe_saved_model_directory


def parse_saved_model(export_dir: str | bytes | os.PathLike) -> SavedModel:
    """The SavedModel proto of ``export_dir``; OSError when it is missing or unparsable."""
    export_dir = os.fsdecode(export_dir)
    pb_path, pbtxt_path = _saved_model_paths(export_dir)
    saved_model = SavedModel()
    for path, parse in ((pb_path, saved_model.ParseFromString),
                        (pbtxt_path, lambda data: merge_text(data.decode("utf-8"), saved_model))):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            try:
                parse(data)
            except (InvalidArgumentError, UnicodeDecodeError) as error:
                raise OSError(f"Cannot parse file {path}: {error}.") from error
            return saved_model
    raise OSError(f"SavedModel file does not exist at: {export_dir}{os.path.sep}"
                  f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|"
                  f"{constants.SAVED_MODEL_FILENAME_PB}}}")


def meta_graph_def_from_tags(saved_model: SavedModel, tags: Any) -> MetaGraphDef:
    """The MetaGraphDef whose tag set is ``set(tags)``; RuntimeError listing those there are."""
    available = []
    for meta in saved_model.meta_graphs:
        available.append(set(meta.meta_info_def.tags))
        if set(meta.meta_info_def.tags) == set(tags):
            return meta
    raise RuntimeError(f"MetaGraphDef associated with tags {str(tags).strip('[]')} could not be "
                       f"found in SavedModel, with available tags '{available}'. To inspect "
                       f"available tag-sets in the SavedModel, please use the SavedModel CLI: "
                       f"`saved_model_cli`.")


def _slice_of(value: np.ndarray, spec: str, where: str) -> np.ndarray:
    """The part of a whole saved tensor that a TF slice spec ("4 2 0,2:-") names."""
    *full, extents = spec.split(" ")
    try:
        full_shape = [int(d) for d in full]
        boxes = [None if e == "-" else tuple(int(x) for x in e.split(","))
                 for e in extents.split(":")]
    except ValueError:
        raise InvalidArgumentError(None, None, f"{where}: bad slice spec {spec!r:.80}") from None
    if full_shape != list(value.shape) or len(boxes) != value.ndim or any(
            b is not None and (len(b) != 2 or b[0] < 0 or b[1] < 0 or b[0] + b[1] > d)
            for b, d in zip(boxes, full_shape)):
        raise InvalidArgumentError(None, None, f"{where}: slice spec {spec!r:.80} does not fit "
                                               f"the saved shape {list(value.shape)}")
    return value[tuple(slice(None) if b is None else slice(b[0], b[0] + b[1]) for b in boxes)]


class _Restore:
    """Assigns the saved values to the imported variables, as the Saver's restore op did."""

    def __init__(self, graph: Graph, steps: list[RestoreStep], variables: dict[str, Variable],
                 prefix: str) -> None:
        self.steps, self.targets = steps, []
        for step in steps:
            name = prefix + step.variable
            variable = variables.get(name)
            if variable is None:
                try:
                    op = graph.get_operation_by_name(name)
                except (KeyError, ValueError):
                    raise InvalidArgumentError(None, None, f"the Saver restores '{step.variable}',"
                                                           f" which is not in the graph") from None
                if op.type != "Variable":
                    raise InvalidArgumentError(None, None, f"the Saver restores '{name}', a "
                                                           f"{op.type}, not a variable")
                ref = op.outputs[0]
                variable = Variable._from_graph(ref, op, ref, ref, False)
            self.targets.append(variable)

    def build(self, graph: Graph, scope: str) -> tuple[list[Any], Operation]:
        feeds, assigns = [], []
        with graph.name_scope(scope):
            for variable in self.targets:
                with graph.colocate_with(variable.op):
                    value = placeholder(variable.dtype.base_dtype, variable.shape,
                                        name="restore_value")
                    assigns.append(variable.assign(value))
                feeds.append(value)
            return feeds, group(*assigns, name="restore_all")

    def values(self, prefix: str) -> list[np.ndarray]:
        reader = BundleReader(prefix)
        out = []
        for step, variable in zip(self.steps, self.targets):
            if step.key not in reader.entries:
                raise NotFoundError(None, None, f"Restoring from checkpoint failed: Key "
                                                f"{step.key} not found in checkpoint {prefix} "
                                                f"(variable '{variable.op.name}')")
            value = reader.tensor(step.key)
            if step.shape_and_slice:
                value = _slice_of(value, step.shape_and_slice, f"{prefix}: {step.key}")
            out.append(checked_value(prefix, step.key, variable, {step.key: value}))
        return out


def _asset_feeds(graph: Graph, export_dir: str, meta: MetaGraphDef, prefix: str
                 ) -> dict[Any, bytes]:
    protos = list(meta.asset_file_def)
    if not protos and constants.ASSETS_KEY in meta.collection_def:
        protos = [AssetFileDef.FromString(item.value)
                  for item in meta.collection_def[constants.ASSETS_KEY].any_list.value]
    folder = os.path.join(export_dir, constants.ASSETS_DIRECTORY)
    return {graph.get_tensor_by_name(prefix + p.tensor_info.name):
            os.path.join(folder, p.filename).encode() for p in protos}


def _init_op(graph: Graph, meta: MetaGraphDef, import_scope: str | None, prefix: str) -> Any:
    if constants.INIT_OP_SIGNATURE_KEY in meta.signature_def:
        return load_op_from_signature_def(meta.signature_def[constants.INIT_OP_SIGNATURE_KEY],
                                          constants.INIT_OP_SIGNATURE_KEY, import_scope)
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if key in meta.collection_def:
            names = list(meta.collection_def[key].node_list.value)
            if len(names) != 1:
                raise RuntimeError(f"Expected exactly one SavedModel init op. Found "
                                   f"{len(names)}: {names}.")
            return graph.as_graph_element(prefix + names[0])
    return None


def load(sess: Any, tags: Any, export_dir: str | bytes | os.PathLike, import_scope: str | None = None,
         clear_devices: bool = False, **saver_kwargs: Any) -> MetaGraphDef:
    """Load the MetaGraphDef tagged ``tags`` into ``sess.graph``, restore its variables, run
    its main op; return the MetaGraphDef (see the module docstring). ``import_scope``
    prefixes every loaded name ("scope/x:0"), not the names in the returned proto."""
    if saver_kwargs:
        raise NotImplementedError(f"saved_model.loader.load: {sorted(saver_kwargs)} are not "
                                  f"built in zmtf (only clear_devices is)")
    export_dir = os.fsdecode(export_dir)
    meta = meta_graph_def_from_tags(parse_saved_model(export_dir), tags)
    graph: Graph = sess.graph
    prefix = f"{import_scope}/" if import_scope else ""
    graph_def, steps, scope = meta.graph_def, [], ""
    if meta.saver_def.restore_op_name:
        scope = saver_scope(meta.saver_def)
        steps = restore_plan(graph_def, meta.saver_def)
    graph_def = without_scopes(graph_def, saver_scopes(graph_def, meta.saver_def))
    if clear_devices:
        graph_def = type(graph_def).FromString(graph_def.SerializeToString())
        for node in graph_def.node:
            node.device = ""
    import_graph_def(graph, graph_def, None, None, prefix)
    variables = restore_collections(graph, dict(meta.collection_def), prefix)
    if steps:
        restore = _Restore(graph, steps, variables, prefix)
        feeds, restore_op = restore.build(graph, prefix + scope)
        values = restore.values(os.path.join(export_dir, constants.VARIABLES_DIRECTORY,
                                             constants.VARIABLES_FILENAME))
        sess.run(restore_op, feed_dict=dict(zip(feeds, values)))
    elif variables:
        _logger.info("The SavedModel has variables but no Saver; they were not restored.")
    else:
        _logger.info("The specified SavedModel has no variables; no checkpoints were restored.")
    init_op = _init_op(graph, meta, import_scope, prefix)
    if init_op is not None:
        sess.run([init_op], feed_dict=_asset_feeds(graph, export_dir, meta, prefix))
    return meta


__all__ = ["contains_saved_model", "load", "maybe_saved_model_directory", "parse_saved_model"]
